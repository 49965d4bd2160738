"""How the intervals a table or a figure shows were made, in words, from the metric rows' own record
of it (columns ``interval``, ``resamples``, ``seed``, written by ``metrics/tidy.py``): every caption,
note and header of both reports that names an interval method is written here from the rows it
describes, never by hand, so it cannot name a method the rows do not use.

A run scored before the rows carried the record has no ``interval`` column: its captions say that
the method is not recorded (rescoring the run writes it).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from biaseval.metrics.tidy import BOOTSTRAP, INTERVALS, NEWCOMBE, NEWCOMBE_PAIRED, WILSON

NAMES = {
    WILSON: "Wilson's score interval",
    NEWCOMBE_PAIRED: "Newcombe's interval for a difference of paired shares",
    NEWCOMBE: "Newcombe's hybrid score interval for a difference of independent shares",
    BOOTSTRAP: "percentile bootstrap over items",
}
# The words by which a text names each method (what tests/test_report_captions.py looks for).
KEYWORDS = {WILSON: "Wilson", NEWCOMBE_PAIRED: "Newcombe", NEWCOMBE: "Newcombe", BOOTSTRAP: "bootstrap"}
# How the reports name a metric in a caption's list of methods (others by their own name).
METRIC_NAMES = {"acc": "Acc", "delta_g": "ΔG", "delta_s": "ΔS", "tgbi": "TGBI", "neutral": "N",
                "f1_male": "F1 male", "f1_female": "F1 female", "macro_f1": "macro-F1",
                "r_female_share": "Pearson r", "rho_female_share": "Spearman ρ"}
NOT_RECORDED = ("how the intervals were made is not recorded in this run's metrics.parquet (scored by an "
                "older biaseval); `biaseval score --run DIR` records it")


@dataclass(frozen=True)
class Method:
    interval: str
    resamples: int | None
    seed: int | None
    metrics: tuple[str, ...]  # the metrics shown with it, in the order first met

    @property
    def text(self) -> str:
        name = NAMES.get(self.interval, self.interval)
        if self.interval == BOOTSTRAP:
            name += f", {self.resamples:,} resamples, seed {self.seed}"
        return name


def recorded(rows: pl.DataFrame) -> bool:
    return "interval" in rows.columns


def methods(rows: pl.DataFrame) -> list[Method]:
    """The methods of the rows' intervals (rows without one left out), each with the metrics it made
    intervals for; in the order of INTERVALS."""
    if not recorded(rows) or rows.height == 0:
        return []
    extra = [c for c in ("resamples", "seed") if c not in rows.columns]
    part = rows.with_columns([pl.lit(None, dtype=pl.Int64).alias(c) for c in extra]).filter(
        pl.col("interval").is_not_null() & pl.col("ci_low").is_not_nan().fill_null(False))
    found: dict[tuple, list[str]] = {}
    distinct = part.select("interval", "resamples", "seed", "metric").unique(maintain_order=True)
    for interval, resamples, seed, metric in distinct.iter_rows():
        names = found.setdefault((interval, resamples, seed), [])
        if metric not in names:
            names.append(metric)
    order = {m: k for k, m in enumerate(INTERVALS)}
    return [Method(i, r, s, tuple(ms)) for (i, r, s), ms in sorted(found.items(), key=lambda kv: (order.get(kv[0][0], 99),
                                                                                                    kv[0][1] or 0))]


def used(rows: pl.DataFrame) -> set[str]:
    """The interval methods of the rows (names of INTERVALS)."""
    return {m.interval for m in methods(rows)}


def describe(rows: pl.DataFrame, confidence: str = "95%", label=None) -> str:
    """The intervals of ``rows`` in one sentence: "95% intervals: Wilson's score interval (Acc,
    unknown); Newcombe's interval for a difference of paired shares (ΔS)." ``label`` names a metric as
    the table does (default: its name); the metrics are listed only where several methods are used."""
    if not recorded(rows):
        return f"{confidence} intervals; {NOT_RECORDED}."
    found = methods(rows)
    if not found:
        return "No intervals."
    name = label or (lambda metric: METRIC_NAMES.get(metric, metric))
    if len(found) == 1:
        return f"{confidence} intervals: {found[0].text}."
    parts = [f"{m.text} ({', '.join(dict.fromkeys(name(x) for x in m.metrics))})" for m in found]
    return f"{confidence} intervals: " + "; ".join(parts) + "."


SHORT = {WILSON: "Wilson", NEWCOMBE_PAIRED: "Newcombe, paired", NEWCOMBE: "Newcombe", BOOTSTRAP: "bootstrap"}


def short(row: dict) -> str:
    """One row's interval method in a table cell: "Wilson", "Newcombe, paired", "bootstrap 1,000 ×,
    seed 2019"; "—" for a row without one, "not recorded" for a row of an older run."""
    if "interval" not in row:
        return "not recorded"
    interval = row["interval"]
    if interval is None:
        return "—"
    if interval == BOOTSTRAP:
        return f"bootstrap {row.get('resamples') or 0:,} ×, seed {row.get('seed')}"
    return SHORT.get(interval, interval)


def confidence_text(config: dict) -> str:
    """The configured confidence level as the reports write it ("95%")."""
    return f"{round(100 * float((config.get('metrics') or {}).get('confidence', 0.95)))}%"
