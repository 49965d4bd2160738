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

from biaseval.metrics.wilson import wilson_interval
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


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _cell(value: float | None, low: float | None, high: float | None) -> str:
    return "—" if value is None else f"{_pct(value)} [{_pct(low)}, {_pct(high)}]"


def points(delta: float | None) -> str:
    """A difference of two shares, in points with its sign ("—" where one side is missing)."""
    return "—" if delta is None else f"{100 * delta:+.1f}"


def adjective_section(metrics: pl.DataFrame) -> list[str]:
    """The table as Markdown (nothing when the run has no ``winomt-en-adj``)."""
    table = adjective_table(metrics)
    if table.height == 0:
        return []
    lines = ["## WinoMT: the adjective experiment", "",
             "The anti-stereotypical sentences, translated as they are and with an adjective of the entity's gold "
             "gender before it (\"the pretty developer\", \"the handsome nurse\"; Stanovsky et al. 2019, §3.3, "
             "Table 4). *Anti sentences*: Acc on the same sentences without and with the adjective (paired), in "
             "percent with 95% Wilson intervals. *Whole set*: the paper's comparison, Acc on all sentences "
             "(Table 4's \"original\") and on all sentences with the anti ones replaced by their adjective versions "
             "(\"+adj\"), with Wilson intervals. Δ = with − without, in points (positive: the adjective helped).", "",
             "| language | system | anti: Acc without | anti: Acc with | Δ | whole set: Acc | whole set, +adj: Acc "
             "| Δ | n without | n with |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in table.iter_rows(named=True):
        without = (f"{_pct(r['acc_without'])} [{_pct(r['without_low'])}, {_pct(r['without_high'])}]"
                   if r["acc_without"] is not None else "—")
        lines.append(row(r["language"], r["system"], without,
                         f"{_pct(r['acc_with'])} [{_pct(r['with_low'])}, {_pct(r['with_high'])}]", points(r["delta"]),
                         _cell(r["acc_all"], r["all_low"], r["all_high"]),
                         _cell(r["acc_replaced"], r["replaced_low"], r["replaced_high"]), points(r["delta_replaced"]),
                         r["n_without"] if r["n_without"] is not None else "—", r["n_with"]))
    return lines + [""]

