"""Where a run's files live: a local folder, or object storage (``s3://``, ``gs://``) through pyarrow's
filesystems, with the same rule everywhere — a file is visible whole or not at all.

- Local: written under a hidden temporary name in its folder, fsynced, renamed into place.
- Object stores have no rename. A file is serialized completely in memory first and sent as one
  upload; S3 and GCS make an object visible only when its upload completes, so an interrupted write
  leaves nothing behind (never half a shard). Files too big for memory (items, labels) are uploaded
  from a finished local copy, and ``_MANIFEST.json``, written last, names every file of the run
  with its size: readers trust what the manifest lists.

Credentials come from each provider's standard chain (AWS: environment, profile, instance role;
GCS: application default credentials). ``endpoint`` points S3 at a compatible server (MinIO, Ceph,
a test server); it is also read from ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from biaseval.errors import ConfigError, DiskFullError, OutputError, RunDirError
from biaseval.urls import check_url

REMOTE_SCHEMES = ("s3", "gs", "gcs")
MANIFEST = "_MANIFEST.json"
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EISDIR)


def os_error(exc: OSError, where: str | Path) -> OutputError | None:
    """A failed write as an error naming ``where``: DiskFullError (exit 3) when no space is left,
    OutputError (exit 2) when the place cannot be written; None for any other failure. pyarrow's
    errors carry the errno in their text only."""
    code = exc.errno
    if code is None and (found := re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)):
        code = int(found.group(1))
    if code in DISK_FULL:
        what = "the disk quota is used up" if code == errno.EDQUOT else "the disk is full"
        return DiskFullError(f"{where}: no space left to write it ({what}); free some space and rerun "
                             f"the same command (finished work is kept)")
    if code in NOT_WRITABLE:
        culprit = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(where) else ""
        return OutputError(f"{where}: cannot be written: {os.strerror(code)}{culprit}")
    return None


@contextmanager
def writing(where: str | Path):
    """Writes in this block that fail for want of space or permission raise ``os_error``'s error."""
    try:
        yield
    except OSError as exc:
        error = os_error(exc, where)
        if error is None:
            raise
        raise error from exc


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """A local file, whole or not at all: written to a hidden temporary name, fsynced, renamed.
    ``durable`` False: not fsynced (a file whose loss in a power cut is harmless, not worth the wait)."""
    tmp = _tmp_name(path)
    with writing(path):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fh:
                fh.write(data)
                if durable:
                    fh.flush()
                    os.fsync(fh.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_parquet_atomic(table: pa.Table, path: Path, metadata: dict[bytes, bytes] | None = None) -> None:
    """A local Parquet file, streamed to its temporary name (no copy in memory), then renamed."""
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    tmp = _tmp_name(path)
    with writing(path):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fh:
                pq.write_table(table, fh, compression="zstd", write_page_checksum=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


def parquet_bytes(table: pa.Table, metadata: dict[bytes, bytes] | None = None) -> bytes:
    """A Parquet file in memory, as every run file is written (zstd, page checksums), ``metadata``
    added to its schema's."""
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", write_page_checksum=True)
    return buffer.getvalue()


def is_remote(location: str | Path) -> bool:
    return urlparse(str(location)).scheme in REMOTE_SCHEMES


@dataclass(frozen=True)
class StoreOptions:
    """How to reach an object store (all optional; credentials never go here)."""

    endpoint: str | None = None  # S3-compatible server, e.g. http://127.0.0.1:9000
    region: str | None = None
    allow_insecure_http: bool = False  # an http:// endpoint that is not a loopback address (biaseval.urls)

    @classmethod
    def from_env(cls) -> "StoreOptions":
        return cls(endpoint=os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None,
                   region=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None)

    @classmethod
    def of(cls, config) -> "StoreOptions":
        """A run config's ``output:`` settings (``RunConfig.output``)."""
        return cls(endpoint=config.output.endpoint, region=config.output.region,
                   allow_insecure_http=config.output.allow_insecure_http)

    def merged(self, other: "StoreOptions | None") -> "StoreOptions":
        if other is None:
            return self
        return StoreOptions(endpoint=other.endpoint or self.endpoint, region=other.region or self.region,
                            allow_insecure_http=other.allow_insecure_http or self.allow_insecure_http)


@dataclass
class Folder:
    """A folder on some filesystem: ``location`` is a local path or a URI."""

    location: str
    options: StoreOptions = field(default_factory=StoreOptions)

    def __post_init__(self) -> None:
        self.location = str(self.location).rstrip("/") or "/"
        self.remote = is_remote(self.location)
        if self.remote:
            self.options = StoreOptions.from_env().merged(self.options)
            self.fs, self.base = _remote_fs(self.location, self.options)
        else:
            self.fs, self.base = pafs.LocalFileSystem(), str(Path(self.location).resolve())

    # --- names ---------------------------------------------------------------------------------
    def path(self, rel: str) -> str:
        """The filesystem path of ``rel`` (for pyarrow calls with ``filesystem=self.fs``)."""
        return f"{self.base}/{rel}" if rel else self.base

    def uri(self, rel: str) -> str:
        return f"{self.location}/{rel}" if rel else self.location

    def child(self, rel: str) -> "Folder":
        return Folder(self.uri(rel), self.options)

    # --- reading -------------------------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        return self.fs.get_file_info(self.path(rel)).type == pafs.FileType.File

    def size(self, rel: str) -> int | None:
        info = self.fs.get_file_info(self.path(rel))
        return info.size if info.type == pafs.FileType.File else None

    def read_bytes(self, rel: str) -> bytes:
        with self.fs.open_input_stream(self.path(rel)) as fh:
            return fh.read()

    def read_text(self, rel: str) -> str:
        return self.read_bytes(rel).decode("utf-8")

    def parquet_metadata(self, rel: str) -> pq.FileMetaData:
        return pq.read_metadata(self.path(rel), filesystem=self.fs)

    def read_table(self, rels: list[str], columns: list[str] | None = None, *, verify: bool = False) -> pa.Table:
        """Parquet files as one table; ``verify``: check every page against the CRC written with it
        (files are written with page checksums), so a flipped byte is an error, not a wrong value."""
        return pq.read_table([self.path(r) for r in rels], filesystem=self.fs, columns=columns, partitioning=None,
                             page_checksum_verification=verify)

    def read_frame(self, rels: list[str], columns: list[str] | None = None):
        """Parquet files as one polars frame (polars' own reader for local files: the fastest here)."""
        import polars as pl

        if not self.remote:
            return pl.read_parquet([self.path(r) for r in rels], columns=columns, hive_partitioning=False)
        return pl.from_arrow(self.read_table(rels, columns))

    def files(self, prefix: str = "") -> list[str]:
        """Relative names of every file under ``prefix`` (hidden temporaries excluded)."""
        selector = pafs.FileSelector(self.path(prefix), recursive=True, allow_not_found=True)
        start = len(self.base) + 1
        return sorted(info.path[start:] for info in self.fs.get_file_info(selector)
                      if info.type == pafs.FileType.File and not Path(info.path).name.startswith("."))

    # --- writing (whole files only) ------------------------------------------------------------
    def write_bytes(self, rel: str, data: bytes, *, durable: bool = True) -> None:
        """``durable``: fsynced before it is renamed into place (local files; an upload is stored when done)."""
        if not self.remote:
            write_bytes_atomic(Path(self.path(rel)), data, durable=durable)
            return
        with self.fs.open_output_stream(self.path(rel)) as out:  # one upload of the finished bytes
            out.write(data)

    def write_text(self, rel: str, text: str) -> None:
        self.write_bytes(rel, text.encode("utf-8"))

    def write_parquet(self, rel: str, table: pa.Table, metadata: dict[bytes, bytes] | None = None) -> None:
        if not self.remote:
            write_parquet_atomic(table, Path(self.path(rel)), metadata)
            return
        self.write_bytes(rel, parquet_bytes(table, metadata))

    def upload(self, local: Path, rel: str) -> None:
        """Copy a finished local file to ``rel`` of this remote store (visible once its upload completes)."""
        pafs.copy_files(str(local), self.path(rel), source_filesystem=pafs.LocalFileSystem(),
                        destination_filesystem=self.fs)

    def download(self, rel: str, local: Path) -> None:
        tmp = local.with_name(f".{local.name}.{uuid.uuid4().hex[:12]}.tmp")
        with writing(local):
            try:
                local.parent.mkdir(parents=True, exist_ok=True)
                pafs.copy_files(self.path(rel), str(tmp), source_filesystem=self.fs,
                                destination_filesystem=pafs.LocalFileSystem())
                os.replace(tmp, local)
            finally:
                tmp.unlink(missing_ok=True)

    def delete(self, rel: str) -> None:
        self.fs.delete_file(self.path(rel))

    # --- reaching an object store --------------------------------------------------------------
    def check(self) -> None:
        """Fail early, naming the URL, when this remote store cannot be reached or its bucket does
        not exist (one request; whether it can be written shows on the first write)."""
        if not self.remote:
            return
        bucket = self.base.split("/", 1)[0]
        try:
            info = self.fs.get_file_info(bucket)
        except OSError as exc:
            if _kind(exc) == "denied":
                return  # allowed into a prefix but not to look at the bucket: the first write tells
            raise self.failure(exc) from None
        if info.type == pafs.FileType.NotFound:
            raise OutputError(f"{self.location}: the bucket {bucket!r} does not exist{self._at()}; "
                              f"create it, or correct the URI")

    def failure(self, exc: OSError, rel: str = "") -> OutputError:
        """An object-store error as one line naming the URL and the endpoint."""
        text, at = " ".join(str(exc).split()) or type(exc).__name__, self._at()
        kind = _kind(exc)
        if kind == "network":
            reason = f"cannot connect to the object store{at}: {text.split('Details: ', 1)[-1]}"
        elif kind == "bucket":
            reason = f"the bucket {self.base.split('/', 1)[0]!r} does not exist{at}"
        elif kind == "denied":
            reason = f"access denied{at}; check the credentials and the bucket's policy"
        else:
            reason = f"{text}{at}"
        return OutputError(f"{self.uri(rel)}: {reason}")

    def _at(self) -> str:
        return f" (endpoint {self.options.endpoint})" if self.remote and self.options.endpoint else ""

    # --- the manifest --------------------------------------------------------------------------
    def write_manifest(self, files: dict[str, int], extra: dict | None = None) -> None:
        """``_MANIFEST.json``: every file of the run with its size, written after them all."""
        self.write_text(MANIFEST, json.dumps({"files": files, **(extra or {})}, indent=1, sort_keys=True) + "\n")

    def read_manifest(self) -> dict | None:
        if not self.exists(MANIFEST):
            return None
        return json.loads(self.read_text(MANIFEST))


def _kind(exc: OSError) -> str | None:
    """What an object-store error from pyarrow is about, from its text (it has no error codes)."""
    text = str(exc)
    if "NETWORK_CONNECTION" in text or "curlCode" in text or "Could not connect" in text:
        return "network"
    if "NO_SUCH_BUCKET" in text or "NoSuchBucket" in text:
        return "bucket"
    if "ACCESS_DENIED" in text or "AccessDenied" in text or "Forbidden" in text:
        return "denied"
    return None


def _remote_fs(uri: str, options: StoreOptions) -> tuple[pafs.FileSystem, str]:
    parsed = urlparse(uri)
    if not parsed.netloc:
        raise RunDirError(f"{uri}: no bucket in the URI (expected {parsed.scheme}://bucket/prefix)")
    base = f"{parsed.netloc}{parsed.path}".rstrip("/")
    if parsed.scheme == "s3":
        kwargs = {}
        if options.endpoint:
            try:  # from the config (checked there) or $AWS_ENDPOINT_URL(_S3)
                check_url(options.endpoint, allow_insecure_http=options.allow_insecure_http,
                          carries="the store's signed requests and the run's files")
            except ValueError as exc:
                raise ConfigError(f"output.endpoint (or $AWS_ENDPOINT_URL_S3 / $AWS_ENDPOINT_URL): {exc}") from None
            endpoint = urlparse(options.endpoint)
            kwargs["endpoint_override"] = endpoint.netloc or options.endpoint
            kwargs["scheme"] = endpoint.scheme or "https"
        if options.region:
            kwargs["region"] = options.region
        return pafs.S3FileSystem(**kwargs), base
    try:
        return pafs.GcsFileSystem(), base
    except Exception as exc:  # pragma: no cover - depends on pyarrow's build
        raise RunDirError(f"{uri}: this pyarrow has no Google Cloud Storage support ({exc})") from None
