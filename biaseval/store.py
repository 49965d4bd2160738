"""The run directory and its atomic writes.

Layout of ``--out DIR`` (a fixed set of files, so a rerun can tell what is finished)::

    run.json                      run id, config and its hash, dataset commits, system versions
    items.parquet                 every item of the run's suites
    translations/system=S/suite=T/shard-00000.parquet   one file per shard, complete or absent
    labels.parquet                per item x system: the detector's gender label
    metrics.parquet               long format, one row per system x suite x subset x metric
    report.md                     the tables, beside published values where configured

Every file is written to a hidden temporary name in its final folder and renamed into place, so
a reader (or a resumed sweep) sees either the whole file or nothing.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SHARD_KEY = b"biaseval.shard_key"


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")


def write_bytes_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_name(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_parquet_atomic(table: pa.Table, path: Path, metadata: dict[bytes, bytes] | None = None) -> None:
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_name(path)
    try:
        with open(tmp, "wb") as fh:
            pq.write_table(table, fh, compression="zstd")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class RunDir:
    def __init__(self, root: str | Path):
        self.root = Path(root)

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
        return self.root / "translations"

    def shard_path(self, system: str, suite: str, index: int) -> Path:
        return self.translations / f"system={system}" / f"suite={suite}" / f"shard-{index:05d}.parquet"

    def shard_key(self, path: Path) -> str | None:
        """The plan key a finished shard file was written for, or None when it does not exist."""
        if not path.exists():
            return None
        meta = pq.read_schema(path).metadata or {}
        return meta.get(SHARD_KEY, b"").decode() or ""

    def shard_errors(self, path: Path) -> int:
        """How many rows of a finished shard hold no translation (0 for shards written before errors were counted)."""
        meta = pq.read_schema(path).metadata or {}
        return int(meta.get(b"biaseval.errors", b"0") or 0)

    def remove_temporaries(self) -> int:
        """Delete leftovers of writes that were interrupted before their rename."""
        count = 0
        if self.root.is_dir():
            for tmp in self.root.rglob(".*.tmp"):
                tmp.unlink(missing_ok=True)
                count += 1
        return count

    def read_run(self) -> dict | None:
        if not self.run_json.exists():
            return None
        return json.loads(self.run_json.read_text(encoding="utf-8"))

    def write_run(self, info: dict) -> None:
        write_text_atomic(self.run_json, json.dumps(info, indent=2, sort_keys=True) + "\n")
