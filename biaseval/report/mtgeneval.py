"""MT-GenEval in the report, in the shape of the paper's tables: per target language, accuracy on the
feminine and on the masculine items and the gap between them (``biaseval/metrics/mtgeneval.py``);
beside them what the paper's script prints for the language, and the share of outputs the metric
could not see (right only for lack of either reference's words).

Also what ``biaseval mtgeneval`` prints: the lines whose two references leave nothing to decide, and
the analysers measured against the tagged references (``biaseval/metrics/mtgeneval_labeller.py``)."""

from __future__ import annotations

import polars as pl

from biaseval.report.escape import md, row

MARK = "undecided"  # a metric only MT-GenEval suites have
COLUMNS = [("feminine", "acc"), ("masculine", "acc"), ("", "delta_g"), ("", "acc"), ("feminine", "undecided"),
           ("masculine", "undecided")]


def mtgeneval_suites(metrics: pl.DataFrame) -> list[str]:
    """The suites of a run scored by the MT-GenEval scorer, in their order in ``metrics``."""
    return metrics.filter(pl.col("metric") == MARK)["suite"].unique(maintain_order=True).to_list()


def _cell(metric: dict | None, decimals: int = 1) -> str:
    if metric is None or metric["value"] is None:
        return "—"
    value = f"{100 * metric['value']:.{decimals}f}"
    if metric.get("ci_low") is None or metric["ci_low"] != metric["ci_low"]:
        return value
    return f"{value} [{100 * metric['ci_low']:.{decimals}f}, {100 * metric['ci_high']:.{decimals}f}]"


def mtgeneval_section(metrics: pl.DataFrame) -> list[str]:
    """One table per MT-GenEval suite of the run (empty without one)."""
    lines: list[str] = []
    for suite in mtgeneval_suites(metrics):
        part = metrics.filter(pl.col("suite") == suite)
        cells = {(r["system"], r["subset"], r["metric"]): r for r in part.iter_rows(named=True)}
        languages = sorted({s for s in part["subset"].to_list() if "/" not in s})
        systems = sorted(part["system"].unique().to_list())
        paired = "contextual" not in suite
        overall = "both right" if paired else "all"
        lines += [f"## MT-GenEval: {md(suite)}", "",
                  "Acc: outputs without a word that only the counterfactual reference has (the paper's metric), on "
                  "the feminine and on the masculine items; ΔG = Acc(masculine) − Acc(feminine)"
                  + (" over the same sentences (paired bootstrap)" if paired else
                     " between the sets of items whose English context says she or he (unpaired)")
                  + f"; Acc ({overall}): what the paper's script prints"
                  + (" (a sentence counts when both its versions are right)" if paired else "")
                  + "; undecided: outputs right only because they hold neither reference's unique words. "
                  "Percent, with 95% intervals: Wilson's for the shares, a bootstrap for ΔG.", "",
                  f"| language | system | Acc feminine | Acc masculine | ΔG | Acc ({overall}) | undecided F | undecided M | n |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for lang in languages:
            for system in systems:
                found = [cells.get((system, f"{lang}/{g}" if g else lang, m)) for g, m in COLUMNS]
                if not any(found):
                    continue  # a system that does not translate into this language
                n = cells.get((system, lang, "acc"), {}).get("n")
                lines.append(row(lang, system, *(_cell(r) for r in found), n))
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
