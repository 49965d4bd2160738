"""Wilson score intervals for proportions (Wilson 1927), in closed form.

For a share ``k / n`` of independent items the Wilson interval keeps its coverage near the nominal level
where the percentile bootstrap does not: at 0 or 100 % (every resample repeats the sample, so the
bootstrap interval shrinks to the point) and in small cells (a handful of items). MiTTenS reports
shares of this kind, often at the edges (the references score 100 %) and per cell of a few items.

With z the two-sided normal quantile of ``confidence``:
centre = (k + z²/2) / (n + z²), half-width = z / (n + z²) · sqrt(k (n − k) / n + z²/4).
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from biaseval.metrics.bootstrap import CONFIDENCE


def wilson(k: np.ndarray, n: np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of the Wilson interval of ``k`` successes in ``n`` trials (arrays of the
    same shape); NaN where ``n`` is 0. The bounds stay within [0, 1] and contain ``k / n``."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    if np.any((k < 0) | (k > n)):
        raise ValueError("every k must lie between 0 and its n")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    z2 = z * z
    with np.errstate(invalid="ignore", divide="ignore"):
        denom = n + z2
        centre = (k + z2 / 2) / denom
        half = z / denom * np.sqrt(np.maximum(k * (n - k) / n, 0.0) + z2 / 4)
        low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
        high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
        share = np.where(n > 0, k / np.maximum(n, 1), np.nan)
    # the interval holds the share (rounding must not push a bound past it; at k = 0 the low bound is
    # exactly 0, at k = n the high bound exactly 1)
    return np.fmin(low, share), np.fmax(high, share)
