"""Wilson's score interval for a share: the interval of every plain proportion biaseval reports
(p_m, p_f, p_n, Acc, N, control shares, ...).

A percentile bootstrap of k of n items resamples only what was seen: 0 of 19 or 19 of 19 gives the
point [0, 0] or [1, 1], as if a handful of items were known exactly, and near the edges it is the
Wald interval, whose coverage is poor there. Wilson's interval inverts the score test, so it is
never a point for finite n (1 of 1: [0.21, 1] at 95%) and keeps close to its nominal coverage from
n = 1 up (benchmarks/drift_calibration.py measures both). It is a closed form, vectorised here: the
same numbers as statsmodels' ``proportion_confint(method="wilson")`` (tests/test_monitor_paired.py),
without importing statsmodels (seconds) on every scoring run.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

CONFIDENCE = 0.95


def wilson_interval(share, n, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of shares ``share`` of ``n`` items each (arrays, broadcast); NaN where n is 0 or
    the share is undefined."""
    p = np.asarray(share, dtype=float)
    n = np.asarray(n, dtype=float)
    if confidence >= 1:  # every share is possible
        empty = ~(n > 0) | np.isnan(p)
        return np.where(empty, np.nan, 0.0), np.where(empty, np.nan, 1.0)
    z = NormalDist().inv_cdf(0.5 + confidence / 2) if confidence > 0 else 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        z2n = z * z / n
        centre = (p + z2n / 2) / (1 + z2n)
        half = z / (1 + z2n) * np.sqrt(p * (1 - p) / n + z2n / (4 * n))
        # the interval holds its share (exactly 0 at 0/n and 1 at n/n, which rounding can miss)
        low, high = np.clip(np.minimum(centre - half, p), 0.0, 1.0), np.clip(np.maximum(centre + half, p), 0.0, 1.0)
    empty = ~(n > 0) | np.isnan(p)
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def mover(d, first, second):
    """Interval of a difference ``d`` of two estimates from their own intervals, ``first`` and
    ``second`` as (value, low, high), scalars or arrays (MOVER, Zou and Donner 2008): for two
    independent shares with Wilson intervals, Newcombe's hybrid score interval (his method 10 for
    unpaired data). NaN where any input is."""
    v1, l1, u1 = (np.asarray(x, dtype=float) for x in first)
    v2, l2, u2 = (np.asarray(x, dtype=float) for x in second)
    low = d - np.sqrt((v1 - l1) ** 2 + (u2 - v2) ** 2)
    high = d + np.sqrt((u1 - v1) ** 2 + (v2 - l2) ** 2)
    return (float(low), float(high)) if np.ndim(low) == 0 else (low, high)


def difference_interval(k1, n1, k2, n2, confidence: float = CONFIDENCE):
    """(low, high) of k1/n1 − k2/n2, two shares of independent items: Newcombe's hybrid score
    interval. Never a point for finite n (0 of 300 against 0 of 300: about ±1.3 points)."""
    p1, p2 = np.asarray(k1, float) / np.asarray(n1, float), np.asarray(k2, float) / np.asarray(n2, float)
    return mover(p1 - p2, (p1, *wilson_interval(p1, n1, confidence)), (p2, *wilson_interval(p2, n2, confidence)))


def paired_difference_interval(both, first_only, second_only, neither, confidence: float = CONFIDENCE):
    """(low, high) of p1 − p2, two shares of the same n items: ``both`` items count for both shares,
    ``first_only`` for the first alone, ``second_only`` for the second alone, ``neither`` for none.
    Newcombe's method 10 for paired data (Newcombe 1998, Statistics in Medicine 17: 2635): the Wilson
    limits of each share combined with the correlation φ of the two outcomes (0 where a margin is
    empty, as when every item counts for both), so it narrows as the pairs agree and is never a point
    for finite n."""
    a, b, c, d = (np.asarray(x, dtype=float) for x in (both, first_only, second_only, neither))
    n = a + b + c + d
    with np.errstate(invalid="ignore", divide="ignore"):
        p1, p2 = (a + b) / n, (a + c) / n
        l1, u1 = wilson_interval(p1, n, confidence)
        l2, u2 = wilson_interval(p2, n, confidence)
        margins = (a + b) * (c + d) * (a + c) * (b + d)
        phi = np.where(margins > 0, (a * d - b * c) / np.sqrt(np.where(margins > 0, margins, 1.0)), 0.0)
        diff = p1 - p2
        low = diff - np.sqrt(np.maximum((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
        high = diff + np.sqrt(np.maximum((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return (float(low), float(high)) if np.ndim(low) == 0 else (low, high)
