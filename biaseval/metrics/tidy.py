"""The long ("tidy") shape every metric function returns: one row per system × suite × subset × metric."""

from __future__ import annotations

import numpy as np
import polars as pl

from .bootstrap import interval

METRIC_SCHEMA: dict[str, pl.DataType] = {
    "system": pl.String,
    "suite": pl.String,
    "subset": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "n": pl.Int64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
}


def metric_row(system: str, suite: str, subset: str, metric: str, value: float, n: int,
               replicates: np.ndarray, confidence: float) -> dict:
    low, high = interval(replicates, confidence)
    return {"system": system, "suite": suite, "subset": subset, "metric": metric,
            "value": float(value), "n": int(n), "ci_low": low, "ci_high": high}


def to_frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=METRIC_SCHEMA)


def counts_by(labelled: pl.DataFrame, keys: list[str], column: str, categories: tuple[str, ...]) -> pl.DataFrame:
    """Per group of ``keys``: n and one count column per category of ``column`` (wide, zero-filled)."""
    return (
        labelled.group_by(keys)
        .agg(
            pl.len().alias("n"),
            *[(pl.col(column) == c).sum().alias(c) for c in categories],
        )
        .sort(keys)
    )
