"""The run directory and its atomic writes.

Layout of ``--out DIR`` (a fixed set of files, so a rerun can tell what is finished)::

    run.json                      run id, config and its hash, dataset commits, system versions
    items.parquet                 every item of the run's suites
    translations/system=S/suite=T/shard-00000.parquet   one file per shard, complete or absent
                                  (S: the system's name, brackets and glob characters as !XX)
    translations/.../shard-00000.parquet.sha256         its checksum record, written before it
    labels.parquet                per item x system: the detector's gender label
    metrics.parquet               long format, one row per system x suite x subset x metric
    report.md                     the tables, beside published values where configured

Every file is written to a hidden temporary name in its final folder and renamed into place, so
a reader (or a resumed sweep) sees either the whole file or nothing. ``--out`` may also be an
object-store URI (``s3://bucket/prefix``, ``gs://...``): see ``biaseval/run/filesystem.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from biaseval.errors import OutputError, RunDirError
from biaseval.names import component, key
from biaseval.run.filesystem import (
    MANIFEST,
    Folder,
    StoreOptions,
    is_remote,
    os_error,
    parquet_bytes,
    write_bytes_atomic,
    write_parquet_atomic,
    write_text_atomic,
)

# the local atomic writers live with the stores (filesystem.py); the package imports them from here
__all__ = ["SHARD_KEY", "RunDir", "staging_dir", "write_bytes_atomic", "write_parquet_atomic", "write_text_atomic"]

SHARD_KEY = b"biaseval.shard_key"
# A shard's checksum record, beside it: "<SHA-256 of the file's bytes>  <its file name>\n" (sha256sum's
# format: `sha256sum -c *.sha256` in a shard folder checks them). What a check says when it fails:
CHECKSUM = ".sha256"
UNRECORDED = "no checksum recorded"
CHANGED = "its checksum differs from the one recorded when it was written"
# driver files a remote run uploads as soon as they are written (open_run, write_run), not again in publish
UPLOADED_WHEN_WRITTEN = ("run.json", "items.parquet")


class RunDir:
    """A run's files. ``location`` is a local folder, or an object-store URI (``s3://bucket/runs/x``):
    then shards are written there by the workers directly, and the driver's own outputs are made in a
    local staging folder (``root``) and published to the store (``publish``), manifest last."""

    def __init__(self, location: str | Path, options: StoreOptions | None = None):
        self.location = str(location)
        if is_remote(location):
            self.remote: Folder | None = Folder(self.location, options or StoreOptions())
            self.root = staging_dir(self.remote.location)
            self.shards = self.remote.child("translations")
        else:
            self.remote = None
            self.root = Path(location)
            self.shards = Folder(str(self.root / "translations"))

    @property
    def options(self) -> StoreOptions:
        return self.remote.options if self.remote else StoreOptions()

    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    @property
    def items(self) -> Path:
        return self.root / "items.parquet"

    @property
    def labels(self) -> Path:
        return self.root / "labels.parquet"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.parquet"

    @property
    def examples(self) -> Path:
        """A bounded sample of the outputs with their sources and labels (metrics/examples.py)."""
        return self.root / "examples.parquet"

    @property
    def report(self) -> Path:
        return self.root / "report.md"

    @property
    def translations(self) -> Path:
        """The local shard folder (for a remote run, shards are in ``shards``)."""
        return self.root / "translations"

    # --- shards: written by the workers, wherever the run lives ---------------------------------
    def shard_path(self, system: str, suite: str, index: int) -> str:
        """A shard's name within ``shards``: one folder per system and suite, whatever their names."""
        return key(system_folder(system), f"suite={suite}", f"shard-{index:05d}.parquet")

    def write_shard(self, rel: str, table: pa.Table, metadata: dict[bytes, bytes]) -> None:
        """The shard, made in memory, and before it its checksum record (``rel`` + CHECKSUM): one small
        file per shard, written by the worker that writes the shard (wherever it runs, on any store;
        no file is shared between writers). As the record comes first, a shard visible without one was
        not written here (an older biaseval, another hand); a write cut off between the two leaves a
        record and no shard, or the shard it was to replace, which then differs from it: either way the
        shard is redone, never trusted. The record is not fsynced: losing it in a power cut only costs
        the shard's rewrite."""
        data = parquet_bytes(table, metadata)
        record = f"{hashlib.sha256(data).hexdigest()}  {rel.rsplit('/', 1)[-1]}\n"
        self.shards.write_bytes(rel + CHECKSUM, record.encode("ascii"), durable=False)
        self.shards.write_bytes(rel, data)

    def read_shard(self, rel: str) -> bytes:
        """A shard file's bytes (one read: the checks below take them)."""
        return self.shards.read_bytes(rel)

    def shard_stamp(self, rel: str, data: bytes | None = None) -> tuple[str, int]:
        """What a finished shard file was written for: its plan key and how many of its rows hold no
        translation (0 for shards written before errors were counted) — its footer, from ``data`` (the
        file's bytes) when given, else read."""
        meta = (self.shards.parquet_metadata(rel) if data is None else pq.read_metadata(pa.BufferReader(data)))
        meta = meta.schema.to_arrow_schema().metadata or {}
        return meta.get(SHARD_KEY, b"").decode(), int(meta.get(b"biaseval.errors", b"0") or 0)

    def shard_rows(self, rel: str, data: bytes | None = None) -> int:
        return (self.shards.parquet_metadata(rel) if data is None else pq.read_metadata(pa.BufferReader(data))).num_rows

    def shard_integrity(self, rel: str, data: bytes | None = None) -> str | None:
        """None when the shard's bytes (``data``, else read) have the SHA-256 recorded when it was
        written; else why not: UNRECORDED (no record beside it) or CHANGED (another digest, or a record
        that is not one)."""
        try:
            recorded = self.shards.read_bytes(rel + CHECKSUM).split(maxsplit=1)
        except FileNotFoundError:
            return UNRECORDED
        data = self.read_shard(rel) if data is None else data
        if not recorded or recorded[0] != hashlib.sha256(data).hexdigest().encode("ascii"):
            return CHANGED
        return None

    def shard_problem(self, rel: str, item_ids: list[str] | None = None, data: bytes | None = None) -> str | None:
        """What is wrong with a finished shard file, or None when it can be trusted: its bytes (``data``,
        else read) must be those recorded when it was written (``shard_integrity``), and it must hold
        exactly ``item_ids`` in order when they are given (the row count and item range of its shard).
        A file whose checksum fails is read whole, every page against the CRC written with it, to tell
        damaged bytes ("damaged (unreadable: ...)") from a well-formed file with other content."""
        data = self.read_shard(rel) if data is None else data
        unchecked = self.shard_integrity(rel, data)
        if unchecked is None and item_ids is None:
            return None
        try:
            table = pq.read_table(pa.BufferReader(data), columns=None if unchecked else ["item_id"],
                                  page_checksum_verification=True)
        except Exception as exc:  # noqa: BLE001 - any read failure means the file cannot be trusted
            text = str(exc).strip()
            return f"damaged (unreadable ({type(exc).__name__}: {text.splitlines()[0] if text else ''}))"
        if unchecked:
            return unchecked
        ids = table.column("item_id").to_pylist()
        if len(ids) != len(item_ids):
            return f"damaged ({len(ids)} rows, expected {len(item_ids)})"
        if ids != item_ids:
            first = next(i for i, (a, b) in enumerate(zip(ids, item_ids)) if a != b)
            return f"damaged (row {first} is item {ids[first]!r}, expected {item_ids[first]!r})"
        return None

    def read_shards(self, rels: list[str], columns: list[str] | None = None):
        return self.shards.read_frame(list(rels), columns)

    def shard_files(self, prefix: str = "") -> list[str]:
        return [f for f in self.shards.files(prefix) if f.endswith(".parquet")]

    # --- the driver's files ---------------------------------------------------------------------
    def check_writable(self) -> None:
        """Fail before any work, naming the folder, when the driver could not write its files here (the
        run's folder, or a remote run's local staging folder): read-only, no permission, a file in the
        way. Nothing is left behind: a folder not made yet is checked at its nearest existing parent."""
        folder = self.root
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        where = self.root if folder == self.root else f"{self.root} (in {folder})"
        if not folder.is_dir():
            raise OutputError(f"{where}: {'' if folder == self.root else f'{folder} '}exists and is not a directory")
        probe = folder / f".write-probe-{uuid.uuid4().hex[:12]}.tmp"
        try:
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:  # named after the run, not the probe
            raise (os_error(OSError(exc.errno, exc.strerror), where)
                   or OutputError(f"{where}: cannot be written: {exc.strerror or exc}")) from None

    def remove_temporaries(self) -> int:
        """Delete leftovers of writes that were interrupted before their rename."""
        count = 0
        if self.root.is_dir():
            for tmp in self.root.rglob(".*.tmp"):
                tmp.unlink(missing_ok=True)
                count += 1
        return count

    def read_run(self) -> dict | None:
        self.sync()
        if not self.run_json.exists():
            return None
        try:
            info = json.loads(self.run_json.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise RunDirError(
                f"{self._where('run.json')}: damaged ({type(exc).__name__}: {exc}); the run cannot be resumed or "
                f"scored without it. Restore it, or start again with a new --out") from None
        if not isinstance(info, dict) or not {"run_id", "config", "suites", "systems"} <= info.keys():
            raise RunDirError(f"{self._where('run.json')}: not a biaseval run record (fields missing); restore it, "
                              f"or start again with a new --out")
        return info

    def _where(self, name: str) -> str:
        return self.remote.uri(name) if self.remote is not None else str(self.root / name)

    def write_run(self, info: dict) -> None:
        write_text_atomic(self.run_json, json.dumps(info, indent=2, sort_keys=True) + "\n")
        if self.remote is not None:
            self.remote.upload(self.run_json, "run.json")

    def exists(self) -> bool:
        """Whether anything is at the run's location."""
        if self.remote is not None:
            return bool(self.remote.files())
        return self.root.exists()

    def sync(self) -> None:
        """Make the staging folder hold the remote run's driver files: fetched when the staging copy is
        missing or belongs to another state of the run (its run.json differs), else left as it is —
        the files this process just published are not downloaded again."""
        if self.remote is None or not self.remote.exists("run.json"):
            return
        if self.run_json.exists() and self.run_json.read_bytes() == self.remote.read_bytes("run.json"):
            return
        self.fetch()

    def fetch(self) -> None:
        """Copy a remote run's driver files (not its shards) into the staging folder, for a resume or
        a rescore from another machine."""
        if self.remote is None:
            return
        for rel in self.remote.files():
            if not rel.startswith("translations/") and rel != MANIFEST:
                self.remote.download(rel, self.root / rel)

    def publish(self) -> None:
        """Upload the driver's files to the remote store, then the manifest (a no-op for local runs)."""
        if self.remote is None:
            return
        for path in sorted(p for p in self.root.rglob("*") if p.is_file() and not p.name.startswith(".")):
            rel = path.relative_to(self.root).as_posix()
            if not rel.startswith("translations/") and rel not in UPLOADED_WHEN_WRITTEN:
                self.remote.upload(path, rel)
        files = {rel: self.remote.size(rel) for rel in self.remote.files() if rel != MANIFEST}
        info = self.read_run() or {}
        self.remote.write_manifest(files, {"run_id": info.get("run_id")})


# Characters of a system's name that a path cannot carry safely: polars reads [...], * and ? in a
# path as a glob, and S3 and GCS advise against the rest. Each is written !XX (its code in hex), !
# itself too, so two names never share a folder; other names are used as they are.
_UNSAFE_IN_PATHS = frozenset('!%[]*?{}#\\^`|<>"~')


def system_folder(system: str) -> str:
    """The folder of a system's shards: ``system=<name>``, with characters unsafe in paths (brackets,
    glob characters) written ``!XX``: ``azure[gender=female]`` → ``system=azure!5Bgender=female!5D``.
    The name itself (in the rows, run.json, metrics, reports) is unchanged. A name that cannot be one
    folder (a ``/`` in it, too long: one that ``biaseval.names`` refuses, read back from a run.json)
    is a ConfigError, never a path out of the run directory."""
    safe = "".join(f"!{ord(c):02X}" if c in _UNSAFE_IN_PATHS or ord(c) < 32 or ord(c) == 127 else c for c in system)
    return component(f"system={safe}", "the shard folder of system")


def staging_dir(location: str) -> Path:
    """The local folder where the driver builds a remote run's own files."""
    base = Path(os.environ.get("BIASEVAL_CACHE_DIR") or Path.home() / ".cache" / "biaseval")
    digest = hashlib.sha256(location.encode()).hexdigest()[:16]
    return base / "runs" / digest
