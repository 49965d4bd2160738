"""Stable 64-bit keys of (source language, target language, source text).

The translation store indexes texts by this key so that the driver can plan a million-item sweep
holding eight bytes per item, not the texts. BLAKE2b is stable across processes, machines and
library versions (unlike polars' or Python's own hashes), which a cache kept for months needs;
lookups compare the full texts too, so a collision could never swap two translations.
"""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl

SEPARATOR = "\x1f"


def key_hash(src: str, tgt: str, source: str) -> int:
    blob = f"{src}{SEPARATOR}{tgt}{SEPARATOR}{source}".encode("utf-8")
    return int.from_bytes(hashlib.blake2b(blob, digest_size=8).digest(), "little")


def key_hashes(frame: pl.DataFrame) -> np.ndarray:
    """uint64 keys of a frame's (src_lang, tgt_lang, source) rows, in row order."""
    blake = hashlib.blake2b
    rows = zip(frame["src_lang"].to_list(), frame["tgt_lang"].to_list(), frame["source"].to_list())
    return np.fromiter(
        (int.from_bytes(blake(f"{s}{SEPARATOR}{t}{SEPARATOR}{x}".encode("utf-8"), digest_size=8).digest(), "little")
         for s, t, x in rows),
        dtype=np.uint64, count=frame.height,
    )
