"""The store's text keys must never change (a changed key silently invalidates every cache), and a
key collision must never hand one text another's translation."""

from __future__ import annotations

import numpy as np
import polars as pl

from biaseval.run.keys import key_hash, key_hashes
from biaseval.run.rows import live_table
from biaseval.run.translation_store import conform

KNOWN = 14806393592579936468  # blake2b-64 of 'en\x1fes\x1fHello', frozen: the store depends on it


def test_keys_are_stable_across_versions():
    assert key_hash("en", "es", "Hello") == KNOWN
    frame = pl.DataFrame({"src_lang": ["en", "en"], "tgt_lang": ["es", "fr"], "source": ["Hello", "Hello"]})
    keys = key_hashes(frame)
    assert keys.dtype == np.uint64 and keys[0] == KNOWN and keys[1] != KNOWN


def test_a_colliding_key_does_not_attach_another_texts_translation():
    items = pl.DataFrame({
        "item_id": ["a", "b"], "suite": ["s", "s"], "subset": ["x", "x"], "src_lang": ["en", "en"],
        "tgt_lang": ["es", "es"], "source": ["Hello", "Goodbye"], "gold": [None, None], "occupation": [None, None],
        "female_share": [None, None], "stereotype": [None, None],
    }, schema_overrides={"gold": pl.String, "occupation": pl.String, "female_share": pl.Float64, "stereotype": pl.String})
    keys = np.array([1, 2], dtype=np.uint64)
    found = pl.DataFrame({  # the store says key 2 is "Adiós" of a *different* text: a collision
        "key_hash": np.array([1, 2], dtype=np.uint64), "src_lang": ["en", "en"], "tgt_lang": ["es", "es"],
        "source": ["Hello", "Something else"], "translation": ["Hola", "Adiós"], "error": [None, None],
        "attempts": [1, 1], "model": ["m", "m"], "provider": ["p", "p"], "system_version": ["v", "v"],
        "run_id": ["r0", "r0"], "translated_at": [None, None],
    }, schema_overrides={"attempts": pl.Int32, "error": pl.String, "translated_at": pl.Datetime("us", "UTC")})
    found = pl.from_arrow(conform(found.to_arrow()))  # as the store hands rows out: every store column
    failed = found.clear()
    table = pl.from_arrow(live_table(items, keys, found, failed, "sys", "v", "r1"))
    assert table["translation"].to_list() == ["Hola", None]
    assert table["error"].to_list() == [None, "not translated"]
    assert table["cached"].to_list() == [True, False]

