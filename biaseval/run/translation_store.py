"""The translation store, which is also the cache.

Every text a live system translates — or fails to — is appended here as soon as its task of work
finishes, keyed by the system's identity (backend, version, where the text was sent, and the options
that change outputs), the language pair and the source text. Before a sweep sends anything it looks
here first, so a sentence is paid for once across runs; a rerun after a crash re-sends only what
never arrived.

The store is a folder on any filesystem biaseval writes runs to: a local or shared path, or an
object-store URI (``s3://bucket/prefix``). Every worker that sends or writes for a live system must
see the same store: the driver leaves a marker there when a sweep starts (``mark``), and each worker
checks it can see it (``check_reachable``) before it sends anything, so a store on one node's private
disk is an error, never translations written where the next run cannot find them.

Layout: ``<root>/<backend>-<identity hash>/system.json`` (the identity, for people) and
``part-*.parquet`` files, each written whole or not at all. Lookups take the latest successful
translation of each (pair, source) — no older than ``since`` when the system sets a ``max_age`` —;
failures are kept as rows with an error so reports can show them, but they never count as cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import uuid
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from biaseval.errors import BiasevalError
from biaseval.names import key
from biaseval.run.filesystem import Folder, StoreOptions

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
        # what the provider said about the text besides its translation (translate.base.TextDetails)
        ("fingerprint", pa.string()),
        ("prompt_hash", pa.string()),
        ("input_tokens", pa.int32()),
        ("output_tokens", pa.int32()),
        ("billed_chars", pa.int32()),
        ("rejected", pa.string()),  # why the reply is not a translation (it is final: never sent again)
        ("raw", pa.string()),  # the reply as received, when rejected
    ]
)
# a stored text is done when it has a translation or a reply that is not one (a refusal)
DONE = pl.col("translation").is_not_null() | pl.col("rejected").is_not_null()


def conform(rows: pa.Table) -> pa.Table:
    """Rows in STORE_SCHEMA: columns a part written by an older biaseval lacks are added as nulls."""
    missing = [f for f in STORE_SCHEMA if f.name not in rows.column_names]
    for f in missing:
        rows = rows.append_column(f.name, pa.nulls(rows.num_rows, f.type))
    return rows.select(STORE_SCHEMA.names).cast(STORE_SCHEMA)


def default_root() -> Path:
    from biaseval.data.datasets import cache_root

    return cache_root() / "translations"


def system_identity(backend: str, version: str, options: dict) -> dict:
    """What makes two systems' outputs interchangeable: backend, version, and the options that decide
    the output or where texts are sent (``Translator.identity_options``)."""
    return {"backend": backend, "version": version, "options": dict(sorted(options.items()))}


def identity_key(identity: dict) -> str:
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return f"{identity['backend']}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


# STORE_SCHEMA in polars' types (from typed empty arrays: pyarrow's own ``empty_table`` imports
# pandas, which a worker otherwise never needs: 0.2 s of its start)
STORE_POLARS = pl.from_arrow(pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in STORE_SCHEMA],
                                                        schema=STORE_SCHEMA)).schema
COMPACT_ROWS = 262_144  # rows per row group of a merged part


class TranslationStoreUnreachable(BiasevalError):
    """A worker cannot see the translation store the driver uses (another node's private disk)."""


class TranslationStore:
    def __init__(self, root: str | Path | None = None, options: StoreOptions | None = None):
        self.store = Folder(str(root) if root else str(default_root()), options or StoreOptions())
        self.root = self.store.location  # a local path or a URI, for messages

    @property
    def options(self) -> StoreOptions:
        return self.store.options

    def _where(self, identity: dict) -> str:
        return identity_key(identity)

    def parts(self, identity: dict) -> list[str]:
        """The identity's part files, as local paths or URIs."""
        return [self.store.uri(rel) if self.store.remote else self.store.path(rel)
                for rel in self.store.files(self._where(identity))
                if rel.rsplit("/", 1)[-1].startswith("part-") and rel.endswith(".parquet")]

    def _rel(self, part: str) -> str:
        """A part's name inside the store, from the path or URI ``parts`` gave."""
        base = self.store.uri("") if self.store.remote else self.store.path("")
        return part[len(base) + 1:] if part.startswith(base + "/") else part

    def append(self, identity: dict, rows: pa.Table) -> str | None:
        """Add rows (STORE_SCHEMA) as one new part, whole or not at all; returns its path or URI."""
        if rows.num_rows == 0:
            return None
        folder = self._where(identity)
        if not self.store.exists(f"{folder}/system.json"):
            self.store.write_text(f"{folder}/system.json",
                                  json.dumps(identity, indent=2, sort_keys=True, default=str) + "\n")
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        rel = f"{folder}/part-{stamp}-{uuid.uuid4().hex[:8]}.parquet"
        self.store.write_parquet(rel, conform(rows))
        return self.store.uri(rel) if self.store.remote else self.store.path(rel)

    def _scan(self, parts: list[str]) -> pl.LazyFrame:
        """The parts as one frame in STORE_SCHEMA (parts of older versions get the missing columns)."""
        if not self.store.remote:
            return pl.scan_parquet(parts, missing_columns="insert", schema=STORE_POLARS)
        tables = [conform(self.store.read_table([self._rel(p)])) for p in parts]
        return pl.from_arrow(pa.concat_tables(tables)).lazy()

    def hashes(self, identity: dict, *, run_id: str | None = None, since: datetime | None = None) -> np.ndarray:
        """Sorted distinct keys of the texts the store holds a translation of (by ``run_id`` if
        given; made at or after ``since`` if given)."""
        parts = self.parts(identity)
        if not parts:
            return np.zeros(0, dtype=np.uint64)
        rows = _fresh(self._scan(parts).filter(DONE), since)
        if run_id is not None:
            rows = rows.filter(pl.col("run_id") == run_id)
        return np.unique(rows.select("key_hash").collect()["key_hash"].to_numpy())

    def latest(self, identity: dict, items: pl.DataFrame, keys: np.ndarray, *, run_id: str | None = None,
               first: list[str] = (), since: datetime | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
        """For the (src_lang, tgt_lang, source) rows of ``items`` (with their ``keys``): the latest
        successful translation of each key, and the latest failure of the keys without one. Rows are
        matched on the key; callers compare the texts too (``biaseval.sweep.live_table`` does).

        ``first``: parts to look in before the rest (those this run just wrote for these items): a
        text found there is not looked up in the whole store, which keeps a fresh sweep's lookups
        from reading the store once per shard."""
        empty = pl.DataFrame(schema=STORE_POLARS)
        parts = self.parts(identity)
        if not parts or items.height == 0:
            return empty, empty

        def scan(paths, wanted: np.ndarray) -> pl.DataFrame:
            rows = _fresh(self._scan(list(paths)).filter(pl.col("key_hash").is_in(pl.Series(wanted).implode())), since)
            if run_id is not None:
                rows = rows.filter(pl.col("run_id") == run_id)
            return rows.collect()

        wanted = np.unique(keys)
        known = set(parts)
        first = [p for p in map(str, first) if p in known]
        found = [scan(first, wanted)] if first else []
        if found:
            wanted = np.setdiff1d(wanted, found[0]["key_hash"].to_numpy(), assume_unique=False)
        looked = set(first)
        rest = [p for p in parts if p not in looked]
        if len(wanted) and rest:
            found.append(scan(rest, wanted))
        if not found:
            return empty, empty
        found = pl.concat(found).sort("translated_at")
        ok = found.filter(DONE).unique(subset="key_hash", keep="last", maintain_order=False)
        failed = (found.filter(~DONE).join(ok.select("key_hash"), on="key_hash", how="anti")
                  .unique(subset="key_hash", keep="last", maintain_order=False))
        return ok, failed

    def compact(self, identity: dict, min_parts: int = 256) -> int:
        """Merge many parts into one (lookups read fewer files), streaming part by part so memory stays
        flat. Safe to interrupt: the merged part is complete before it appears (a hidden temporary
        renamed into place, or one upload) and before the old parts are removed; lookups ignore
        duplicates."""
        parts = self.parts(identity)
        if len(parts) < min_parts:
            return 0
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        rel = f"{self._where(identity)}/part-{stamp}-{uuid.uuid4().hex[:8]}.parquet"
        local = Path(self.store.path(rel)) if not self.store.remote else None
        folder = local.parent if local is not None else Path(tempfile.gettempdir())
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".compact-{uuid.uuid4().hex[:12]}.tmp"
        try:
            with pq.ParquetWriter(tmp, STORE_SCHEMA, compression="zstd", write_page_checksum=True) as writer:
                pending, rows = [], 0
                for part in parts:  # row groups of ~COMPACT_ROWS: few and large, memory bounded
                    table = conform(self.store.read_table([self._rel(part)]))
                    pending.append(table)
                    rows += table.num_rows
                    if rows >= COMPACT_ROWS:
                        writer.write_table(pa.concat_tables(pending))
                        pending, rows = [], 0
                if pending:
                    writer.write_table(pa.concat_tables(pending))
            if local is not None:
                os.replace(tmp, local)
            else:
                self.store.upload(tmp, rel)
        finally:
            tmp.unlink(missing_ok=True)
        for part in parts:
            self.store.delete(self._rel(part))
        return len(parts)

    # --- every worker sees the same store -------------------------------------------------------
    def mark(self, run_id: str) -> str:
        """Leave a marker for this sweep's workers to find (``check_reachable``); returns its name."""
        name = key("_reach", f"{run_id}-{uuid.uuid4().hex[:8]}.json")
        self.store.write_text(name, json.dumps({"run_id": run_id}) + "\n")
        return name

    def unmark(self, name: str) -> None:
        try:
            self.store.delete(name)
        except OSError:
            pass  # a marker left behind costs nothing

    def check_reachable(self, name: str, where: str) -> None:
        if not self.store.exists(name):
            raise TranslationStoreUnreachable(
                f"the translation store {self.root} is not the driver's store on {where}: it has no {name} that "
                f"the driver wrote there. Every node must see one store: set cache.path to a shared file "
                f"system or an object-store URI (s3://bucket/prefix); nothing was sent from this node")


def _fresh(rows: pl.LazyFrame, since: datetime | None) -> pl.LazyFrame:
    if since is None:
        return rows
    return rows.filter(pl.col("translated_at") >= pl.lit(since).dt.replace_time_zone("UTC")
                       .cast(pl.Datetime("us", "UTC")))
