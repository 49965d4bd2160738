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

from biaseval.metrics.mittens import NO_READER as MITTENS_NO_READER
from biaseval.metrics.mtgeneval import right_expr
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


def adjust(p: list[float], method: str) -> list[float]:
    """Adjusted p-values of one family: ``bh`` (Benjamini–Hochberg step-up), ``holm`` (step-down) or
    ``none``; each is monotone in the raw p and at most 1. The same numbers as statsmodels'
    ``multipletests`` (``fdr_bh``, ``holm``; tests/test_monitor_paired.py checks it on generated
    families), computed here: statsmodels' Holm runs a full garbage collection on every call (a
    quarter of a second in a process holding a run's tables), and the calibration simulation calls
    this thousands of times."""
    if method not in ("bh", "holm", "none"):
        raise ValueError(f"unknown correction {method!r} (bh, holm or none)")
    if method == "none" or not p:
        return list(p)
    values = np.asarray(p, dtype=float)
    n = len(values)
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    if method == "holm":  # the k-th smallest times (n − k + 1), running maximum
        adjusted = np.maximum.accumulate(ranked * np.arange(n, 0, -1))
    else:  # the k-th smallest times n / k, running minimum from the largest
        adjusted = np.minimum.accumulate((ranked * n / np.arange(1, n + 1))[::-1])[::-1]
    out = np.empty(n)
    out[order] = np.minimum(adjusted, 1.0)
    return out.tolist()


def outcome(label: pl.Expr, gold: pl.Expr) -> pl.Expr:
    """Per item: correct (gold known) or neutral (gender-neutral items, gold null); null if no label."""
    gender = pl.when(label.is_in(NEUTRAL_LABELS)).then(pl.lit("neutral")).otherwise(label)
    return (pl.when(label.is_null()).then(pl.lit(None, dtype=pl.Boolean))
            .when(gold.is_null()).then(gender == "neutral")
            .otherwise(gender == gold))


def suite_outcome(scorer: str, params: dict) -> pl.Expr:
    """Per output (columns label, gold, reason): the outcome a suite's headline share counts and its
    paired tests compare, so both read one definition: True right, False wrong, null not scored (no
    translation; out of English, a MiTTenS passage the reader could not read, as its accuracy leaves
    those out). MT-GenEval's is the paper's decision from the reason."""
    if scorer == "mtgeneval":
        return right_expr(pl.col("reason"))
    decided = outcome(pl.col("label"), pl.col("gold"))
    if scorer == "mittens" and params.get("direction") == "2xx":
        unread = (pl.col("label") == "unknown") | (pl.col("reason").fill_null("") == MITTENS_NO_READER)
        return pl.when(unread).then(pl.lit(None, dtype=pl.Boolean)).otherwise(decided)
    return decided


def comparison_group(scorer: str, params: dict) -> pl.Expr | None:
    """Per item (columns tgt_lang, gold, subset of items.parquet): the subset whose metric a summary
    shows, where it is finer than the whole suite, so systems are compared on it too: WinoMT per target
    language, MT-GenEval per language and gender (``es/feminine``: its Acc), OTSC per set (its p_f or
    p_m is the share right in a set of one gold gender). None: the suite is compared as a whole."""
    if scorer == "mtgeneval":
        gender = pl.col("gold").replace_strict(["female", "male"], ["feminine", "masculine"], default="unmarked")
        return pl.col("tgt_lang") + "/" + gender
    if scorer == "winomt" and params.get("by_target"):
        return pl.col("tgt_lang")
    if scorer == "otsc":
        return pl.col("subset")
    return None


def pair_subset(other: str, group: str | None = None) -> str:
    """The subset of a paired comparison's rows: ``vs/B`` over all the suite's items, ``vs/B/<group>``
    over one group of them (a target language, ``es/feminine``, a set). System names hold no ``/``."""
    return f"vs/{other}" if group is None else f"vs/{other}/{group}"


def split_pair_subset(subset: str, systems=()) -> tuple[str, str | None]:
    """``pair_subset`` read back: (the other system, the group or None). ``systems``: the names it may
    be, where known (the longest that fits is taken: a name read from an old run may hold a ``/``)."""
    rest = subset[3:]
    for name in sorted(systems, key=len, reverse=True):
        if rest == name or rest.startswith(name + "/"):
            return name, rest[len(name) + 1:] or None
    other, _, group = rest.partition("/")
    return other, group or None


def pairwise(outcomes: pl.DataFrame, suite: str) -> pl.DataFrame:
    """Every pair of systems of one suite, on the items both have an outcome for. ``outcomes``:
    item_id, system, outcome (null: not scored), and optionally ``group`` (the subset a summary shows
    a metric of: then each group is compared too). Rows (long format): system = A, subset
    ``pair_subset(B, group)``, metrics mcnemar_p and diff_correct (A's rate minus B's; for
    gender-neutral sets the rate of neutral outputs), n the items compared. A pair (or a group) with no
    item in common has no rows: there is nothing to compare."""
    grouped = "group" in outcomes.columns
    index = ["item_id", "group"] if grouped else ["item_id"]
    wide = outcomes.pivot(on="system", index=index, values="outcome", aggregate_function="first")
    systems = sorted(c for c in wide.columns if c not in index)
    rows = []
    for a, b in combinations(systems, 2):
        both = wide.select(*index[1:], pl.col(a).alias("_a"), pl.col(b).alias("_b")).drop_nulls(["_a", "_b"])
        tallies = [(None, both)]
        if grouped:
            tallies += sorted(((g, part) for (g,), part in both.filter(pl.col("group").is_not_null())
                               .partition_by("group", as_dict=True).items()), key=lambda kv: kv[0])
        for group, part in tallies:
            n = part.height
            if n == 0:
                continue
            only_a = part.filter(pl.col("_a") & ~pl.col("_b")).height
            only_b = part.filter(~pl.col("_a") & pl.col("_b")).height
            p, diff = mcnemar_p(only_a, only_b), (only_a - only_b) / n
            for first, second, d in ((a, b, diff), (b, a, -diff)):
                for metric, value in (("mcnemar_p", p), ("diff_correct", d)):
                    rows.append({"system": first, "suite": suite, "subset": pair_subset(second, group),
                                 "metric": metric, "value": value, "n": n})
    return pl.DataFrame(rows, schema={k: METRIC_SCHEMA[k] for k in ("system", "suite", "subset", "metric", "value", "n")}
                        ).with_columns([pl.lit(None, dtype=METRIC_SCHEMA[c]).alias(c)
                                        for c in ("ci_low", "ci_high", "interval", "resamples", "seed")])
