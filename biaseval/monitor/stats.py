"""The tests of a monitoring run and their correction for multiplicity (pure functions).

One run makes many tests: per system × suite × subset, one on the items' binary outcome (McNemar,
for Acc) and one on their label distribution (Stuart–Maxwell, for p_m, p_f, p_n and N together, on the labels as the detector gave them: a
move from male to female changes p_m and p_f at once, and is one change, not two); every other
watched metric (ΔG, ΔS, P, TGBI, ...) is tested by the Wald p of its change's interval. The run's
family is every distinct test behind a watched metric, corrected together: Benjamini–Hochberg
(``bh``, false discovery rate), Holm (``holm``, family-wise error) or ``none``.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from biaseval.metrics.paired import mcnemar_p

LABEL_METRICS = frozenset({"p_m", "p_f", "p_n", "neutral"})  # functions of the label distribution
OUTCOME_METRICS = frozenset({"acc"})  # the share of items whose outcome is right


def adjust(p: list[float], method: str) -> list[float]:
    """Adjusted p-values of one family: ``bh`` (Benjamini–Hochberg step-up), ``holm`` (step-down) or
    ``none``; each is monotone in the raw p and at most 1."""
    n = len(p)
    if method == "none" or n == 0:
        return list(p)
    order = sorted(range(n), key=lambda i: p[i])
    out = [1.0] * n
    if method == "holm":
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (n - rank) * p[i]))
            out[i] = running
        return out
    if method != "bh":
        raise ValueError(f"unknown correction {method!r} (bh, holm or none)")
    running = 1.0
    for rank in range(n - 1, -1, -1):
        i = order[rank]
        running = min(running, p[i] * n / (rank + 1))
        out[i] = min(running, 1.0)
    return out


def chi2_sf(x: float, df: int) -> float:
    """Upper tail of the chi-square distribution with integer ``df`` (closed forms)."""
    if x <= 0:
        return 1.0
    half = x / 2
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for i in range(1, df // 2):
            term *= half / i
            total += term
        return math.exp(-half) * total
    total = math.erfc(math.sqrt(half))
    term = math.sqrt(half) * math.exp(-half) / math.gamma(1.5)
    for i in range(1, (df + 1) // 2):
        total += term
        term *= half / (i + 0.5)
    return min(1.0, total)


def stuart_maxwell_p(before: list[str], after: list[str]) -> float:
    """Marginal homogeneity of paired categorical labels (same items, two runs): Stuart–Maxwell's
    chi-square on the k − 1 free margins; with two categories, McNemar's exact test."""
    categories = sorted(set(before) | set(after))
    if len(categories) < 2:
        return 1.0
    index = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    for b, a in zip(before, after):
        table[index[b], index[a]] += 1
    if len(categories) == 2:
        return mcnemar_p(int(table[0, 1]), int(table[1, 0]))
    d = (table.sum(axis=1) - table.sum(axis=0))[:-1]
    s = -(table + table.T)[:-1, :-1]
    np.fill_diagonal(s, (table.sum(axis=1) + table.sum(axis=0) - 2 * np.diag(table))[:-1])
    rank = int(np.linalg.matrix_rank(s))
    if rank == 0:
        return 1.0
    return chi2_sf(float(d @ np.linalg.pinv(s) @ d), rank)


def wald_p(change: float, low: float, high: float, confidence: float = 0.95) -> float:
    """Two-sided p of a change from its interval: the standard error is read off the half of the
    interval that faces 0, so the p is below 1 − confidence exactly when the interval excludes 0."""
    if any(v is None or v != v for v in (change, low, high)):
        return float("nan")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    se = ((change - low) if change >= 0 else (high - change)) / z
    if se <= 0:
        return 1.0 if change == 0 else 0.0
    return 2 * (1 - NormalDist().cdf(abs(change) / se))
