"""Embedding bias before and after translation (per word w; female/male target words f, m of a language):

- cos(w, f), cos(w, m): similarity to each target word
- intensity(w) = |cos(w, f) - cos(w, m)|;  direction(w) = cos(w, f) - cos(w, m) (positive leans female)
- after translation, with w' the translation: delta_f = cos(w', f') - cos(w, f), and delta_m likewise
- bins: equal-width bins over the observed range of intensity (per language: 5 for English and 3 for
  Italian by default) or bins of a fixed width from 0, and of the size of direction separately for
  each sign (bin 1 the weakest lean on both sides; a direction of exactly 0 on neither side); each bin
  has its count, share within its feature, share of all words, range and most extreme example words
- sanity figures: cos(f, m) of each model's pair, and the share of words whose similarity rose
- missing words: those without a vector (a .vec lacks them), which drop out of bins and means
- gender shift: the source word's class (neutral / feminine / masculine) against the grammatical
  gender of its translation (masculine / feminine / both / unknown), per system

A translation of several words is embedded as the mean of its words' vectors after leading articles
are dropped (``tokens``), so "il dottore" is "dottore". Everything here is a pure function of vectors
and frames; reading the models is ``biaseval.embeddings``.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import numpy as np
import polars as pl

from biaseval.errors import ConfigError
from biaseval.metrics.bootstrap import CONFIDENCE, rng_for
from biaseval.metrics.tidy import MetricRows
from biaseval.metrics.word_vectors import Vectors, cosines

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


def text_vectors(texts: list[str | None], language: str,
                 vectors: Vectors) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    """Each text's vector: the mean of its tokens that have one (NaN when none has); whether any
    token is in the model's vocabulary; and the tokens without a vector (a .vec lacks them; a .bin
    embeds every token, from subwords if need be), which are left out of the mean."""
    out = np.full((len(texts), vectors.dim), np.nan, dtype=np.float32)
    found = np.zeros(len(texts), dtype=bool)
    missing: list[list[str]] = []
    for i, text in enumerate(texts):
        words = tokens(text, language)
        rows = [vectors.index[t] for t in words if vectors.has_vector(t)]
        missing.append([t for t in words if not vectors.has_vector(t)])
        if rows:
            out[i] = vectors.matrix[rows].mean(axis=0)
        found[i] = any(t in vectors.index and vectors.found[vectors.index[t]] for t in words)
    return out, found, missing


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
    n = len(words)
    return {
        "src_found": src_found, "tgt_found": tgt_found,
        "cos_src_fm": np.full(n, cosines(src_pair[0][None, :], src_pair[1])[0]),
        "cos_tgt_fm": np.full(n, cosines(tgt_pair[0][None, :], tgt_pair[1])[0]),
        "cos_src_f": cos_src_f, "cos_src_m": cos_src_m,
        "intensity_src": np.abs(cos_src_f - cos_src_m), "direction_src": cos_src_f - cos_src_m,
        "cos_tgt_f": cos_tgt_f, "cos_tgt_m": cos_tgt_m,
        "intensity_tgt": np.abs(cos_tgt_f - cos_tgt_m), "direction_tgt": cos_tgt_f - cos_tgt_m,
        "delta_f": cos_tgt_f - cos_src_f, "delta_m": cos_tgt_m - cos_src_m,
    }


def _edges(values: np.ndarray, n: int, width: float | None, lo: float | None) -> np.ndarray:
    """``n`` equal-width bins over [lo, max] (lo default: the smallest value), or bins ``width`` wide
    from 0 up to the one that holds the largest value."""
    top = float(values.max())
    if width:
        return np.round(np.arange(int(np.floor(np.round(top / width, 9))) + 2) * width, 12)
    lo = float(values.min()) if lo is None else lo
    return np.linspace(lo, top, n + 1) if top > lo else np.array([lo, top])


def bins(values: np.ndarray, words: list[str], n: int, examples: int, *, width: float | None = None,
         lo: float | None = None, total: int | None = None) -> list[dict]:
    """Bins of the finite ``values`` (``_edges``); bin k is [lo, hi), the last equal-width bin
    [lo, hi]. Each has its count, its share of the binned values, its share of ``total`` values
    (default: the binned ones) and its ``examples`` most extreme words."""
    values = np.asarray(values, dtype=float)
    keep = np.isfinite(values)
    values, words = values[keep], [w for w, k in zip(words, keep) if k]
    if len(values) == 0:
        return []
    total = len(values) if total is None else total
    edges = _edges(values, n, width, lo)
    if width:
        index = np.floor(np.round(values / width, 9)).astype(int)
    else:
        index = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
    out = []
    for b in range(len(edges) - 1):
        members = np.flatnonzero(index == b)
        extreme = members[np.argsort(-np.abs(values[members]), kind="stable")][:examples]
        out.append({"bin": b + 1, "lo": float(edges[b]), "hi": float(edges[b + 1]), "count": int(len(members)),
                    "share": len(members) / len(values), "share_all": len(members) / total,
                    "examples": ", ".join(words[i] for i in extreme)})
    return out


def bin_rows(frame: pl.DataFrame, side: str, n: int, examples: int, width: float | None = None) -> list[dict]:
    """Intensity bins, and direction bins for each sign, of one side (src or tgt) of ``frame``.

    Direction is binned by its size on each side, so bin 1 holds the weakest lean on both sides
    (``direction+`` female, ``direction-`` male; a male bin's range is given in direction values,
    lo < direction ≤ hi). A direction of exactly 0 leans neither way: it is counted in
    ``direction0``, on neither side. ``share`` is within the feature (a sign), ``share_all`` of
    every word with a direction."""
    words = frame["word"].to_list()
    intensity = frame[f"intensity_{side}"].to_numpy().astype(float)
    direction = frame[f"direction_{side}"].to_numpy().astype(float)
    total = int(np.isfinite(direction).sum())
    with np.errstate(invalid="ignore"):
        female = np.where(direction > 0, direction, np.nan)
        male = np.where(direction < 0, -direction, np.nan)
    rows = [{"feature": "intensity", **b} for b in bins(intensity, words, n, examples, width=width)]
    rows += [{"feature": "direction+", **b} for b in bins(female, words, n, examples, width=width, lo=0.0, total=total)]
    rows += [{"feature": "direction-", **b, "lo": 0.0 - b["hi"], "hi": 0.0 - b["lo"]}
             for b in bins(male, words, n, examples, width=width, lo=0.0, total=total)]
    zeros = np.flatnonzero(direction == 0)
    if len(zeros):
        rows.append({"feature": "direction0", "bin": 1, "lo": 0.0, "hi": 0.0, "count": len(zeros),
                     "share": len(zeros) / total, "share_all": len(zeros) / total,
                     "examples": ", ".join(words[i] for i in zeros[:examples])})
    binning = f"width {width:g}" if width else f"{n} equal-width"
    return [{**r, "binning": binning} for r in rows]


TGT_GENDERS = ("masculine", "feminine", "both", "unknown")
SUMMARY = ("intensity_src", "intensity_tgt", "direction_src", "direction_tgt", "delta_f", "delta_m")


@dataclass
class Study:
    features: pl.DataFrame  # one row per word × system × target language
    bins: pl.DataFrame
    shift: pl.DataFrame
    metrics: pl.DataFrame


def _mean(values: np.ndarray, picks: np.ndarray, n_boot: int) -> tuple[float, int, np.ndarray]:
    """The mean of the finite values, their number, and the bootstrap means over ``picks``."""
    finite = np.isfinite(values)
    point = float(values[finite].mean()) if finite.any() else float("nan")
    sampled = np.where(finite[picks], values[picks], np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a replicate of only NaN: its mean is NaN
        reps = np.nanmean(sampled, axis=1) if picks.shape[1] else np.full(n_boot, np.nan)
    return point, int(finite.sum()), reps


def summarise(table: pl.DataFrame, *, n_boot: int, seed: int, confidence: float = CONFIDENCE) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Metrics (means with bootstrap CIs over words; shares of words, with Wilson intervals) and the
    shift table."""
    rows = MetricRows(seed)
    shift_rows = []
    for (system, suite, tgt), part in table.group_by("system", "suite", "tgt_lang", maintain_order=True):
        rng = rng_for(seed, system, suite, tgt, "embedding")
        n = part.height
        picks = rng.integers(0, n, size=(n_boot, n)) if n else np.zeros((n_boot, 0), dtype=int)
        for name in SUMMARY:
            values = part[name].to_numpy().astype(float)
            rows.add(system, suite, tgt, f"mean_{name}", *_mean(values, picks, n_boot))
        for name, delta in (("share_rose_f", "delta_f"), ("share_rose_m", "delta_m")):
            values = part[delta].to_numpy().astype(float)
            finite = np.isfinite(values)  # a proportion of the words with a value: Wilson's interval
            share = float((values[finite] > 0).mean()) if finite.any() else float("nan")
            rows.add_share(system, suite, tgt, name, share, int(finite.sum()))
        for cls, group in part.group_by("gender_class", maintain_order=True):
            m = group.height
            genders = group["tgt_gender"].fill_null("unknown").to_list()
            counts = np.array([genders.count(g) for g in TGT_GENDERS])
            for k, g in enumerate(TGT_GENDERS):
                rows.add_share(system, suite, f"{tgt}/shift/{cls[0]}", f"to_{g}", counts[k] / m, m)
                shift_rows.append({"suite": suite, "system": system, "tgt_lang": tgt, "gender_class": cls[0],
                                   "tgt_gender": g, "count": int(counts[k]), "share": counts[k] / m})
    return rows.frame(confidence), pl.DataFrame(shift_rows, schema={
        "suite": pl.String, "system": pl.String, "tgt_lang": pl.String, "gender_class": pl.String,
        "tgt_gender": pl.String, "count": pl.Int64, "share": pl.Float64})


def _finite(frame: pl.DataFrame, column: str) -> np.ndarray:
    return np.isfinite(frame[column].to_numpy().astype(float))


def _flags(frame: pl.DataFrame, column: str) -> np.ndarray:
    """A boolean column (True where a table written before it existed lacks it)."""
    if column not in frame.columns:
        return np.ones(frame.height, dtype=bool)
    return frame[column].fill_null(False).to_numpy().astype(bool)


def missing_words(table: pl.DataFrame) -> list[dict]:
    """Per suite, the source words and then each system's translations: how many there are
    (``total``), which have no vector and so drop out of bins, means and plots (``no_vector``:
    words, or "word → translation"), the tokens a model lacks that were left out of a translation's
    mean (``tokens``), and how many were not in the vocabulary but embedded from subwords by a .bin
    (``subword``)."""
    out = []
    for (suite,), part in table.group_by("suite", maintain_order=True):
        source = part.unique("word", maintain_order=True)
        has = _finite(source, "cos_src_f")
        words = source["word"].to_list()
        out.append({"suite": suite, "side": "source", "system": None, "language": source["src_lang"][0],
                    "total": source.height, "no_vector": [w for w, h in zip(words, has) if not h], "tokens": [],
                    "subword": int((has & ~_flags(source, "src_found")).sum())})
        for (system, tgt), rows in part.group_by("system", "tgt_lang", maintain_order=True):
            has = _finite(rows, "cos_tgt_f")
            pairs = zip(rows["word"].to_list(), rows["translation"].to_list(), has)
            lacking = rows["tgt_missing"].to_list() if "tgt_missing" in rows.columns else []
            out.append({"suite": suite, "side": "target", "system": system, "language": tgt, "total": rows.height,
                        "no_vector": [f"{w} → {t if t else '(no translation)'}" for w, t, h in pairs if not h],
                        "tokens": sorted({t for text in lacking if text for t in text.split()}),
                        "subword": int((has & ~_flags(rows, "tgt_found")).sum())})
    return out


def describe_missing(entry: dict) -> str | None:
    """One sentence about an entry of ``missing_words``; None when every word has a vector."""
    who = ("source words" if entry["side"] == "source" else f"translations by {entry['system']}") + \
        f" ({entry['language']}, {entry['suite']})"
    parts = []
    if entry["no_vector"]:
        k = len(entry["no_vector"])
        parts.append(f"{k} of {entry['total']} {'has' if k == 1 else 'have'} no vector in the embedding model and "
                     f"{'is' if k == 1 else 'are'} left out of bins, means and plots: {', '.join(entry['no_vector'])}")
    if entry["tokens"]:
        k = len(entry["tokens"])
        parts.append(f"{k} {'token has' if k == 1 else 'tokens have'} no vector and {'is' if k == 1 else 'are'} "
                     f"left out of their translation's mean: {', '.join(entry['tokens'])}")
    if entry["subword"]:
        k = entry["subword"]
        parts.append(f"{k} of {entry['total']} {'is' if k == 1 else 'are'} not in the model's vocabulary and "
                     f"{'was' if k == 1 else 'were'} embedded from subwords")
    return f"{who}: " + "; ".join(parts) if parts else None


def sanity(table: pl.DataFrame) -> pl.DataFrame:
    """The paper's sanity figures per suite × system × target language: cos(f, m) of the source and
    target models' female/male words, and the share of words whose similarity to f (to m) rose in
    translation, of the words with both vectors."""
    columns = {"cos_src_fm", "cos_tgt_fm", "delta_f", "delta_m"}
    if table.height == 0 or not columns <= set(table.columns):
        return pl.DataFrame()
    rows = []
    for (suite, system, tgt), part in table.group_by("suite", "system", "tgt_lang", maintain_order=True):
        both = _finite(part, "delta_f")
        delta_f, delta_m = part["delta_f"].to_numpy()[both], part["delta_m"].to_numpy()[both]
        rows.append({"suite": suite, "system": system, "src_lang": part["src_lang"][0], "tgt_lang": tgt,
                     "cos_src_fm": float(part["cos_src_fm"][0]), "cos_tgt_fm": float(part["cos_tgt_fm"][0]),
                     "words": int(both.sum()),
                     "share_rose_f": float((delta_f > 0).mean()) if both.any() else None,
                     "share_rose_m": float((delta_m > 0).mean()) if both.any() else None})
    return pl.DataFrame(rows)
