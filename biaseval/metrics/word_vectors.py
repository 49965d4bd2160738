"""Word embeddings for the embedding-bias study: what a word's vector is, in each language.

Three formats, chosen by ``format`` (or the file's extension):
- ``bin``: a fastText model (``cc.en.300.bin``), read by ``fasttext_bin.read_bin_vectors``: only the
  dictionary entries and matrix rows of the words asked for, so a 7 GB model costs the memory of
  those words. Words it never saw still get a vector, from their character n-grams (``found`` says
  which were seen); every vector is the one fastText's ``get_word_vector`` gives.
- ``vec``: fastText's text format (``cc.it.300.vec``): a "count dimension" header, then one word and
  its numbers per line. Read in one streaming pass that keeps only the words asked for, so a 7 GB
  file costs the memory of those words, not of the file; every line is still checked. A word the
  file lacks has no vector (``found`` is False and its row is zeros).
- ``text``: word2vec or GloVe text, the same with or without the header.

Nothing is cached: a model is read again for each language pair it serves, for the words that pair needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal

import numpy as np

from biaseval.errors import ConfigError
from biaseval.metrics.fasttext_bin import read_bin_vectors

Format = Literal["bin", "vec", "text"]


def format_of(path: str | Path, format: str | None = None) -> str:
    if format:
        return format
    suffix = Path(path).suffix.lower()
    return {".bin": "bin", ".vec": "vec"}.get(suffix, "text")


@dataclass
class Vectors:
    """Vectors of some words (rows of ``matrix``, in the order of ``words``); ``found`` tells which
    were in the model's vocabulary. With ``subword`` (a fastText .bin) the others still have a vector,
    built from their character n-grams; otherwise their row is zeros and they have no vector."""

    words: list[str]
    matrix: np.ndarray
    found: np.ndarray
    dim: int
    model: str
    subword: bool = False
    index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.index = {w: i for i, w in enumerate(self.words)}

    def get(self, word: str) -> np.ndarray | None:
        i = self.index.get(word)
        return None if i is None else self.matrix[i]

    def has_vector(self, word: str) -> bool:
        """Whether ``word`` (one of ``words``) has a vector: it is in the vocabulary, or gets subwords."""
        i = self.index.get(word)
        return i is not None and (self.subword or bool(self.found[i]))


_NUMBER = rb"[-+]?+(?:\d++(?:\.\d*+)?+|\.\d++)(?:[eE][-+]?+\d++)?+"


def _numbers(dim: int) -> re.Pattern:
    """Exactly ``dim`` decimal numbers separated by blanks: one C-speed check of a whole line."""
    return re.compile(rb"[ \t]*+" + _NUMBER + rb"(?:[ \t]++" + _NUMBER + rb"){%d}+[ \t]*+" % (dim - 1))


def _bad_line(path: Path, number: int, word: bytes, rest: bytes, dim: int) -> ConfigError:
    """What is wrong with a line that failed the check: its count of numbers, or its first non-number."""
    fields = rest.split()
    if len(fields) != dim:
        return ConfigError(f"{path}:{number}: {len(fields)} numbers, but the vectors have dimension {dim}")
    single = re.compile(_NUMBER)
    bad = next(((k, f) for k, f in enumerate(fields, 1) if not single.fullmatch(f)), None)
    if bad is None:
        return ConfigError(f"{path}:{number}: not a vector of numbers (separated by something other than "
                           "spaces or tabs)")
    shown = bad[1].decode("utf-8", "replace")
    return ConfigError(f"{path}:{number}: not a vector of numbers: {shown!r} (number {bad[0]} of the vector "
                       f"of {word.decode('utf-8', 'replace')!r})")


def read_text_vectors(path: Path, words: Iterable[str], *, expected_dim: int | None = None) -> Vectors:
    """One streaming pass over a .vec / word2vec / GloVe text file, keeping only ``words``.

    Lines are ``word v1 v2 ...``; an optional first line ``count dimension`` is skipped. The first
    vector fixes the dimension. Every line is checked, whether its word is kept or not: a line with
    another count of numbers, or with something that is not a decimal number (``nan`` and ``inf``
    included), is an error naming the file and line."""
    if not path.is_file():
        raise ConfigError(f"{path}: embedding file not found")
    wanted = set(words)
    kept: dict[str, np.ndarray] = {}
    dim = expected_dim
    check = _numbers(dim) if dim else None
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            line = raw.rstrip(b"\r\n")
            if not line:
                continue
            head, _, rest = line.partition(b" ")
            if number == 1 and rest and len(rest.split()) == 1 and head.isdigit() and rest.strip().isdigit():
                header_dim = int(rest)
                if dim is not None and header_dim != dim:
                    raise ConfigError(f"{path}:1: header says dimension {header_dim}, expected {dim}")
                dim = header_dim
                check = _numbers(dim) if dim else None
                continue
            if dim is None:
                dim = len(rest.split())
                check = _numbers(dim) if dim else None
            if check is None:
                raise ConfigError(f"{path}:{number}: a word without a vector")
            if not check.fullmatch(rest):
                raise _bad_line(path, number, head, rest, dim)
            try:
                word = head.decode("utf-8")
            except UnicodeDecodeError:
                raise ConfigError(f"{path}:{number}: the word is not valid UTF-8") from None
            if word in wanted and word not in kept:
                vector = np.array(rest.split(), dtype=np.float32)
                if not np.isfinite(vector).all():
                    raise ConfigError(f"{path}:{number}: a number too large for a 32-bit float")
                kept[word] = vector
    if dim is None:
        raise ConfigError(f"{path}: no vectors in the file")
    order = list(dict.fromkeys(words))
    matrix = np.zeros((len(order), dim), dtype=np.float32)
    found = np.zeros(len(order), dtype=bool)
    for i, w in enumerate(order):
        if w in kept:
            matrix[i] = kept[w]
            found[i] = True
    return Vectors(order, matrix, found, dim, f"{path.name} (text vectors)")


def load_vectors(path: str | Path, words: Iterable[str], format: str | None = None,
                 expected_dim: int | None = None) -> Vectors:
    """Vectors of ``words`` from an embedding file, reading only what those words need."""
    path = Path(path)
    kind = format_of(path, format)
    if kind == "bin":
        order, matrix, found, dim = read_bin_vectors(path, words)
        if expected_dim is not None and dim != expected_dim:
            raise ConfigError(f"{path}: dimension {dim}, expected {expected_dim}")
        return Vectors(order, matrix, found, dim, f"{path.name} (fastText bin)", subword=True)
    return read_text_vectors(path, words, expected_dim=expected_dim)


def cosines(vectors: np.ndarray, target: np.ndarray) -> np.ndarray:
    """cos(v, target) for each row v; NaN for a zero vector."""
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(target)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, vectors @ target / np.where(norms > 0, norms, 1), np.nan)
