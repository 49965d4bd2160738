"""Paired comparisons on the same items: McNemar's exact test on a per-item binary outcome.

The outcome is "correct" (the detected gender equals the gold gender) for suites with gold labels,
and "neutral" (the translation commits to no gender) for gender-neutral sets such as TGBI. Two
systems — or two runs of one system — are compared on the items both translated: b items only the
first gets right, c items only the second; under no difference b ~ Binomial(b + c, 1/2).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl

from biaseval.metrics.tidy import METRIC_SCHEMA

NEUTRAL_LABELS = ["neutral", "ambiguous", "unknown"]


def mcnemar_p(b, c):
    """Two-sided exact McNemar p-value for discordant counts b and c: 2 · P(X <= min(b, c)) for X ~
    Binomial(b + c, 1/2), at most 1 (1.0 when there are none). Scalars give a float; arrays (any
    shape, broadcast) give an array, so thousands of subsets are tested in one call. The same
    computation as statsmodels' ``mcnemar(table, exact=True)`` (tests/test_monitor_paired.py checks
    it), with scipy's binomial CDF from ``scipy.special`` (statsmodels' import costs seconds on
    every scoring run; this one a fraction of one)."""
    from scipy.special import bdtr

    b, c = np.asarray(b, dtype=np.int64), np.asarray(c, dtype=np.int64)
    n = b + c
    p = np.where(n > 0, np.minimum(1.0, 2 * bdtr(np.minimum(b, c), np.maximum(n, 1), 0.5)), 1.0)
    return float(p) if p.ndim == 0 else p


def outcome(label: pl.Expr, gold: pl.Expr) -> pl.Expr:
    """Per item: correct (gold known) or neutral (gender-neutral items, gold null); null if no label."""
    gender = pl.when(label.is_in(NEUTRAL_LABELS)).then(pl.lit("neutral")).otherwise(label)
    return (pl.when(label.is_null()).then(pl.lit(None, dtype=pl.Boolean))
            .when(gold.is_null()).then(gender == "neutral")
            .otherwise(gender == gold))


def discordance(outcomes: pl.DataFrame, a: str, b: str) -> tuple[int, int, int, float]:
    """(n items both have, b = only a right, c = only b right, a's rate minus b's) for two outcome columns."""
    both = outcomes.select(pl.col(a), pl.col(b)).drop_nulls()
    n = both.height
    only_a = both.filter(pl.col(a) & ~pl.col(b)).height
    only_b = both.filter(~pl.col(a) & pl.col(b)).height
    diff = (only_a - only_b) / n if n else float("nan")
    return n, only_a, only_b, diff


def pairwise(outcomes: pl.DataFrame, suite: str) -> pl.DataFrame:
    """Every pair of systems of one suite. ``outcomes``: item_id, system, outcome. Rows (long format):
    system = A, subset = "vs/B", metrics mcnemar_p and diff_correct (A's rate minus B's; for
    gender-neutral sets the rate of neutral outputs)."""
    wide = outcomes.pivot(on="system", index="item_id", values="outcome", aggregate_function="first")
    systems = sorted(c for c in wide.columns if c != "item_id")
    rows = []
    for a, b in combinations(systems, 2):
        n, only_a, only_b, diff = discordance(wide, a, b)
        p = mcnemar_p(only_a, only_b)
        for first, second, d in ((a, b, diff), (b, a, -diff)):
            rows.append({"system": first, "suite": suite, "subset": f"vs/{second}", "metric": "mcnemar_p",
                         "value": p, "n": n, "ci_low": None, "ci_high": None})
            rows.append({"system": first, "suite": suite, "subset": f"vs/{second}", "metric": "diff_correct",
                         "value": d, "n": n, "ci_low": None, "ci_high": None})
    return pl.DataFrame(rows, schema=METRIC_SCHEMA)
