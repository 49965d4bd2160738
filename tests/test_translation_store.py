"""The translation store itself: parts appended whole, lookups of the latest translation per text,
and compaction that merges many parts without changing any lookup."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from biaseval.run.translation_store import STORE_SCHEMA, TranslationStore
from biaseval.run.keys import key_hashes


OLDER_COLUMNS = ["key_hash", "src_lang", "tgt_lang", "source", "translation", "error", "attempts", "model", "provider",
                 "system_version", "run_id", "translated_at"]


def _rows(sources: list[str], translations: list[str | None], when: datetime, run: str = "r1") -> pa.Table:
    frame = pl.DataFrame({"src_lang": ["en"] * len(sources), "tgt_lang": ["es"] * len(sources), "source": sources})
    return pa.table({
        "key_hash": pa.array(key_hashes(frame), pa.uint64()), "src_lang": ["en"] * len(sources),
        "tgt_lang": ["es"] * len(sources), "source": sources, "translation": translations,
        "error": [None if t is not None else "boom" for t in translations],
        "attempts": pa.array([1] * len(sources), pa.int32()), "model": ["m"] * len(sources),
        "provider": ["p"] * len(sources), "system_version": ["v"] * len(sources), "run_id": [run] * len(sources),
        "translated_at": pa.array([when] * len(sources), pa.timestamp("us", tz="UTC")),
    }, schema=pa.schema([STORE_SCHEMA.field(name) for name in OLDER_COLUMNS]))  # as an older biaseval wrote


def test_compaction_merges_parts_and_changes_no_lookup(tmp_path):
    store = TranslationStore(tmp_path / "store")
    identity = {"backend": "identity", "version": "v", "options": {}}
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for k in range(300):  # 300 parts of 3 texts; text k is retranslated later, text 0 fails last
        sources = [f"text {k}", f"text {k + 1}", "text 0"]
        when = start + timedelta(minutes=k)
        store.append(identity, _rows(sources, [f"t{k}-a", f"t{k}-b", None if k == 299 else f"zero {k}"], when))
    items = pl.DataFrame({"src_lang": ["en"] * 302, "tgt_lang": ["es"] * 302,
                          "source": [f"text {k}" for k in range(302)]})
    keys = key_hashes(items)
    before_ok, before_failed = store.latest(identity, items, keys)
    before_hashes = store.hashes(identity)
    assert store.compact(identity, min_parts=256) == 300
    assert len(store.parts(identity)) == 1
    after_ok, after_failed = store.latest(identity, items, keys)
    assert np.array_equal(store.hashes(identity), before_hashes)
    order = ["key_hash"]
    assert after_ok.sort(order).equals(before_ok.sort(order))
    assert after_failed.sort(order).equals(before_failed.sort(order))
    latest = dict(zip(after_ok["source"], after_ok["translation"]))
    assert latest["text 0"] == "zero 298"  # the last success, not the later failure
    assert latest["text 5"] == "t5-a" and latest["text 300"] == "t299-b"
    assert pl.read_parquet(store.parts(identity)).height == 900
    assert not list((tmp_path / "store").rglob("*.tmp"))


def test_compaction_waits_for_enough_parts(tmp_path):
    store = TranslationStore(tmp_path / "store")
    identity = {"backend": "identity", "version": "v", "options": {}}
    for k in range(10):
        store.append(identity, _rows([f"text {k}"], [f"t{k}"], datetime(2026, 1, 1, tzinfo=timezone.utc)))
    assert store.compact(identity) == 0 and len(store.parts(identity)) == 10
