"""Shares of male / female / neutral translations per set: OTSC's p_m, p_f, p_n and TGBI.

Ambiguous outputs (both genders cued) count as neutral here, as in the papers' N.

TGBI (Cho et al. 2019): per set S, P_S = sqrt(p_m * p_f + p_n); the index is the mean of P_S over
the sets (for tgbi-hi, the paper's seven S1..S7). 1 is best: all neutral, or perfectly balanced.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import polars as pl

from biaseval.metrics.bootstrap import CONFIDENCE, resample_rows, rng_for
from biaseval.metrics.tidy import MetricRows, count_cells

CLASSES = ("male", "female", "neutral")
SHARE_METRICS = ("p_m", "p_f", "p_n")


# ambiguous (both genders cued) and unknown (the cue's carrier is missing) count as neutral: the
# output does not commit to one gender.
CLASS_INDEX = {"male": 0, "female": 1, "neutral": 2, "ambiguous": 2, "unknown": 2}


def shares(counts: np.ndarray) -> np.ndarray:
    """counts (..., 3) in CLASSES order -> shares (..., 3); NaN where a set is empty."""
    total = counts.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, counts / np.maximum(total, 1), np.nan)


def tgbi_p(share: np.ndarray) -> np.ndarray:
    return np.sqrt(share[..., 0] * share[..., 1] + share[..., 2])


class _Sets:
    """Per system × suite × subset: the class counts as arrays, and (for P and TGBI, which have no
    closed-form interval) their bootstrap replicates."""

    def __init__(self, labelled: pl.DataFrame):
        cells: dict[tuple[str, str, str], np.ndarray] = {}
        for system, suite, subset, label, count in count_cells(labelled, ["system", "suite", "subset", "label"]):
            row = cells.setdefault((system, suite, subset), np.zeros(len(CLASSES), dtype=np.int64))
            if label is not None:  # a missing translation is not scored
                row[CLASS_INDEX[label]] += count
        self.keys = list(cells)
        self.counts = np.array(list(cells.values()), dtype=np.int64).reshape(-1, len(CLASSES))
        self.n = self.counts.sum(axis=1)
        self.point = shares(self.counts)  # (G, 3)

    def replicates(self, n_boot: int, seed: int) -> np.ndarray:
        """(G, n_boot, 3) class counts: one generator per system × suite, all its sets drawn at once
        (each within itself)."""
        reps = np.zeros((len(self.keys), n_boot, len(CLASSES)), dtype=np.int64)
        groups: dict[tuple[str, str], list[int]] = {}
        for g, (system, suite, _) in enumerate(self.keys):
            groups.setdefault((system, suite), []).append(g)
        for (system, suite), rows in groups.items():
            reps[rows] = resample_rows(self.counts[rows], n_boot, rng_for(seed, system, suite, "sets"))
        return reps

    def add_shares(self, rows: MetricRows) -> None:
        """p_m, p_f, p_n of each set, set by set (Wilson intervals)."""
        k = len(CLASSES)
        rows.add_share_rows([(*key, metric) for key in self.keys for metric in SHARE_METRICS], self.point.ravel(),
                            np.repeat(self.n, k))


def gender_shares(labelled: pl.DataFrame, *, n_boot: int = 1000, seed: int = 0,
                  confidence: float = CONFIDENCE) -> pl.DataFrame:
    """p_m, p_f, p_n per system × suite × subset, with Wilson intervals (``n_boot`` and ``seed`` are
    for the scorers' common signature: shares need no bootstrap). ``labelled`` needs system, suite,
    subset, label."""
    rows = MetricRows()
    _Sets(labelled).add_shares(rows)
    return rows.frame(confidence)


def tgbi(labelled: pl.DataFrame, *, index_sets: Sequence[str], n_boot: int = 1000, seed: int = 0,
         confidence: float = CONFIDENCE) -> pl.DataFrame:
    """p_m, p_f, p_n and P per set, and subset ``all`` metric ``tgbi``: the mean P over ``index_sets``
    (only when every one of them is present for the system)."""
    sets = _Sets(labelled)
    rows = MetricRows(seed)
    sets.add_shares(rows)
    p_point, p_reps = tgbi_p(sets.point), tgbi_p(shares(sets.replicates(n_boot, seed)))  # (G,), (G, n_boot)
    members: dict[tuple[str, str], dict[str, int]] = {}
    for g, (system, suite, subset) in enumerate(sets.keys):
        rows.add(system, suite, subset, "P", p_point[g], sets.n[g], p_reps[g])
        members.setdefault((system, suite), {})[subset] = g
    for (system, suite), index in members.items():
        if all(s in index for s in index_sets):
            chosen = [index[s] for s in index_sets]
            rows.add(system, suite, "all", "tgbi", p_point[chosen].mean(), sets.n[chosen].sum(), p_reps[chosen].mean(axis=0))
    return rows.frame(confidence)
