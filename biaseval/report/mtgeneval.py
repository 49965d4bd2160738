"""MT-GenEval in the report, in the shape of the paper's tables: per target language, accuracy on the
feminine and on the masculine items and the gap between them (``biaseval/metrics/mtgeneval.py``);
beside them what the paper's script prints for the language, and the share of outputs the metric
could not see (right only for lack of either reference's words).

Also what ``biaseval mtgeneval`` prints: the lines whose two references leave nothing to decide, and
the analysers measured against the tagged references (``biaseval/metrics/mtgeneval_labeller.py``)."""

from __future__ import annotations

import polars as pl

from biaseval.report import methods, numbers
from biaseval.report.escape import md, row

MARK = "undecided"  # a metric only MT-GenEval suites have
COLUMNS = [("feminine", "acc"), ("masculine", "acc"), ("", "delta_g"), ("", "acc"), ("feminine", "undecided"),
           ("masculine", "undecided")]


def mtgeneval_suites(metrics: pl.DataFrame) -> list[str]:
    """The suites of a run scored by the MT-GenEval scorer, in their order in ``metrics``."""
    return metrics.filter(pl.col("metric") == MARK)["suite"].unique(maintain_order=True).to_list()


def _cell(metric: dict | None) -> str:
    if metric is None or metric["value"] is None:
        return "—"
    shown = numbers.number(metric["value"], metric["metric"])
    ci = numbers.interval(metric.get("ci_low"), metric.get("ci_high"), metric["metric"])
    return f"{shown} {ci}" if ci else shown


def rows_of(metrics: pl.DataFrame, suite: str) -> list[dict]:
    """One row per target language × system of an MT-GenEval suite, in the paper's shape: Acc on the
    feminine and on the masculine items, the gap, Acc as the paper's script prints it, the undecided
    shares (each a metric row, or None) and n."""
    part = metrics.filter(pl.col("suite") == suite)
    cells = {(r["system"], r["subset"], r["metric"]): r for r in part.iter_rows(named=True)}
    languages = _languages(part)
    systems = sorted(part["system"].unique().to_list())
    out = []
    for lang in languages:
        for system in systems:
            found = [cells.get((system, f"{lang}/{g}" if g else lang, m)) for g, m in COLUMNS]
            if any(found):  # else a system that does not translate into this language
                out.append({"language": lang, "system": system, "cells": found,
                            "n": cells.get((system, lang, "acc"), {}).get("n")})
    return out


def _languages(part: pl.DataFrame) -> list[str]:
    return sorted({s for s in part["subset"].to_list() if "/" not in s})


def shown_rows(metrics: pl.DataFrame, suite: str) -> pl.DataFrame:
    """The metric rows the suite's table shows (for its caption's methods)."""
    part = metrics.filter(pl.col("suite") == suite)
    keys = pl.DataFrame([(f"{lang}/{g}" if g else lang, m) for lang in _languages(part) for g, m in COLUMNS],
                        schema={"subset": pl.String, "metric": pl.String}, orient="row")
    return part.join(keys, on=["subset", "metric"], how="semi")


LABELS = {"acc": "Acc", "delta_g": "ΔG", "undecided": "undecided"}


def note(metrics: pl.DataFrame, suite: str, confidence: str = "95%") -> str:
    """What the suite's table holds, its intervals from the rows' own record."""
    paired = "contextual" not in suite
    overall = "both right" if paired else "all"
    return ("Acc: outputs without a word that only the counterfactual reference has (the paper's metric), on "
            "the feminine and on the masculine items; ΔG = Acc(masculine) − Acc(feminine)"
            + (" over the same sentences (each sentence's two versions one unit)" if paired else
               " between the sets of items whose English context says she or he")
            + f"; Acc ({overall}): what the paper's script prints"
            + (" (a sentence counts when both its versions are right)" if paired else "")
            + "; undecided: outputs right only because they hold neither reference's unique words. "
            "Shares in percent, ΔG in percentage points (pp). "
            + methods.describe(shown_rows(metrics, suite), confidence, LABELS.get))


def mtgeneval_section(metrics: pl.DataFrame, confidence: str = "95%") -> list[str]:
    """One table per MT-GenEval suite of the run (empty without one)."""
    lines: list[str] = []
    for suite in mtgeneval_suites(metrics):
        overall = "both right" if "contextual" not in suite else "all"
        lines += [f"## MT-GenEval: {md(suite)}", "", note(metrics, suite, confidence), "",
                  f"| language | system | Acc feminine (%) | Acc masculine (%) | ΔG (pp) | Acc ({overall}) (%) "
                  "| undecided F (%) | undecided M (%) | n |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in rows_of(metrics, suite):
            lines.append(row(r["language"], r["system"], *(_cell(c) for c in r["cells"]), numbers.count(r["n"])))
        lines.append("")
    return lines


def undecidable_markdown(rows: pl.DataFrame) -> str:
    """The lines of the counterfactual set whose references leave nothing to decide (``undecidable``)."""
    out = ["| split | language | lines | share | which (feminine ⊆ masculine: f; masculine ⊆ feminine: m; same words: =) |",
           "|---|---|---|---|---|"]
    for (split, lang), part in rows.group_by(["split", "language"], maintain_order=True):
        part = part.drop_nulls("line")
        listed = ", ".join(f"{line}{kind}" for line, kind in part.select("line", "kind").rows()) or "none"
        out.append(f"| {split} | {lang} | {part.height} | {100 * part.height / rows.filter(pl.col('language') == lang)['of'][0]:.1f}% "
                   f"| {listed} |")
    total, of = rows.drop_nulls("line").height, rows.unique("language")["of"].sum()
    out.append(f"| {rows['split'][0]} | all | {total} | {100 * total / of:.1f}% | |")
    return "\n".join(out) + "\n"


def labeller_markdown(table: list[dict]) -> str:
    """The analysers against MT-GenEval's tags (``metrics/mtgeneval_labeller.table``), one row a language."""
    def pct(v):
        return "—" if v is None else f"{100 * v:.1f}%"

    out = ["| language | analyser | tagged spans | of them pronouns | read (coverage) | right of read (accuracy) "
           "| coverage without pronouns | untagged words read as gendered |",
           "|---|---|---|---|---|---|---|---|"]
    for r in table:
        out.append(f"| {r['language']} | {r['analyser'] or 'none'} | {r['tagged']} | {r['pronouns']} | "
                   f"{pct(r['coverage'])} | {pct(r['accuracy'])} | {pct(r['coverage_nouns'])} | "
                   f"{pct(r['gendered_share'])} |")
    return "\n".join(out) + "\n"
