"""WinoMT's adjective experiment in report.md: per system × target language, accuracy on the
anti-stereotypical sentences without the adjective (suite ``winomt-en``, subset ``<lang>/anti``) and
with it (``winomt-en-adj``, the same sentences with "handsome"/"pretty" before the entity, agreeing
with its gold gender). Pure: metrics frame in, rows and Markdown out.
"""

from __future__ import annotations

import polars as pl

from biaseval.report.escape import row

WITHOUT, WITH = "winomt-en", "winomt-en-adj"
ANTI = pl.col("subset").str.contains(r"^[a-z]{2,3}/anti$")


def adjective_table(metrics: pl.DataFrame) -> pl.DataFrame:
    """One row per system × language the run scored with the adjective: ``acc_with`` (its interval
    ``with_low``/``with_high``, ``n_with``), ``acc_without`` (likewise, null where the run lacks
    ``winomt-en`` for that system and language) and ``delta`` = with − without (fractions)."""
    acc = metrics.filter(pl.col("suite").is_in([WITHOUT, WITH]) & ANTI & (pl.col("metric") == "acc"))
    acc = acc.with_columns(pl.col("subset").str.split("/").list.first().alias("language"))

    def side(suite: str, name: str) -> pl.DataFrame:
        return acc.filter(pl.col("suite") == suite).select(
            "system", "language", pl.col("value").alias(f"acc_{name}"), pl.col("ci_low").alias(f"{name}_low"),
            pl.col("ci_high").alias(f"{name}_high"), pl.col("n").alias(f"n_{name}"))

    with_adj = side(WITH, "with")
    if with_adj.height == 0:
        return pl.DataFrame()
    return (with_adj.join(side(WITHOUT, "without"), on=["system", "language"], how="left")
            .with_columns((pl.col("acc_with") - pl.col("acc_without")).alias("delta"))
            .sort("language", "system"))


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def adjective_section(metrics: pl.DataFrame) -> list[str]:
    """The table as Markdown (nothing when the run has no ``winomt-en-adj``)."""
    table = adjective_table(metrics)
    if table.height == 0:
        return []
    lines = ["## WinoMT: the adjective experiment", "",
             "The anti-stereotypical sentences, translated as they are and with an adjective of the entity's gold "
             "gender before it (\"the pretty developer\", \"the handsome nurse\"; Stanovsky et al. 2019, section 4). "
             "Acc in percent with 95% Wilson intervals; Δ = with − without, in points (positive: the adjective "
             "helped).", "",
             "| language | system | Acc without | Acc with | Δ | n without | n with |", "|---|---|---|---|---|---|---|"]
    for r in table.iter_rows(named=True):
        without = (f"{_pct(r['acc_without'])} [{_pct(r['without_low'])}, {_pct(r['without_high'])}]"
                   if r["acc_without"] is not None else "—")
        delta = "—" if r["delta"] is None else f"{100 * r['delta']:+.1f}"
        lines.append(row(r["language"], r["system"], without,
                         f"{_pct(r['acc_with'])} [{_pct(r['with_low'])}, {_pct(r['with_high'])}]", delta,
                         r["n_without"] if r["n_without"] is not None else "—", r["n_with"]))
    return lines + [""]

