"""Metric rows made by hand for report tests, in the shape scoring writes (METRIC_SCHEMA), from short
tuples: (system, suite, subset, metric, value, n, ci_low, ci_high[, interval]). Without an interval
given, a row with bounds gets the method scoring uses for its kind of metric: Wilson's for a share
(report/numbers.py's kinds), a bootstrap of 1,000 resamples (seed 0) for anything else; a row
without bounds, none."""

from __future__ import annotations

import polars as pl

from biaseval.metrics import METRIC_SCHEMA
from biaseval.report import numbers

VALUES = {k: METRIC_SCHEMA[k] for k in ("system", "suite", "subset", "metric", "value", "n", "ci_low", "ci_high")}


def _method(metric: str, low, high) -> str | None:
    if low is None and high is None:
        return None
    return "wilson" if numbers.kind(metric) == numbers.SHARE else "bootstrap"


def metric_frame(rows) -> pl.DataFrame:
    full = []
    for r in rows:
        base = tuple(r[:8])
        interval = r[8] if len(r) > 8 else _method(base[3], base[6], base[7])
        boot = interval == "bootstrap"
        full.append((*base, interval, 1000 if boot else None, 0 if boot else None))
    return pl.DataFrame(full, schema=METRIC_SCHEMA, orient="row")
