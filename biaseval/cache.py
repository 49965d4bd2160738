"""The translation store, which is also the cache.

Every text a live system translates — or fails to — is appended here as soon as its batch of work
finishes, keyed by the system's identity (backend, version, and the options that change outputs),
the language pair and the source text. Before a sweep sends anything it looks here first, so a
sentence is paid for once across runs; a rerun after a crash re-sends only what never arrived.

Layout: ``<root>/<backend>-<identity hash>/system.json`` (the identity, for people) and
``part-*.parquet`` files, each written atomically. Lookups take the latest successful translation
of each (pair, source); failures are kept as rows with an error so reports can show them, but they
never count as cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from .store import write_parquet_atomic, write_text_atomic

KEY = ["src_lang", "tgt_lang", "source"]
STORE_SCHEMA = pa.schema(
    [
        ("key_hash", pa.uint64()),  # biaseval.keys.key_hash of (src_lang, tgt_lang, source)
        ("src_lang", pa.string()),
        ("tgt_lang", pa.string()),
        ("source", pa.string()),
        ("translation", pa.string()),
        ("error", pa.string()),
        ("attempts", pa.int32()),
        ("model", pa.string()),
        ("provider", pa.string()),
        ("system_version", pa.string()),
        ("run_id", pa.string()),
        ("translated_at", pa.timestamp("us", tz="UTC")),
    ]
)


def default_root() -> Path:
    from .datasets import cache_root

    return cache_root() / "translations"


def system_identity(backend: str, version: str, options: dict, operational: frozenset[str]) -> dict:
    """What makes two systems' outputs interchangeable: backend, version and output-relevant options."""
    return {"backend": backend, "version": version,
            "options": {k: v for k, v in sorted(options.items()) if k not in operational}}


def identity_key(identity: dict) -> str:
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return f"{identity['backend']}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


class TranslationCache:
    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root else default_root()

    def folder(self, identity: dict) -> Path:
        return self.root / identity_key(identity)

    def parts(self, identity: dict) -> list[Path]:
        folder = self.folder(identity)
        return sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []

    def append(self, identity: dict, rows: pa.Table) -> Path | None:
        """Add rows (STORE_SCHEMA) as one new part, atomically; returns its path."""
        if rows.num_rows == 0:
            return None
        folder = self.folder(identity)
        if not (folder / "system.json").exists():
            write_text_atomic(folder / "system.json", json.dumps(identity, indent=2, sort_keys=True, default=str) + "\n")
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        path = folder / f"part-{stamp}-{uuid.uuid4().hex[:8]}.parquet"
        write_parquet_atomic(rows.select(STORE_SCHEMA.names).cast(STORE_SCHEMA), path)
        return path

    def hashes(self, identity: dict, *, run_id: str | None = None) -> np.ndarray:
        """Sorted distinct keys of the texts the store holds a translation of (by ``run_id`` if given)."""
        parts = self.parts(identity)
        if not parts:
            return np.zeros(0, dtype=np.uint64)
        rows = pl.scan_parquet(parts).filter(pl.col("translation").is_not_null())
        if run_id is not None:
            rows = rows.filter(pl.col("run_id") == run_id)
        return np.unique(rows.select("key_hash").collect()["key_hash"].to_numpy())

    def latest(self, identity: dict, items: pl.DataFrame, keys: np.ndarray, *, run_id: str | None = None,
               first: list[str] = ()) -> tuple[pl.DataFrame, pl.DataFrame]:
        """For the (src_lang, tgt_lang, source) rows of ``items`` (with their ``keys``): the latest
        successful translation of each key, and the latest failure of the keys without one. Rows are
        matched on the key; callers compare the texts too (``biaseval.sweep.live_table`` does).

        ``first``: parts to look in before the rest (those this run just wrote for these items): a
        text found there is not looked up in the whole store, which keeps a fresh sweep's lookups
        from reading the store once per shard."""
        empty = pl.DataFrame(schema=pl.Schema(pl.from_arrow(STORE_SCHEMA.empty_table()).schema))
        parts = self.parts(identity)
        if not parts or items.height == 0:
            return empty, empty

        def scan(paths, wanted: np.ndarray) -> pl.DataFrame:
            rows = pl.scan_parquet(paths).filter(pl.col("key_hash").is_in(pl.Series(wanted)))
            if run_id is not None:
                rows = rows.filter(pl.col("run_id") == run_id)
            return rows.collect()

        wanted = np.unique(keys)
        found = [scan(list(first), wanted)] if first else []
        if found:
            wanted = np.setdiff1d(wanted, found[0]["key_hash"].to_numpy(), assume_unique=False)
        rest = [p for p in parts if str(p) not in set(map(str, first))]
        if len(wanted) and rest:
            found.append(scan(rest, wanted))
        if not found:
            return empty, empty
        found = pl.concat(found).sort("translated_at")
        ok = found.filter(pl.col("translation").is_not_null()).unique(subset="key_hash", keep="last", maintain_order=False)
        failed = (found.filter(pl.col("translation").is_null()).join(ok.select("key_hash"), on="key_hash", how="anti")
                  .unique(subset="key_hash", keep="last", maintain_order=False))
        return ok, failed

    def compact(self, identity: dict, min_parts: int = 64) -> int:
        """Merge many parts into one (lookups read fewer files). Safe to interrupt: the merged part
        is written before the old ones are removed, and lookups ignore duplicates."""
        parts = self.parts(identity)
        if len(parts) < min_parts:
            return 0
        merged = pl.read_parquet(parts).to_arrow()
        self.append(identity, merged)
        for part in parts:
            os.unlink(part)
        return len(parts)
