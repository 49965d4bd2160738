"""Comparing one system with its baseline: each metric's change with its interval (MOVER), and per
suite McNemar's test on the items' outcome with the list of flipped labels."""

from __future__ import annotations

import math

import polars as pl

from biaseval.config import MonitorConfig
from biaseval.metrics.paired import mcnemar_p, outcome
from biaseval.run.rundir import RunDir, system_folder


def mover(d: float, cur: tuple[float, float, float], base: tuple[float, float, float]) -> tuple[float, float]:
    """Interval of a difference of two independent estimates from their own intervals (MOVER)."""
    v_c, l_c, u_c = cur
    v_b, l_b, u_b = base
    if any(x is None or (isinstance(x, float) and math.isnan(x)) for x in (*cur, *base)):
        return float("nan"), float("nan")
    return d - math.sqrt((v_c - l_c) ** 2 + (u_b - v_b) ** 2), d + math.sqrt((u_c - v_c) ** 2 + (v_b - l_b) ** 2)


def metric_changes(current: pl.DataFrame, baseline: pl.DataFrame, monitor: MonitorConfig) -> pl.DataFrame:
    keys = ["suite", "subset", "metric"]
    cols = ["value", "ci_low", "ci_high", "n"]
    cur = current.filter(~pl.col("subset").str.starts_with("vs/")).select(*keys, *cols)
    base = baseline.filter(~pl.col("subset").str.starts_with("vs/")).select(*keys, *[pl.col(c).alias(f"{c}_base") for c in cols])
    joined = cur.join(base, on=keys, how="inner")
    rows = []
    for r in joined.iter_rows(named=True):
        d = r["value"] - r["value_base"]
        low, high = mover(d, (r["value"], r["ci_low"], r["ci_high"]), (r["value_base"], r["ci_low_base"], r["ci_high_base"]))
        significant = (r["metric"] in monitor.watch and not math.isnan(low) and (low > 0 or high < 0)
                       and abs(d) >= monitor.threshold)
        rows.append({**{k: r[k] for k in keys}, "value": r["value"], "baseline_value": r["value_base"], "change": d,
                     "change_low": low, "change_high": high, "significant": significant})
    return pl.DataFrame(rows, schema={"suite": pl.String, "subset": pl.String, "metric": pl.String, "value": pl.Float64,
                                      "baseline_value": pl.Float64, "change": pl.Float64, "change_low": pl.Float64,
                                      "change_high": pl.Float64, "significant": pl.Boolean})


def suite_items(run: RunDir, system: str, suite: str) -> pl.DataFrame:
    """item_id, subset, source, translation, label, gold of one system's outputs for one suite."""
    shards = run.shard_files(f"{system_folder(system)}/suite={suite}")
    texts = run.read_shards(shards, columns=["item_id", "subset", "source", "translation", "gold"])
    labels = pl.scan_parquet(run.labels).filter((pl.col("system") == system) & (pl.col("suite") == suite)) \
        .select("item_id", "label").collect()
    return texts.join(labels, on="item_id", how="left")


def item_drift(current: RunDir, system: str, baseline: RunDir, base_system: str, suite: str,
               monitor: MonitorConfig) -> tuple[dict, pl.DataFrame]:
    cur = suite_items(current, system, suite)
    base = suite_items(baseline, base_system, suite).select(
        "item_id", pl.col("translation").alias("translation_base"), pl.col("label").alias("label_base"))
    both = cur.join(base, on="item_id", how="inner").with_columns(
        outcome(pl.col("label"), pl.col("gold")).alias("ok"),
        outcome(pl.col("label_base"), pl.col("gold")).alias("ok_base"),
    )
    n = both.height
    scored = both.drop_nulls(["ok", "ok_base"])
    b = scored.filter(pl.col("ok") & ~pl.col("ok_base")).height  # better now
    c = scored.filter(~pl.col("ok") & pl.col("ok_base")).height  # worse now
    flips = both.filter(pl.col("label") != pl.col("label_base"))
    text_changed = both.filter(pl.col("translation") != pl.col("translation_base")).height
    p = mcnemar_p(b, c)
    share = flips.height / n if n else 0.0
    info = {"suite": suite, "items": n, "flipped": flips.height, "flipped_share": share, "better": b, "worse": c,
            "mcnemar_p": p, "text_changed_share": text_changed / n if n else 0.0,
            "significant": p < monitor.alpha and share >= monitor.threshold}
    flips = flips.select("item_id", "subset", "source", "translation_base", "translation", "label_base", "label",
                         pl.lit(suite).alias("suite"))
    return info, flips
