"""Comparing one system with its baseline: each metric's change with its interval (MOVER); per suite
and subset the paired tests on the items (McNemar on the outcome, Stuart–Maxwell on the labels) with
the list of flipped labels; and the run's verdict, judged over its whole family of tests."""

from __future__ import annotations

import math

import polars as pl

from biaseval.config import MonitorConfig
from biaseval.metrics.paired import mcnemar_p, outcome
from biaseval.monitor.stats import (
    LABEL_METRICS,
    OUTCOME_METRICS,
    adjust,
    stuart_maxwell_p,
    wald_p,
)
from biaseval.monitor.verdict import SystemDrift
from biaseval.run.rundir import RunDir, system_folder
from biaseval.suites.sample import detectable_change

CHANGE_SCHEMA = {"suite": pl.String, "subset": pl.String, "metric": pl.String, "value": pl.Float64,
                 "baseline_value": pl.Float64, "change": pl.Float64, "change_low": pl.Float64,
                 "change_high": pl.Float64, "test": pl.String, "p": pl.Float64, "p_adjusted": pl.Float64,
                 "significant": pl.Boolean}


def mover(d: float, cur: tuple[float, float, float], base: tuple[float, float, float]) -> tuple[float, float]:
    """Interval of a difference of two independent estimates from their own intervals (MOVER)."""
    v_c, l_c, u_c = cur
    v_b, l_b, u_b = base
    if any(x is None or (isinstance(x, float) and math.isnan(x)) for x in (*cur, *base)):
        return float("nan"), float("nan")
    return d - math.sqrt((v_c - l_c) ** 2 + (u_b - v_b) ** 2), d + math.sqrt((u_c - v_c) ** 2 + (v_b - l_b) ** 2)


def metric_changes(current: pl.DataFrame, baseline: pl.DataFrame, tests: dict[tuple[str, str, str], float],
                   confidence: float = 0.95) -> pl.DataFrame:
    """Per metric: its change with the MOVER interval, and the test it belongs to with that test's raw
    p (``tests``: (suite, subset, test) -> p from the items; other metrics: the Wald p of the interval).
    Significance is judged later, over the run's whole family (``judge``)."""
    keys = ["suite", "subset", "metric"]
    cols = ["value", "ci_low", "ci_high", "n"]
    cur = current.filter(~pl.col("subset").str.starts_with("vs/")).select(*keys, *cols)
    base = baseline.filter(~pl.col("subset").str.starts_with("vs/")).select(*keys, *[pl.col(c).alias(f"{c}_base") for c in cols])
    joined = cur.join(base, on=keys, how="inner")
    rows = []
    for r in joined.iter_rows(named=True):
        d = r["value"] - r["value_base"]
        low, high = mover(d, (r["value"], r["ci_low"], r["ci_high"]), (r["value_base"], r["ci_low_base"], r["ci_high_base"]))
        test = ("labels" if r["metric"] in LABEL_METRICS else "outcome" if r["metric"] in OUTCOME_METRICS else "")
        if (r["suite"], r["subset"], test) in tests:
            p = tests[(r["suite"], r["subset"], test)]
        else:
            test, p = f"interval:{r['metric']}", wald_p(d, low, high, confidence)
        rows.append({**{k: r[k] for k in keys}, "value": r["value"], "baseline_value": r["value_base"], "change": d,
                     "change_low": low, "change_high": high, "test": test, "p": p, "p_adjusted": None,
                     "significant": False})
    return pl.DataFrame(rows, schema=CHANGE_SCHEMA)


def suite_items(run: RunDir, system: str, suite: str) -> pl.DataFrame:
    """item_id, subset, source, translation, label, gold of one system's outputs for one suite."""
    shards = run.shard_files(f"{system_folder(system)}/suite={suite}")
    texts = run.read_shards(shards, columns=["item_id", "subset", "source", "translation", "gold"])
    labels = pl.scan_parquet(run.labels).filter((pl.col("system") == system) & (pl.col("suite") == suite)) \
        .select("item_id", "label").collect()
    return texts.join(labels, on="item_id", how="left")


def item_drift(current: RunDir, system: str, baseline: RunDir, base_system: str, suite: str,
               monitor: MonitorConfig) -> tuple[dict, pl.DataFrame, dict[tuple[str, str, str], float]]:
    """One suite's items against the baseline's: the flips, and per subset (and ``all``) McNemar's
    test on the outcome and Stuart–Maxwell's on the label distribution (raw p)."""
    cur = suite_items(current, system, suite)
    base = suite_items(baseline, base_system, suite).select(
        "item_id", pl.col("translation").alias("translation_base"), pl.col("label").alias("label_base"))
    both = cur.join(base, on="item_id", how="inner").with_columns(
        outcome(pl.col("label"), pl.col("gold")).alias("ok"),
        outcome(pl.col("label_base"), pl.col("gold")).alias("ok_base"),
    )
    n = both.height
    tests = {}
    for subset in ["all", *sorted(both["subset"].drop_nulls().unique().to_list())]:
        part = both if subset == "all" else both.filter(pl.col("subset") == subset)
        scored = part.drop_nulls(["ok", "ok_base"])
        b = scored.filter(pl.col("ok") & ~pl.col("ok_base")).height  # better now
        c = scored.filter(~pl.col("ok") & pl.col("ok_base")).height  # worse now
        tests[(suite, subset, "outcome")] = mcnemar_p(b, c)
        labelled = part.drop_nulls(["label", "label_base"])
        tests[(suite, subset, "labels")] = stuart_maxwell_p(labelled["label_base"].to_list(), labelled["label"].to_list())
        if subset == "all":
            better, worse = b, c
    flips = both.filter(pl.col("label") != pl.col("label_base"))
    text_changed = both.filter(pl.col("translation") != pl.col("translation_base")).height
    share = flips.height / n if n else 0.0
    info = {"suite": suite, "items": n, "flipped": flips.height, "flipped_share": share, "better": better,
            "worse": worse, "mcnemar_p": tests[(suite, "all", "outcome")], "mcnemar_p_adjusted": None,
            "labels_p": tests[(suite, "all", "labels")], "text_changed_share": text_changed / n if n else 0.0,
            "detectable_change": detectable_change(n, monitor.alpha, monitor.power, monitor.churn),
            "significant": False}
    flips = flips.select("item_id", "subset", "source", "translation_base", "translation", "label_base", "label",
                         pl.lit(suite).alias("suite"))
    return info, flips, tests


def judge(systems: list[SystemDrift], monitor: MonitorConfig) -> int:
    """The run's family of tests (every distinct test behind a watched metric, and each suite's
    McNemar test) corrected together; marks significant changes and each system's status in place.
    Returns the family's size."""
    family: dict[tuple[str, str, str, str], float] = {}
    for s in systems:
        if s.changes is None:
            continue
        watched = s.changes.filter(pl.col("metric").is_in(list(monitor.watch)) & pl.col("p").is_not_nan())
        for r in watched.select("suite", "subset", "test", "p").iter_rows():
            family[(s.system, *r[:3])] = r[3]
        for i in s.suites:
            family[(s.system, i["suite"], "all", "outcome")] = i["mcnemar_p"]
    keys = list(family)
    adjusted = dict(zip(keys, adjust([family[k] for k in keys], monitor.correction)))
    for s in systems:
        if s.changes is None:
            continue
        mine = {k[1:]: v for k, v in adjusted.items() if k[0] == s.system}
        table = pl.DataFrame([{"suite": k[0], "subset": k[1], "test": k[2], "p_adjusted": v} for k, v in mine.items()],
                             schema={"suite": pl.String, "subset": pl.String, "test": pl.String,
                                     "p_adjusted": pl.Float64})
        s.changes = s.changes.drop("p_adjusted").join(table, on=["suite", "subset", "test"], how="left").with_columns(
            (pl.col("metric").is_in(list(monitor.watch)) & (pl.col("p_adjusted") < monitor.alpha)
             & (pl.col("change").abs() >= monitor.threshold)).fill_null(False).alias("significant")
        ).select(list(CHANGE_SCHEMA))
        for i in s.suites:
            i["mcnemar_p_adjusted"] = mine[(i["suite"], "all", "outcome")]
            i["significant"] = i["mcnemar_p_adjusted"] < monitor.alpha and i["flipped_share"] >= monitor.threshold
        drift = bool(s.changes["significant"].any()) or any(i["significant"] for i in s.suites)
        s.status = "drift" if drift else "ok"
    return len(keys)
