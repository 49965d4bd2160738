"""Seeded percentile bootstrap over items, done on counts.

Resampling n items with replacement from a table of categorical outcomes is the same as drawing
the outcome counts from Multinomial(n, observed shares), so each replicate is one multinomial
draw over the (few) distinct cells instead of n index lookups. Stratified designs (pro/anti sets
of fixed size) draw each stratum separately.
"""

from __future__ import annotations

import hashlib

import numpy as np

CONFIDENCE = 0.95


def rng_for(seed: int, *keys: str) -> np.random.Generator:
    """A generator that depends on the seed and on the names of what is resampled, so adding a
    system or a subset to a run does not change the intervals of the others."""
    words = [int.from_bytes(hashlib.sha256(k.encode()).digest()[:4], "little") for k in keys]
    return np.random.default_rng([seed, *words])


def resample_counts(counts: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap replicates of a count array: shape (n_boot, *counts.shape), each summing to counts.sum()."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros((n_boot, *counts.shape), dtype=np.int64)
    draws = rng.multinomial(total, counts.ravel() / total, size=n_boot)
    return draws.reshape(n_boot, *counts.shape)


def resample_strata(counts: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Replicates of counts shaped (strata, ...), each stratum resampled within itself."""
    return np.stack([resample_counts(c, n_boot, rng) for c in counts], axis=1)


def interval(replicates: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile interval of replicate values (NaNs, from undefined statistics, are ignored)."""
    values = np.asarray(replicates, dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return (float("nan"), float("nan"))
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)
