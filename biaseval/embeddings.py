"""Word embeddings for the embedding-bias study: what a word's vector is, in each language.

Three formats, chosen by ``format`` (or the file's extension):
- ``bin``: a fastText model (``cc.en.300.bin``), through the ``fasttext-numpy2`` package. Words it
  never saw still get a vector, from their character n-grams (``oov`` says so).
- ``vec``: fastText's text format (``cc.it.300.vec``): a "count dimension" header, then one word and
  its numbers per line. Read in one streaming pass that keeps only the words asked for, so a 7 GB
  file costs the memory of those words, not of the file.
- ``text``: word2vec or GloVe text, the same with or without the header.

A model is loaded once per process that scores with it (``load_model`` caches by path).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Literal

import numpy as np

from .errors import ConfigError
from .translators.base import MissingExtra

Format = Literal["bin", "vec", "text"]


def format_of(path: str | Path, format: str | None = None) -> str:
    if format:
        return format
    suffix = Path(path).suffix.lower()
    return {".bin": "bin", ".vec": "vec"}.get(suffix, "text")


@dataclass
class Vectors:
    """Vectors of some words (rows of ``matrix``, in the order of ``words``); ``found`` tells which
    were in the model's vocabulary (a fastText .bin still gives the others a subword vector)."""

    words: list[str]
    matrix: np.ndarray
    found: np.ndarray
    dim: int
    model: str
    index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.index = {w: i for i, w in enumerate(self.words)}

    def get(self, word: str) -> np.ndarray | None:
        i = self.index.get(word)
        return None if i is None else self.matrix[i]


class FastTextModel:
    """A fastText .bin model, loaded once; vectors for any word (subwords for unseen ones)."""

    def __init__(self, path: Path):
        try:
            import fasttext
        except ImportError:
            raise MissingExtra("embeddings", "embeddings", "fasttext-numpy2") from None
        if not path.is_file():
            raise ConfigError(f"{path}: fastText model not found")
        try:
            self.model = fasttext.load_model(str(path))
        except ValueError as exc:
            raise ConfigError(f"{path}: not a fastText .bin model ({exc})") from None
        self.dim = self.model.get_dimension()
        self.vocabulary = set(self.model.words)
        self.path = path

    def vectors(self, words: Iterable[str]) -> Vectors:
        words = list(dict.fromkeys(words))
        matrix = np.array([self.model.get_word_vector(w) for w in words], dtype=np.float32).reshape(len(words), self.dim)
        found = np.array([w in self.vocabulary for w in words], dtype=bool)
        return Vectors(words, matrix, found, self.dim, f"{self.path.name} (fastText bin)")


def read_text_vectors(path: Path, words: Iterable[str], *, expected_dim: int | None = None) -> Vectors:
    """One streaming pass over a .vec / word2vec / GloVe text file, keeping only ``words``.

    Lines are ``word v1 v2 ...``; an optional first line ``count dimension`` is skipped. The first
    vector fixes the dimension; a line with another is an error naming the file and line."""
    if not path.is_file():
        raise ConfigError(f"{path}: embedding file not found")
    wanted = set(words)
    kept: dict[str, np.ndarray] = {}
    dim = expected_dim
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
                continue
            fields = rest.split()
            if dim is None:
                dim = len(fields)
            elif len(fields) != dim:
                raise ConfigError(f"{path}:{number}: {len(fields)} numbers, but the vectors have dimension {dim}")
            try:
                word = head.decode("utf-8")
            except UnicodeDecodeError:
                raise ConfigError(f"{path}:{number}: the word is not valid UTF-8") from None
            if word in wanted and word not in kept:
                try:
                    kept[word] = np.array(fields, dtype=np.float32)
                except ValueError:
                    raise ConfigError(f"{path}:{number}: not a vector of numbers") from None
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


@lru_cache(maxsize=4)
def _fasttext(path: str, mtime: float) -> FastTextModel:
    return FastTextModel(Path(path))


def load_vectors(path: str | Path, words: Iterable[str], format: str | None = None,
                 expected_dim: int | None = None) -> Vectors:
    """Vectors of ``words`` from an embedding file (a .bin model is loaded once per process)."""
    path = Path(path)
    kind = format_of(path, format)
    if kind == "bin":
        if not path.is_file():
            raise ConfigError(f"{path}: fastText model not found")
        model = _fasttext(str(path.resolve()), os.path.getmtime(path))
        if expected_dim is not None and model.dim != expected_dim:
            raise ConfigError(f"{path}: dimension {model.dim}, expected {expected_dim}")
        return model.vectors(words)
    return read_text_vectors(path, words, expected_dim=expected_dim)


def cosines(vectors: np.ndarray, target: np.ndarray) -> np.ndarray:
    """cos(v, target) for each row v; NaN for a zero vector."""
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(target)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, vectors @ target / np.where(norms > 0, norms, 1), np.nan)
