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
