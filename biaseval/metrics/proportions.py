"""Shares of male / female / neutral translations per set: OTSC's p_m, p_f, p_n and TGBI.

Ambiguous outputs (both genders cued) count as neutral here, as in the papers' N.

TGBI (Cho et al. 2019): per set S, P_S = sqrt(p_m * p_f + p_n); the index is the mean of P_S over
the sets (for tgbi-hi, the paper's seven S1..S7). 1 is best: all neutral, or perfectly balanced.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import polars as pl

from .bootstrap import CONFIDENCE, resample_counts, rng_for
from .tidy import counts_by, metric_row, to_frame

CLASSES = ("male", "female", "neutral")


def gender3(label: pl.Expr) -> pl.Expr:
    """male / female / neutral, with ambiguous folded into neutral."""
    return pl.when(label == "ambiguous").then(pl.lit("neutral")).otherwise(label)


def _shares(counts: np.ndarray) -> np.ndarray:
    """counts (..., 3) in CLASSES order -> shares (..., 3)."""
    total = counts.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, counts / np.maximum(total, 1), np.nan)


def tgbi_p(shares: np.ndarray) -> np.ndarray:
    return np.sqrt(shares[..., 0] * shares[..., 1] + shares[..., 2])


def _per_set(labelled: pl.DataFrame, n_boot: int, seed: int):
    """Yield (system, suite, subset, n, counts, replicate counts) per set."""
    frame = labelled.with_columns(gender3(pl.col("label")).alias("g3"))
    table = counts_by(frame, ["system", "suite", "subset"], "g3", CLASSES)
    for row in table.iter_rows(named=True):
        counts = np.array([row[c] for c in CLASSES])
        reps = resample_counts(counts, n_boot, rng_for(seed, row["system"], row["suite"], row["subset"]))
        yield row["system"], row["suite"], row["subset"], row["n"], counts, reps


def gender_shares(labelled: pl.DataFrame, *, n_boot: int = 1000, seed: int = 0,
                  confidence: float = CONFIDENCE) -> pl.DataFrame:
    """p_m, p_f, p_n per system × suite × subset. ``labelled`` needs system, suite, subset, label."""
    rows = []
    for system, suite, subset, n, counts, reps in _per_set(labelled, n_boot, seed):
        point, rep_shares = _shares(counts), _shares(reps)
        for k, metric in enumerate(("p_m", "p_f", "p_n")):
            rows.append(metric_row(system, suite, subset, metric, point[k], n, rep_shares[:, k], confidence))
    return to_frame(rows)


def tgbi(labelled: pl.DataFrame, *, index_sets: Sequence[str], n_boot: int = 1000, seed: int = 0,
         confidence: float = CONFIDENCE) -> pl.DataFrame:
    """p_m, p_f, p_n and P per set, and subset ``all`` metric ``tgbi``: the mean P over ``index_sets``
    (only when every one of them is present for the system)."""
    rows = []
    per_system: dict[tuple[str, str], dict[str, tuple[float, np.ndarray, int]]] = {}
    for system, suite, subset, n, counts, reps in _per_set(labelled, n_boot, seed):
        point, rep_shares = _shares(counts), _shares(reps)
        for k, metric in enumerate(("p_m", "p_f", "p_n")):
            rows.append(metric_row(system, suite, subset, metric, point[k], n, rep_shares[:, k], confidence))
        p_point, p_reps = float(tgbi_p(point)), tgbi_p(rep_shares)
        rows.append(metric_row(system, suite, subset, "P", p_point, n, p_reps, confidence))
        per_system.setdefault((system, suite), {})[subset] = (p_point, p_reps, n)
    for (system, suite), sets in per_system.items():
        if not all(s in sets for s in index_sets):
            continue
        value = float(np.mean([sets[s][0] for s in index_sets]))
        reps = np.mean([sets[s][1] for s in index_sets], axis=0)
        n = sum(sets[s][2] for s in index_sets)
        rows.append(metric_row(system, suite, "all", "tgbi", value, n, reps, confidence))
    return to_frame(rows)
