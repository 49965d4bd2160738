"""Seeded percentile bootstrap over items, done on counts: the intervals of metrics with no closed form
(F1, ΔG, ΔS, P, TGBI, correlations, means). Plain proportions get Wilson's interval instead
(``metrics/wilson.py``): at 0/n and n/n their bootstrap is a point.

Resampling n items with replacement from a table of categorical outcomes is the same as drawing
the outcome counts from Multinomial(n, observed shares), so each replicate is one multinomial
draw over the (few) distinct cells instead of n index lookups. Stratified designs (pro/anti sets
of fixed size) draw each stratum separately.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

import numpy as np

CONFIDENCE = 0.95


@lru_cache(maxsize=65536)
def _word(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "little")


def rng_for(seed: int, *keys: str) -> np.random.Generator:
    """A generator that depends on the seed and on the names of what is resampled, so adding a
    system or a subset to a run does not change the intervals of the others."""
    return np.random.default_rng([seed, *map(_word, keys)])


def resample_counts(counts: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap replicates of a count array: shape (n_boot, *counts.shape), each summing to counts.sum()."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros((n_boot, *counts.shape), dtype=np.int64)
    draws = rng.multinomial(total, counts.ravel() / total, size=n_boot)
    return draws.reshape(n_boot, *counts.shape)


def resample_rows(counts: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Replicates of many small count tables at once: ``counts`` (G, K), each row resampled within
    itself; returns (G, n_boot, K). Draws class by class (a multinomial is a chain of binomials),
    vectorised over rows and replicates. Each class's replicates are stored together, so
    ``result[:, :, k]`` is one contiguous block."""
    counts = np.asarray(counts, dtype=np.int64)
    groups, classes = counts.shape
    totals = counts.sum(axis=1)
    out = np.empty((classes, groups, n_boot), dtype=np.int64)
    left = np.broadcast_to(totals[:, None], (groups, n_boot))
    rest = totals.astype(float)
    for k in range(classes - 1):
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(rest > 0, counts[:, k] / np.where(rest > 0, rest, 1), 0.0)
        out[k] = rng.binomial(left, np.clip(p, 0, 1)[:, None])
        left = left - out[k]
        rest = rest - counts[:, k]
    out[classes - 1] = left
    return np.moveaxis(out, 0, -1)


def resample_strata(counts: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Replicates of counts shaped (strata, ...), each stratum resampled within itself."""
    return np.stack([resample_counts(c, n_boot, rng) for c in counts], axis=1)


def intervals(replicates: np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals, one per row of ``replicates`` (rows × n_boot). NaN replicates (undefined
    statistics) are ignored; a row with none defined gets a NaN interval."""
    values = np.asarray(replicates, dtype=float)
    tail = (1.0 - confidence) / 2 * 100
    defined = ~np.isnan(values).all(axis=1)
    low = np.full(values.shape[0], np.nan)
    high = np.full(values.shape[0], np.nan)
    if defined.any():
        rows = values[defined]
        if np.isnan(rows).any():
            bounds = np.nanpercentile(rows, [tail, 100 - tail], axis=1)
        else:
            bounds = np.percentile(rows, [tail, 100 - tail], axis=1)
        low[defined], high[defined] = bounds
    return low, high
