"""Vectors of a few words from a fastText ``.bin`` model, read straight from the file.

Loading a model whole (``fasttext.load_model``) costs its full size in memory (about 7 GB for
``cc.en.300.bin``), while the embedding study needs a few thousand words. This reader walks the file's
dictionary once, in pieces, keeping only the ids of the words asked for, and reads only the rows
of the input matrix those words use: each word's own row (when it is in the vocabulary) and the rows
of its character n-grams. Memory grows with the words asked for, not with the vocabulary.

A word's vector is what fastText's ``get_word_vector`` returns, to the bit: the mean of those rows,
added up in float32 in fastText's order and scaled by ``1/count`` as a float32. The layout read here
is fastText's own (``FastText::saveModel`` of fastText 0.9, file version 12; version 11 is read as
fastText reads it):

- int32 magic 793712314, int32 version;
- the arguments: 12 int32 (dim, ws, epoch, minCount, neg, wordNgrams, loss, model, bucket, minn,
  maxn, lrUpdateRate) and a float64 (t);
- the dictionary: int32 size, int32 nwords, int32 nlabels, int64 ntokens, int64 pruneidx_size;
  ``size`` entries (the word's UTF-8 bytes, a NUL, int64 count, int8 type); ``pruneidx_size``
  pairs of int32 (n-gram bucket, its row after pruning);
- a byte saying whether the input matrix is quantized, then (not quantized) int64 rows, int64
  columns and the float32 rows.

N-gram rows: the word is wrapped as ``<word>``; every run of ``minn``..``maxn`` UTF-8 characters
(not the lone ``<`` or ``>``) is hashed with 32-bit FNV-1a over its bytes taken as *signed* chars,
and its row is ``nwords + hash % bucket``. ``</s>`` (the end-of-sentence word) has no n-grams.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Iterable

import numpy as np

from biaseval.errors import ConfigError

MAGIC = 793712314
VERSIONS = (11, 12)
EOS = "</s>"
SUPERVISED = 3  # fastText's model_name::sup
_ARGS = struct.Struct("<12id")
_DICT = struct.Struct("<iiiqq")
HEADER_BYTES = 8 + _ARGS.size + _DICT.size
_CHUNK = 1 << 22  # the dictionary is read in pieces of 4 MiB


class ModelHeader:
    """What the reader needs of a model: its arguments, and where its dictionary starts in the file."""

    def __init__(self, path: Path, data: bytes) -> None:
        if len(data) < HEADER_BYTES:
            raise ConfigError(f"{path}: not a fastText .bin model (too short)")
        magic, version = struct.unpack_from("<ii", data, 0)
        if magic != MAGIC:
            raise ConfigError(f"{path}: not a fastText .bin model (magic number {magic})")
        if version not in VERSIONS:
            raise ConfigError(f"{path}: fastText model version {version}; this reader knows {VERSIONS}")
        args = _ARGS.unpack_from(data, 8)
        self.dim, self.bucket, self.minn, self.maxn = args[0], args[8], args[9], args[10]
        if version == 11 and args[7] == SUPERVISED:
            self.maxn = 0  # as fastText reads them: old supervised models have no character n-grams
        self.size, self.nwords, _, _, self.prune_size = _DICT.unpack_from(data, 8 + _ARGS.size)
        self.words_at = HEADER_BYTES


def _fnv(ngram: bytes) -> int:
    h = 2166136261
    for byte in ngram:
        h = ((h ^ (byte | 0xFFFFFF00 if byte >= 0x80 else byte)) * 16777619) & 0xFFFFFFFF
    return h


def ngram_buckets(word: str, minn: int, maxn: int, bucket: int) -> list[int]:
    """The hash buckets of ``word``'s character n-grams, in fastText's order (before pruning)."""
    if word == EOS or maxn <= 0 or bucket <= 0:
        return []
    text = ("<" + word + ">").encode("utf-8")
    out = []
    for i in range(len(text)):
        if text[i] & 0xC0 == 0x80:
            continue  # not the first byte of a character
        j, n = i, 1
        while j < len(text) and n <= maxn:
            j += 1
            while j < len(text) and text[j] & 0xC0 == 0x80:
                j += 1
            if n >= minn and not (n == 1 and (i == 0 or j == len(text))):
                out.append(_fnv(text[i:j]) % bucket)
            n += 1
    return out


def _find_words(path: Path, fh, header: ModelHeader, wanted: set[bytes]) -> tuple[dict[bytes, int], int]:
    """The dictionary ids of the wanted words it holds, and where the dictionary ends; read in
    pieces, so that memory holds one piece, not the dictionary."""
    ids: dict[bytes, int] = {}
    fh.seek(header.words_at)
    buffer, base, at, k = b"", header.words_at, 0, 0
    while k < header.size:
        stop = buffer.find(b"\0", at)
        if stop < 0 or stop + 10 > len(buffer):  # the entry goes on in the next piece
            more = fh.read(_CHUNK)
            if not more:
                raise ConfigError(f"{path}: the dictionary ends early (entry {k} of {header.size})")
            buffer, base, at = buffer[at:] + more, base + at, 0
            continue
        word = buffer[at:stop]
        if word in wanted:
            ids.setdefault(word, k)
        at = stop + 10  # the NUL, an int64 count, an int8 type
        k += 1
    return ids, base + at


def read_bin_vectors(path: Path, words: Iterable[str]) -> tuple[list[str], np.ndarray, np.ndarray, int]:
    """``(words, matrix, found, dim)``: one float32 row per distinct word, as fastText computes it;
    ``found`` says which words are in the model's vocabulary (the others have n-gram vectors). Only
    the rows those words use are read from the file (no mapping of it, no copy of the matrix)."""
    order = list(dict.fromkeys(words))
    if not path.is_file():
        raise ConfigError(f"{path}: fastText model not found")
    with open(path, "rb") as fh:
        header = ModelHeader(path, fh.read(HEADER_BYTES))
        ids, at = _find_words(path, fh, header, {w.encode("utf-8") for w in order})
        prune = None
        if header.prune_size > 0:
            fh.seek(at)
            pairs = np.frombuffer(fh.read(8 * header.prune_size), "<i4").reshape(-1, 2)
            prune = dict(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist()))
        at += 8 * max(header.prune_size, 0)
        fh.seek(at)
        head = fh.read(17)
        if len(head) < 17:
            raise ConfigError(f"{path}: the model ends before its input matrix")
        if head[0]:
            raise ConfigError(f"{path}: a quantized model (.ftz); use the full .bin model or its .vec file")
        rows, dim = struct.unpack_from("<qq", head, 1)
        start, row_bytes = at + 17, 4 * dim
        if dim != header.dim or start + row_bytes * rows > os.fstat(fh.fileno()).st_size:
            raise ConfigError(f"{path}: the input matrix ({rows} x {dim}) does not fit the model's header "
                              f"(dimension {header.dim}) or the file's size")
        matrix = np.zeros((len(order), dim), dtype=np.float32)
        found = np.zeros(len(order), dtype=bool)
        for k, word in enumerate(order):
            own = ids.get(word.encode("utf-8"))
            used = [] if own is None else [own]
            found[k] = own is not None
            for h in ngram_buckets(word, header.minn, header.maxn, header.bucket):
                if header.prune_size == 0:
                    break  # fastText: a pruned model that kept no n-grams
                if prune is not None:
                    if h not in prune:
                        continue
                    h = prune[h]
                used.append(header.nwords + h)
            if used:
                total = np.zeros(dim, dtype=np.float32)
                for row in used:  # added one by one, in fastText's order and precision
                    total += np.frombuffer(os.pread(fh.fileno(), row_bytes, start + row * row_bytes), "<f4")
                matrix[k] = total * np.float32(1.0 / len(used))
    return order, matrix, found, dim
