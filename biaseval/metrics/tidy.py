"""The long ("tidy") shape every metric function returns: one row per system × suite × subset × metric."""

from __future__ import annotations

import numpy as np
import polars as pl

from biaseval.metrics.bootstrap import intervals
from biaseval.metrics.wilson import difference_interval, paired_difference_interval, wilson_interval

METRIC_SCHEMA: dict[str, pl.DataType] = {
    "system": pl.String,
    "suite": pl.String,
    "subset": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "n": pl.Int64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    # how ci_low..ci_high was made (the reports' captions and the signatures are written from these):
    # INTERVALS, or null for a row without an interval (a p-value, a count); a bootstrap's number of
    # resamples and the seed its generators came from (null for the closed forms)
    "interval": pl.String,
    "resamples": pl.Int64,
    "seed": pl.Int64,
}
WILSON, NEWCOMBE_PAIRED, NEWCOMBE, BOOTSTRAP = "wilson", "newcombe-paired", "newcombe", "bootstrap"
INTERVALS = (WILSON, NEWCOMBE_PAIRED, NEWCOMBE, BOOTSTRAP)


class MetricRows:
    """Collects metric values, each with its bootstrap replicates, as a share of its ``n`` items, or as
    a difference of two shares; intervals are computed at the end, all rows of a kind at once:
    percentile intervals of the float replicates (``intervals``), Wilson's score interval for shares
    (``wilson_interval``: a plain proportion never gets a zero-width interval at 0/n or n/n, as its
    bootstrap would), Newcombe's for differences of shares (likewise never a point: 300 of 300
    against 300 of 300 is not "exactly no difference"). Each row records which of these made its
    interval (``interval``; for the bootstrap also ``resamples`` and ``seed``: the seed the caller's
    generators were made from, given here, and required once a row has replicates)."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self.keys: list[tuple[str, str, str, str]] = []
        self.values: list[float] = []
        self.ns: list[int] = []
        self._replicates: dict[int, np.ndarray] = {}  # row -> replicates, for rows that are not shares
        self._differences: dict[int, tuple[str, tuple]] = {}  # row -> differences of shares: their counts

    def add(self, system: str, suite: str, subset: str, metric: str, value: float, n: int,
            replicates: np.ndarray) -> None:
        """A metric with no closed-form interval: its bootstrap replicates."""
        if self.seed is None:
            raise ValueError(f"{metric}: bootstrap replicates need MetricRows(seed=...), the seed they were drawn with")
        self._replicates[len(self.keys)] = np.asarray(replicates, dtype=float)
        self._append(system, suite, subset, metric, value, n)

    def add_difference(self, system: str, suite: str, subset: str, metric: str, value: float, n: int,
                       first: tuple[int, int], second: tuple[int, int]) -> None:
        """A difference of two shares of independent items, ``first`` and ``second`` as (hits, n):
        Newcombe's hybrid score interval (``wilson.difference_interval``)."""
        self._differences[len(self.keys)] = ("unpaired", (*first, *second))
        self._append(system, suite, subset, metric, value, n)

    def add_paired_difference(self, system: str, suite: str, subset: str, metric: str, value: float, n: int,
                              table: tuple[int, int, int, int]) -> None:
        """A difference of two shares of the same items, ``table`` = (both, first only, second only,
        neither): Newcombe's interval for paired data (``wilson.paired_difference_interval``)."""
        self._differences[len(self.keys)] = ("paired", table)
        self._append(system, suite, subset, metric, value, n)

    def _append(self, system: str, suite: str, subset: str, metric: str, value: float, n: int) -> None:
        self.keys.append((system, suite, subset, metric))
        self.values.append(float(value))
        self.ns.append(int(n))

    def add_share(self, system: str, suite: str, subset: str, metric: str, value: float, n: int) -> None:
        """A plain proportion: ``value`` of ``n`` items (``n`` is its denominator)."""
        self.add_share_rows([(system, suite, subset, metric)], [value], [n])

    def add_shares(self, system: str, suite: str, subsets: list[str], metric: str, values: np.ndarray,
                   ns: np.ndarray) -> None:
        """A share per subset: ``values`` (G,) of sets of ``ns`` (G,) items."""
        self.add_share_rows([(system, suite, subset, metric) for subset in subsets], values, ns)

    def add_share_rows(self, keys: list[tuple[str, str, str, str]], values, ns) -> None:
        """``add_shares`` with a (system, suite, subset, metric) key per row."""
        self.keys.extend(keys)
        self.values.extend(np.asarray(values, dtype=float).tolist())
        self.ns.extend(np.asarray(ns).astype(int).tolist())

    def frame(self, confidence: float) -> pl.DataFrame:
        if not self.keys:
            return pl.DataFrame(schema=METRIC_SCHEMA)
        values, ns = np.asarray(self.values), np.asarray(self.ns)
        share = np.ones(len(self.keys), dtype=bool)
        share[list(self._replicates)] = False
        share[list(self._differences)] = False
        low, high = np.full(len(self.keys), np.nan), np.full(len(self.keys), np.nan)
        low[share], high[share] = wilson_interval(values[share], ns[share], confidence)
        by_length: dict[int, list[int]] = {}  # one percentile call per number of replicates (one, usually)
        for row, replicates in self._replicates.items():
            by_length.setdefault(len(replicates), []).append(row)
        for rows in by_length.values():
            low[rows], high[rows] = intervals(np.stack([self._replicates[r] for r in rows]), confidence)
        method = [WILSON] * len(self.keys)
        resamples: list[int | None] = [None] * len(self.keys)
        for row, replicates in self._replicates.items():
            method[row], resamples[row] = BOOTSTRAP, len(replicates)
        for row, (kind, counts) in self._differences.items():
            interval = paired_difference_interval if kind == "paired" else difference_interval
            low[row], high[row] = interval(*counts, confidence=confidence)
            method[row] = NEWCOMBE_PAIRED if kind == "paired" else NEWCOMBE
        seeds = [self.seed if r is not None else None for r in resamples]
        system, suite, subset, metric = zip(*self.keys)
        return pl.DataFrame(
            {"system": system, "suite": suite, "subset": subset, "metric": metric, "value": self.values,
             "n": self.ns, "ci_low": low, "ci_high": high, "interval": method, "resamples": resamples,
             "seed": seeds},
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
