"""WinoMT's adjective experiment (Stanovsky et al. 2019, §3.3, Table 4) in the reports: per system ×
target language, two comparisons.

- Paired: accuracy on the anti-stereotypical sentences without the adjective (suite ``winomt-en``,
  subset ``<lang>/anti``) and with it (``winomt-en-adj``, the same sentences with "handsome"/"pretty"
  before the entity, agreeing with its gold gender).
- The paper's: accuracy on the whole set (``winomt-en``, subset ``<lang>``: Table 4's "original",
  Table 2's Acc) and on the whole set with its anti-stereotypical sentences replaced by their
  adjective versions (Table 4's "+adj"), from the counts: right answers of the whole set, less those
  of the anti sentences, plus those of the adjective sentences, over the items so counted. Each Acc
  has Wilson's interval, as every share; the difference of the two is a point value (they share
  most of their items, and no paired interval of such an overlap is computed here).

Pure: metrics frame in, rows and Markdown out.
"""

from __future__ import annotations

import polars as pl

from biaseval.metrics.tidy import WILSON
from biaseval.metrics.wilson import wilson_interval
from biaseval.report import methods, numbers
from biaseval.report.escape import row

WITHOUT, WITH = "winomt-en", "winomt-en-adj"
ANTI = pl.col("subset").str.contains(r"^[a-z]{2,3}/anti$")


def adjective_table(metrics: pl.DataFrame) -> pl.DataFrame:
    """One row per system × language the run scored with the adjective: ``acc_with`` (its interval
    ``with_low``/``with_high``, ``n_with``), ``acc_without`` (likewise, null where the run lacks
    ``winomt-en`` for that system and language) and ``delta`` = with − without (fractions); the
    paper's comparison: ``acc_all`` (``n_all``: the whole set), ``acc_replaced`` (``n_replaced``:
    the whole set with the anti sentences replaced by their adjective versions) and
    ``delta_replaced`` (null where the run lacks the whole set's Acc)."""
    acc = metrics.filter(pl.col("suite").is_in([WITHOUT, WITH]) & ANTI & (pl.col("metric") == "acc"))
    acc = acc.with_columns(pl.col("subset").str.split("/").list.first().alias("language"))
    whole = metrics.filter((pl.col("suite") == WITHOUT) & pl.col("subset").str.contains(r"^[a-z]{2,3}$")
                           & (pl.col("metric") == "acc")).select(
        "system", pl.col("subset").alias("language"), pl.col("value").alias("acc_all"), pl.col("n").alias("n_all"),
        pl.col("ci_low").alias("all_low"), pl.col("ci_high").alias("all_high"))

    def side(suite: str, name: str) -> pl.DataFrame:
        return acc.filter(pl.col("suite") == suite).select(
            "system", "language", pl.col("value").alias(f"acc_{name}"), pl.col("ci_low").alias(f"{name}_low"),
            pl.col("ci_high").alias(f"{name}_high"), pl.col("n").alias(f"n_{name}"))

    with_adj = side(WITH, "with")
    if with_adj.height == 0:
        return pl.DataFrame()
    def right(value: str, n: str) -> pl.Expr:  # a count of right answers, back from its share
        return (pl.col(value) * pl.col(n)).round(0)

    n_replaced = pl.col("n_all") - pl.col("n_without") + pl.col("n_with")
    table = (with_adj.join(side(WITHOUT, "without"), on=["system", "language"], how="left")
            .join(whole, on=["system", "language"], how="left")
            .with_columns((pl.col("acc_with") - pl.col("acc_without")).alias("delta"),
                          ((right("acc_all", "n_all") - right("acc_without", "n_without") + right("acc_with", "n_with"))
                           / n_replaced).alias("acc_replaced"), n_replaced.alias("n_replaced"))
            .with_columns((pl.col("acc_replaced") - pl.col("acc_all")).alias("delta_replaced"))
            .sort("language", "system"))
    low, high = wilson_interval(table["acc_replaced"].to_numpy(), table["n_replaced"].to_numpy())
    return table.with_columns(pl.Series("replaced_low", low), pl.Series("replaced_high", high))


def _cell(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "—"
    ci = numbers.interval(low, high, "acc")
    return numbers.share(value) + (f" {ci}" if ci else "")


def shown_rows(metrics: pl.DataFrame) -> pl.DataFrame:
    """The metric rows the table shows (for its caption's methods)."""
    whole = (pl.col("suite") == WITHOUT) & pl.col("subset").str.contains(r"^[a-z]{2,3}$")
    return metrics.filter(((pl.col("suite").is_in([WITHOUT, WITH]) & ANTI) | whole) & (pl.col("metric") == "acc"))


def note(metrics: pl.DataFrame, confidence: str = "95%") -> str:
    """What the table holds; the intervals of the scored rows from their record, and the one computed here."""
    return ("The anti-stereotypical sentences, translated as they are (suite winomt-en) and with an adjective of the "
            "entity's gold gender before it (winomt-en-adj: \"the pretty developer\", \"the handsome nurse\"; "
            "Stanovsky et al. 2019, §3.3, Table 4). Anti sentences: Acc on the same sentences without and with the "
            "adjective (paired). Whole set: the paper's comparison, Acc on all sentences (Table 4's \"original\") "
            "and on all sentences with the anti ones replaced by their adjective versions (\"+adj\"). Acc in "
            "percent; Δ = with − without, in percentage points (positive: the adjective helped). "
            + methods.describe(shown_rows(metrics), confidence)
            + f" The whole set with the adjective versions: {methods.NAMES[WILSON]} of its counts, computed here.")


def adjective_section(metrics: pl.DataFrame, confidence: str = "95%") -> list[str]:
    """The table as Markdown (nothing when the run has no ``winomt-en-adj``)."""
    table = adjective_table(metrics)
    if table.height == 0:
        return []
    lines = ["## WinoMT: the adjective experiment", "", note(metrics, confidence), "",
             "| language | system | anti: Acc without (%) | anti: Acc with (%) | Δ (pp) | whole set: Acc (%) "
             "| whole set, +adj: Acc (%) | Δ (pp) | n without | n with |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in table.iter_rows(named=True):
        lines.append(row(r["language"], r["system"], _cell(r["acc_without"], r["without_low"], r["without_high"]),
                         _cell(r["acc_with"], r["with_low"], r["with_high"]), numbers.points(r["delta"]),
                         _cell(r["acc_all"], r["all_low"], r["all_high"]),
                         _cell(r["acc_replaced"], r["replaced_low"], r["replaced_high"]),
                         numbers.points(r["delta_replaced"]), numbers.count(r["n_without"]),
                         numbers.count(r["n_with"])))
    return lines + [""]
