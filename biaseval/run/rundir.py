"""The run directory and its atomic writes.

Layout of ``--out DIR`` (a fixed set of files, so a rerun can tell what is finished)::

    run.json                      run id, config and its hash, dataset commits, system versions
    items.parquet                 every item of the run's suites
    translations/system=S/suite=T/shard-00000.parquet   one file per shard, complete or absent
                                  (S: the system's name, brackets and glob characters as !XX)
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

from biaseval.errors import OutputError, RunDirError
from biaseval.names import component, key
from biaseval.run.filesystem import (
    MANIFEST,
    Folder,
    StoreOptions,
    is_remote,
    os_error,
    write_bytes_atomic,
    write_parquet_atomic,
    write_text_atomic,
)

# the local atomic writers live with the stores (filesystem.py); the package imports them from here
__all__ = ["SHARD_KEY", "RunDir", "staging_dir", "write_bytes_atomic", "write_parquet_atomic", "write_text_atomic"]

SHARD_KEY = b"biaseval.shard_key"
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
        self.shards.write_parquet(rel, table, metadata)

    def shard_stamp(self, rel: str) -> tuple[str, int]:
        """What a finished shard file was written for: its plan key and how many of its rows hold no
        translation (0 for shards written before errors were counted) — one footer read."""
        meta = self.shards.parquet_metadata(rel).schema.to_arrow_schema().metadata or {}
        return meta.get(SHARD_KEY, b"").decode(), int(meta.get(b"biaseval.errors", b"0") or 0)

    def shard_rows(self, rel: str) -> int:
        return self.shards.parquet_metadata(rel).num_rows

    def shard_damage(self, rel: str, item_ids: list[str]) -> str | None:
        """What is wrong with a finished shard file, or None when it is whole: it must read back with
        every page matching the checksum written with it, and hold exactly ``item_ids`` in order (the
        row count and item range of its shard)."""
        try:
            ids = self.shards.read_table([rel], verify=True).column("item_id").to_pylist()
        except Exception as exc:  # noqa: BLE001 - any read failure means the file cannot be trusted
            return f"unreadable ({type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''})"
        if len(ids) != len(item_ids):
            return f"{len(ids)} rows, expected {len(item_ids)}"
        if ids != item_ids:
            first = next(i for i, (a, b) in enumerate(zip(ids, item_ids)) if a != b)
            return f"row {first} is item {ids[first]!r}, expected {item_ids[first]!r}"
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
