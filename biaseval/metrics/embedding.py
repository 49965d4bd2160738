"""Embedding bias before and after translation (per word w; female/male target words f, m of a language):

- cos(w, f), cos(w, m): similarity to each target word
- intensity(w) = |cos(w, f) - cos(w, m)|;  direction(w) = cos(w, f) - cos(w, m) (positive leans female)
- after translation, with w' the translation: delta_f = cos(w', f') - cos(w, f), and delta_m likewise
- bins: equal-width bins over the observed range of intensity (per language: 5 for English and 3 for
  Italian by default), and of direction separately for each sign; each bin has its count, share,
  range and the most extreme example words
- gender shift: the source word's class (neutral / feminine / masculine) against the grammatical
  gender of its translation (masculine / feminine / both / unknown), per system

A translation of several words is embedded as the mean of its words' vectors after leading articles
are dropped (``tokens``), so "il dottore" is "dottore". Everything here is a pure function of vectors
and frames; reading the models is ``biaseval.embeddings``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import polars as pl

from ..embeddings import Vectors, cosines
from ..errors import ConfigError
from .bootstrap import CONFIDENCE, rng_for
from .tidy import MetricRows

ARTICLES = {
    "en": {"a", "an", "the"},
    "it": {"il", "lo", "la", "l", "i", "gli", "le", "un", "uno", "una", "dei", "degli", "delle"},
    "es": {"el", "la", "los", "las", "un", "una", "unos", "unas", "lo"},
    "fr": {"le", "la", "l", "les", "un", "une", "des", "du"},
    "de": {"der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "eines"},
}
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*", re.UNICODE)


def tokens(text: str | None, language: str) -> list[str]:
    """The words of a (translated) text that carry its meaning: lower-cased, split at spaces and
    apostrophes, leading articles dropped."""
    if not text:
        return []
    words = _WORD.findall(text.lower().replace("’", "'"))
    articles = ARTICLES.get(language, set())
    while len(words) > 1 and words[0] in articles:
        words = words[1:]
    return words


def text_vectors(texts: list[str | None], language: str, vectors: Vectors) -> tuple[np.ndarray, np.ndarray]:
    """Mean vector of each text's tokens, and whether any token had a vector."""
    out = np.full((len(texts), vectors.dim), np.nan, dtype=np.float32)
    found = np.zeros(len(texts), dtype=bool)
    for i, text in enumerate(texts):
        rows = [vectors.index[t] for t in tokens(text, language) if t in vectors.index]
        if rows:
            out[i] = vectors.matrix[rows].mean(axis=0)
            found[i] = bool(vectors.found[rows].any())
    return out, found


def pair_vectors(vectors: Vectors, pair: tuple[str, str], language: str) -> tuple[np.ndarray, np.ndarray]:
    female, male = pair
    for word in pair:
        i = vectors.index.get(word)
        if i is None or not vectors.found[i]:
            raise ConfigError(f"embedding model for {language!r} ({vectors.model}) has no vector for {word!r}, "
                              f"one of its target words; set embedding.pairs.{language}")
    return vectors.get(female), vectors.get(male)


def features(words: list[str], src_vectors: np.ndarray, src_found: np.ndarray, src_pair,
             tgt_vectors: np.ndarray, tgt_found: np.ndarray, tgt_pair) -> dict[str, np.ndarray]:
    """All per-word features from the vectors (rows aligned with ``words``)."""
    cos_src_f, cos_src_m = cosines(src_vectors, src_pair[0]), cosines(src_vectors, src_pair[1])
    cos_tgt_f, cos_tgt_m = cosines(tgt_vectors, tgt_pair[0]), cosines(tgt_vectors, tgt_pair[1])
    return {
        "src_found": src_found, "tgt_found": tgt_found,
        "cos_src_f": cos_src_f, "cos_src_m": cos_src_m,
        "intensity_src": np.abs(cos_src_f - cos_src_m), "direction_src": cos_src_f - cos_src_m,
        "cos_tgt_f": cos_tgt_f, "cos_tgt_m": cos_tgt_m,
        "intensity_tgt": np.abs(cos_tgt_f - cos_tgt_m), "direction_tgt": cos_tgt_f - cos_tgt_m,
        "delta_f": cos_tgt_f - cos_src_f, "delta_m": cos_tgt_m - cos_src_m,
    }


def bins(values: np.ndarray, words: list[str], n: int, examples: int, *, lo: float | None = None,
         hi: float | None = None) -> list[dict]:
    """Equal-width bins over [lo, hi] (default: the observed range of the finite values)."""
    values = np.asarray(values, dtype=float)
    keep = np.isfinite(values)
    values, words = values[keep], [w for w, k in zip(words, keep) if k]
    if len(values) == 0:
        return []
    lo = float(values.min()) if lo is None else lo
    hi = float(values.max()) if hi is None else hi
    edges = np.linspace(lo, hi, n + 1) if hi > lo else np.array([lo, hi])
    index = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
    out = []
    for b in range(len(edges) - 1):
        members = np.flatnonzero(index == b)
        extreme = members[np.argsort(-np.abs(values[members]), kind="stable")][:examples]
        out.append({"bin": b + 1, "lo": float(edges[b]), "hi": float(edges[b + 1]), "count": int(len(members)),
                    "share": len(members) / len(values), "examples": ", ".join(words[i] for i in extreme)})
    return out


def bin_rows(frame: pl.DataFrame, side: str, n: int, examples: int) -> list[dict]:
    """Intensity bins, and direction bins for each sign, of one side (src or tgt) of ``frame``."""
    words = frame["word"].to_list()
    intensity = frame[f"intensity_{side}"].to_numpy()
    direction = frame[f"direction_{side}"].to_numpy()
    rows = [{"feature": "intensity", **b} for b in bins(intensity, words, n, examples)]
    positive = np.where(direction >= 0, direction, np.nan)
    negative = np.where(direction < 0, direction, np.nan)
    if np.isfinite(positive).any():
        rows += [{"feature": "direction+", **b} for b in bins(positive, words, n, examples, lo=0.0)]
    if np.isfinite(negative).any():
        rows += [{"feature": "direction-", **b} for b in bins(negative, words, n, examples, hi=0.0)]
    return rows


TGT_GENDERS = ("masculine", "feminine", "both", "unknown")
SUMMARY = ("intensity_src", "intensity_tgt", "direction_src", "direction_tgt", "delta_f", "delta_m")


@dataclass
class Study:
    features: pl.DataFrame  # one row per word × system × target language
    bins: pl.DataFrame
    shift: pl.DataFrame
    metrics: pl.DataFrame


def summarise(table: pl.DataFrame, *, n_boot: int, seed: int, confidence: float = CONFIDENCE) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Metrics (means with bootstrap CIs over words, gender-shift shares) and the shift table."""
    rows = MetricRows()
    shift_rows = []
    for (system, suite, tgt), part in table.group_by("system", "suite", "tgt_lang", maintain_order=True):
        rng = rng_for(seed, system, suite, tgt, "embedding")
        n = part.height
        picks = rng.integers(0, n, size=(n_boot, n)) if n else np.zeros((n_boot, 0), dtype=int)
        for name in SUMMARY:
            values = part[name].to_numpy().astype(float)
            finite = np.isfinite(values)
            point = float(values[finite].mean()) if finite.any() else float("nan")
            sampled = np.where(finite[picks], values[picks], np.nan)
            with np.errstate(invalid="ignore"):
                reps = np.nanmean(sampled, axis=1) if n else np.full(n_boot, np.nan)
            rows.add(system, suite, tgt, f"mean_{name}", point, int(finite.sum()), reps)
        for cls, group in part.group_by("gender_class", maintain_order=True):
            m = group.height
            genders = group["tgt_gender"].fill_null("unknown").to_list()
            counts = np.array([genders.count(g) for g in TGT_GENDERS])
            draws = rng.multinomial(m, counts / m, size=n_boot) / m
            for k, g in enumerate(TGT_GENDERS):
                rows.add(system, suite, f"{tgt}/shift/{cls[0]}", f"to_{g}", counts[k] / m, m, draws[:, k])
                shift_rows.append({"suite": suite, "system": system, "tgt_lang": tgt, "gender_class": cls[0],
                                   "tgt_gender": g, "count": int(counts[k]), "share": counts[k] / m})
    return rows.frame(confidence), pl.DataFrame(shift_rows, schema={
        "suite": pl.String, "system": pl.String, "tgt_lang": pl.String, "gender_class": pl.String,
        "tgt_gender": pl.String, "count": pl.Int64, "share": pl.Float64})
