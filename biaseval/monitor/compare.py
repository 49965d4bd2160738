"""Comparing one system with its baseline: each metric's change with its interval (MOVER); per system
× suite × subset group of items the paired tests (McNemar on the outcome, marginal homogeneity on the
labels) with the list of flipped labels; and the run's verdict, judged over its whole family of
tests. ``compare_items`` and ``judge`` are pure: the calibration simulation (``calibration.py``)
runs them as a monitoring run does."""

from __future__ import annotations

import numpy as np
import polars as pl

from biaseval.config import MonitorConfig
from biaseval.metrics.paired import mcnemar_p, outcome
from biaseval.metrics.wilson import mover
from biaseval.monitor.stats import LABEL_METRICS, OUTCOME_METRICS, adjust, label_tests, wald_p
from biaseval.monitor.verdict import SystemDrift
from biaseval.run.rundir import RunDir, system_folder
from biaseval.suites.power import detectable_shift, item_groups, level_per_test

CHANGE_SCHEMA = {"suite": pl.String, "subset": pl.String, "metric": pl.String, "value": pl.Float64,
                 "baseline_value": pl.Float64, "change": pl.Float64, "change_low": pl.Float64,
                 "change_high": pl.Float64, "test": pl.String, "p": pl.Float64, "p_adjusted": pl.Float64,
                 "significant": pl.Boolean}
ITEM_COLUMNS = ["item_id", "subset", "tgt_lang", "occupation", "source", "translation", "gold"]


def metric_changes(current: pl.DataFrame, baseline: pl.DataFrame, tests: dict[tuple[str, str, str], float],
                   confidence: float = 0.95) -> pl.DataFrame:
    """Per metric: its change with the MOVER interval, and the test it belongs to with that test's raw
    p. ``tests``: (suite, subset, "labels" or "outcome") -> p, for every group with paired items; a
    metric of the label distribution (``LABEL_METRICS``) or Acc in such a group takes its group's
    test, any other metric the Wald p of its interval (``interval:<metric>``). Significance is judged
    later, over the run's whole family (``judge``)."""
    keys = ["suite", "subset", "metric"]
    cols = ["value", "ci_low", "ci_high"]
    cur = current.filter(~pl.col("subset").str.starts_with("vs/")).select(*keys, *cols)
    base = baseline.filter(~pl.col("subset").str.starts_with("vs/")).select(*keys, *[pl.col(c).alias(f"{c}_base") for c in cols])
    joined = cur.join(base, on=keys, how="inner", maintain_order="left").with_columns(
        (pl.col("value") - pl.col("value_base")).alias("change"))
    d = joined["change"].to_numpy()
    low, high = mover(d, tuple(joined[c].to_numpy() for c in cols), tuple(joined[f"{c}_base"].to_numpy() for c in cols))
    kind = (pl.when(pl.col("metric").is_in(list(LABEL_METRICS))).then(pl.lit("labels"))
            .when(pl.col("metric").is_in(list(OUTCOME_METRICS))).then(pl.lit("outcome")).otherwise(pl.lit(None)))
    paired = pl.DataFrame([(s, g, k, p) for (s, g, k), p in tests.items()],
                          schema={"suite": pl.String, "subset": pl.String, "kind": pl.String, "p_paired": pl.Float64},
                          orient="row")
    out = (joined.with_columns(kind.alias("kind"), pl.Series("change_low", low), pl.Series("change_high", high),
                               pl.Series("p_interval", np.atleast_1d(wald_p(d, low, high, confidence))))
           .join(paired, on=["suite", "subset", "kind"], how="left", maintain_order="left"))
    return out.select(
        *keys, "value", pl.col("value_base").alias("baseline_value"), "change", "change_low", "change_high",
        pl.when(pl.col("p_paired").is_not_null()).then(pl.col("kind"))
        .otherwise(pl.lit("interval:") + pl.col("metric")).alias("test"),
        pl.coalesce("p_paired", "p_interval").alias("p"), pl.lit(None, dtype=pl.Float64).alias("p_adjusted"),
        pl.lit(False).alias("significant"),
    ).cast(CHANGE_SCHEMA)


def suite_items(run: RunDir, system: str, suite: str) -> pl.DataFrame:
    """``ITEM_COLUMNS`` and the label of one system's outputs for one suite."""
    shards = run.shard_files(f"{system_folder(system)}/suite={suite}")
    texts = run.read_shards(shards, columns=ITEM_COLUMNS)
    labels = pl.scan_parquet(run.labels).filter((pl.col("system") == system) & (pl.col("suite") == suite)) \
        .select("item_id", "label").collect()
    return texts.join(labels, on="item_id", how="left")


def item_drift(current: RunDir, system: str, baseline: RunDir, base_system: str, suite: str,
               monitor: MonitorConfig) -> tuple[dict, pl.DataFrame, dict[tuple[str, str, str], float]]:
    """One suite's items in the two runs, compared (``compare_items``)."""
    cur = suite_items(current, system, suite)
    base = suite_items(baseline, base_system, suite).select(
        "item_id", pl.col("translation").alias("translation_base"), pl.col("label").alias("label_base"))
    return compare_items(cur.join(base, on="item_id", how="inner"), suite, monitor)


def compare_items(both: pl.DataFrame, suite: str, monitor: MonitorConfig
                  ) -> tuple[dict, pl.DataFrame, dict[tuple[str, str, str], float]]:
    """The items both runs translated (``ITEM_COLUMNS``, label, translation_base, label_base): the
    flips, and per group (``item_groups``) with items labelled in both runs the raw p of its labels
    test (marginal homogeneity, ``stats.label_tests``) and of its outcome test (McNemar)."""
    both = both.with_columns(outcome(pl.col("label"), pl.col("gold")).alias("ok"),
                             outcome(pl.col("label_base"), pl.col("gold")).alias("ok_base"))
    n = both.height
    paired = both.drop_nulls(["label", "label_base"])  # outcomes are null exactly where labels are
    members = item_groups(paired)
    flipped = paired.filter(pl.col("label") != pl.col("label_base"))
    flows = (flipped.join(members, on="item_id").group_by("group", "label_base", "label").len("n")
             .rename({"label_base": "before", "label": "after"}))
    labels_p = label_tests(flows)
    counts = (members.join(paired.select("item_id", "ok", "ok_base"), on="item_id").group_by("group", maintain_order=True)
              .agg((pl.col("ok") & ~pl.col("ok_base")).sum().alias("better"),
                   (~pl.col("ok") & pl.col("ok_base")).sum().alias("worse")))
    outcome_p = np.atleast_1d(mcnemar_p(counts["better"].to_numpy(), counts["worse"].to_numpy()))
    tests = {}
    for group, p in zip(counts["group"].to_list(), outcome_p.tolist()):
        tests[(suite, group, "labels")] = labels_p.get(group, 1.0)
        tests[(suite, group, "outcome")] = p
    whole = counts.filter(pl.col("group") == "all")
    better, worse = (int(whole["better"][0]), int(whole["worse"][0])) if whole.height else (0, 0)
    flips = both.filter(pl.col("label") != pl.col("label_base"))
    text_changed = both.filter(pl.col("translation") != pl.col("translation_base")).height
    share = flips.height / n if n else 0.0
    info = {"suite": suite, "items": n, "flipped": flips.height, "flipped_share": share, "better": better,
            "worse": worse, "mcnemar_p": tests.get((suite, "all", "outcome"), 1.0), "mcnemar_p_adjusted": None,
            "labels_p": tests.get((suite, "all", "labels"), 1.0), "text_changed_share": text_changed / n if n else 0.0,
            "detectable_change": None, "significant": False}  # the detectable change: ``judge``, at the family's level
    flips = flips.select("item_id", "subset", "source", "translation_base", "translation", "label_base", "label",
                         pl.lit(suite).alias("suite"))
    return info, flips, tests


def family(systems: list[SystemDrift], watch: tuple[str, ...]) -> dict[tuple[str, str, str, str], float]:
    """The run's family: (system, suite, subset, test) -> raw p of every distinct test behind a watched
    metric, and each suite's outcome test on all its items (its alarm). Its size is the number of
    system × suite × subset groups with paired data behind a watched metric (one test per kind:
    labels, outcome) plus the watched metrics with no paired form."""
    tests: dict[tuple[str, str, str, str], float] = {}
    for s in systems:
        if s.changes is None:
            continue
        watched = s.changes.filter(pl.col("metric").is_in(list(watch)) & pl.col("p").is_not_nan())
        for r in watched.select("suite", "subset", "test", "p").iter_rows():
            tests[(s.system, *r[:3])] = r[3]
        for i in s.suites:
            tests[(s.system, i["suite"], "all", "outcome")] = i["mcnemar_p"]
    return tests


def judge(systems: list[SystemDrift], monitor: MonitorConfig) -> int:
    """The run's family of tests (``family``) corrected together; marks significant changes and each
    system's status in place, and gives each suite its detectable change: the smallest one-way shift
    of its outcome that its McNemar test finds with probability ``power`` at the family's level —
    alpha / (the family's size), which Holm and BH reject whenever Bonferroni does, so the alarm
    comes at least that often (``alpha`` itself without correction) — and never below ``threshold``,
    which a change must reach to count. Returns the family's size."""
    tests = family(systems, monitor.watch)
    keys = list(tests)
    level = level_per_test(monitor.alpha, len(keys), monitor.correction)
    adjusted = dict(zip(keys, adjust([tests[k] for k in keys], monitor.correction)))
    for s in systems:
        if s.changes is None:
            continue
        mine = {k[1:]: v for k, v in adjusted.items() if k[0] == s.system}
        table = pl.DataFrame([{"suite": k[0], "subset": k[1], "test": k[2], "p_adjusted": v} for k, v in mine.items()],
                             schema={"suite": pl.String, "subset": pl.String, "test": pl.String,
                                     "p_adjusted": pl.Float64})
        s.changes = s.changes.drop("p_adjusted").join(table, on=["suite", "subset", "test"], how="left",
                                                      maintain_order="left").with_columns(
            (pl.col("metric").is_in(list(monitor.watch)) & (pl.col("p_adjusted") < monitor.alpha)
             & (pl.col("change").abs() >= monitor.threshold)).fill_null(False).alias("significant")
        ).select(list(CHANGE_SCHEMA))
        for i in s.suites:
            i["mcnemar_p_adjusted"] = mine[(i["suite"], "all", "outcome")]
            i["significant"] = i["mcnemar_p_adjusted"] < monitor.alpha and i["flipped_share"] >= monitor.threshold
            shift = detectable_shift(i["items"], level, monitor.power, monitor.churn)
            i["detectable_change"] = max(shift, monitor.threshold) if shift == shift else shift
        drift = bool(s.changes["significant"].any()) or any(i["significant"] for i in s.suites)
        s.status = "drift" if drift else "ok"
    return len(keys)
