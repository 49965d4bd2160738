"""The long ("tidy") shape every metric function returns: one row per system × suite × subset × metric."""

from __future__ import annotations

import numpy as np
import polars as pl

from biaseval.metrics.bootstrap import intervals, share_intervals

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


class MetricRows:
    """Collects metric values with their bootstrap replicates; intervals are computed at the end, a
    block of rows at a time (float replicates by ``intervals``, shares by ``share_intervals``)."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, str, str, str]] = []
        self.values: list[float] = []
        self.ns: list[int] = []
        self._blocks: list[tuple[list[np.ndarray] | np.ndarray, np.ndarray | None]] = []  # in row order

    def _float_rows(self) -> list[np.ndarray]:
        if not self._blocks or not isinstance(self._blocks[-1][0], list):
            self._blocks.append(([], None))
        return self._blocks[-1][0]

    def add(self, system: str, suite: str, subset: str, metric: str, value: float, n: int,
            replicates: np.ndarray) -> None:
        self.keys.append((system, suite, subset, metric))
        self.values.append(float(value))
        self.ns.append(int(n))
        self._float_rows().append(np.asarray(replicates, dtype=float))

    def add_shares(self, system: str, suite: str, subsets: list[str], metric: str, values: np.ndarray,
                   ns: np.ndarray, counts: np.ndarray) -> None:
        """A share per subset: ``values`` (G,), sets of ``ns`` (G,) items, ``counts`` (G, n_boot) the
        replicate counts whose share (``counts / ns``) the metric is."""
        self.add_share_rows([(system, suite, subset, metric) for subset in subsets], values, ns, counts)

    def add_share_rows(self, keys: list[tuple[str, str, str, str]], values: np.ndarray, ns: np.ndarray,
                       counts: np.ndarray) -> None:
        """``add_shares`` with a (system, suite, subset, metric) key per row."""
        self.keys.extend(keys)
        self.values.extend(np.asarray(values, dtype=float).tolist())
        self.ns.extend(np.asarray(ns).astype(int).tolist())
        self._blocks.append((np.asarray(counts), np.asarray(ns)))

    def frame(self, confidence: float) -> pl.DataFrame:
        if not self.keys:
            return pl.DataFrame(schema=METRIC_SCHEMA)
        bounds = [intervals(np.stack(block), confidence) if n is None else share_intervals(block, n, confidence)
                  for block, n in self._blocks]
        low = np.concatenate([b[0] for b in bounds])
        high = np.concatenate([b[1] for b in bounds])
        system, suite, subset, metric = zip(*self.keys)
        return pl.DataFrame(
            {"system": system, "suite": suite, "subset": subset, "metric": metric, "value": self.values,
             "n": self.ns, "ci_low": low, "ci_high": high},
            schema=METRIC_SCHEMA,
        )


def count_cells(labelled: pl.DataFrame | pl.LazyFrame, keys: list[str]) -> list[tuple]:
    """Rows of (*keys, count): how many rows share each combination of ``keys``. ``labelled`` is one
    row per output, or already counted (a ``count`` column, as scoring passes it): counts add up."""
    frame = labelled.lazy()
    if "count" in frame.collect_schema().names():
        grouped = frame.group_by(keys).agg(pl.col("count").sum())
    else:
        grouped = frame.group_by(keys).len()
    return grouped.collect(engine="streaming").sort(keys).rows()
