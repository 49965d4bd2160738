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
    """uint64 keys of a frame's (src_lang, tgt_lang, source) rows, in row order (``key_hash`` of each:
    the joined text is built by polars, and the digests read as one little-endian array)."""
    columns = frame.select("src_lang", "tgt_lang", "source")
    if columns.null_count().sum_horizontal().item():  # key_hash spells a missing value "None"
        return np.fromiter((key_hash(*row) for row in columns.iter_rows()), dtype=np.uint64, count=frame.height)
    blake = hashlib.blake2b
    joined = columns.select(pl.concat_str("src_lang", pl.lit(SEPARATOR), "tgt_lang", pl.lit(SEPARATOR), "source"))
    digests = b"".join([blake(text.encode("utf-8"), digest_size=8).digest() for text in joined.to_series().to_list()])
    return np.frombuffer(digests, dtype="<u8").astype(np.uint64)
