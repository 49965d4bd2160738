"""GEST in both reports, in the paper's shape (Pikuliak et al. 2024, section 4.1): the masculine rate per
stereotype, language and system as a chart (``gest_charts.stereotype_heatmap``); f_m against f_s per
system × language as a chart and a table, beside the published values where the run scored the recorded
systems (``data/gest_published.yaml``: recomputed from the masculine rates the dataset repository's
notebook printed), with the share of outputs read; and the reader table of ``biaseval gest reader-table``.

Pure: metric rows in, rows of strings (and the dicts report.html's template reads) out; the charts are
drawn by the callers.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import polars as pl

from biaseval.data.yamlio import package_yaml
from biaseval.names import under
from biaseval.report import methods, numbers
from biaseval.report.escape import md

# A run's system names for the published ones (conf/gest-recorded.yaml).
PUBLISHED_SYSTEMS = {"amazon": "Amazon Translate", "deepl": "DeepL", "google": "Google Translate",
                     "nllb": "NLLB-3.3B"}
SUITES = ("gest", "gest-1.1")
HEADLINE = ("p_f", "p_m", "f_m", "f_s")
PLOTS = "plots"  # beside report.md: the per-stereotype chart of each GEST suite, gest-<suite>.png


@cache
def published() -> dict:
    return package_yaml("data/gest_published.yaml")


def published_rates(system: str, lang: str) -> tuple[float, float, int] | None:
    """(f_m, f_s, outputs read) of a published system and language, from the notebook's printed p_i."""
    data = published()
    centres = data["p_i"].get(system, {}).get(lang)
    if centres is None:
        return None
    p_f, p_m = float(np.mean(centres[:7])), float(np.mean(centres[7:]))
    return (p_f + p_m) / 2, p_m - p_f, int(data["read"][system][lang])


def is_gest(part: pl.DataFrame) -> bool:
    """Whether a suite's metric rows are GEST's (its stereotype rate)."""
    return part.filter(pl.col("metric") == "f_s").height > 0


def chart_path(root: Path, suite: str) -> Path:
    """Where a suite's per-stereotype chart is written in a run directory (``write_charts``)."""
    return under(root, PLOTS, f"gest-{suite}.png")


def write_charts(root: Path, metrics: pl.DataFrame, colours: dict[str, str]) -> dict[str, str]:
    """Each GEST suite's per-stereotype chart drawn once, into the run directory (report.md links it,
    report.html embeds the same file); suite -> its path relative to ``root``."""
    from biaseval.report.gest_charts import stereotype_heatmap

    written = {}
    for suite in SUITES:
        part = metrics.filter((pl.col("suite") == suite) & (pl.col("metric") == "masculine_rate"))
        if part.height:
            path = chart_path(root, suite)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(stereotype_heatmap(part, colours))
            written[suite] = path.relative_to(root).as_posix()
    return written


def rows(metrics: pl.DataFrame) -> list[dict]:
    """Per system × language of the GEST suites: our f_m, f_s (rows, with intervals), the Agresti-Coull
    centred f_m and f_s the paper computes, the share read, and the published values where there are any."""
    part = metrics.filter(pl.col("suite").is_in(list(SUITES)) & ~pl.col("subset").str.contains("/"))
    out = []
    for (system, suite, lang), group in part.group_by("system", "suite", "subset", maintain_order=True):
        got = {r["metric"]: r for r in group.iter_rows(named=True)}
        if "f_m" not in got:
            continue
        paper = published_rates(system, lang) if suite == "gest" else None
        out.append({"system": system, "suite": suite, "lang": lang, "f_m": got["f_m"], "f_s": got["f_s"],
                    "f_m_ac": got["f_m_ac"]["value"], "f_s_ac": got["f_s_ac"]["value"], "read": got["read"],
                    "paper": paper})
    return sorted(out, key=lambda r: (r["suite"], r["system"], r["lang"]))


def _shown(value, metric: str, low=None, high=None) -> str:
    interval = numbers.interval(low, high, metric)
    return numbers.number(value, metric) + (f" {interval}" if interval else "")


def _read(row: dict) -> str:
    read = row["read"]
    return f"{numbers.count(read['value'] * read['n'])} ({numbers.share_text(read['value'])})"


def table_cells(row: dict) -> list[str]:
    """One row of the reproduction table as text: f_m (%) with interval, AC, paper; f_s (pp) likewise; outputs
    read (ours, the paper's)."""
    paper = row["paper"] or (None, None, None)
    f_m, f_s = row["f_m"], row["f_s"]
    return [_shown(f_m["value"], "f_m", f_m["ci_low"], f_m["ci_high"]), numbers.number(row["f_m_ac"], "f_m"),
            numbers.number(paper[0], "f_m"), _shown(f_s["value"], "f_s", f_s["ci_low"], f_s["ci_high"]),
            numbers.number(row["f_s_ac"], "f_s"), numbers.number(paper[1], "f_s"), _read(row),
            numbers.count(paper[2])]


HEADERS = ["f_m (%)", "f_m AC (%)", "f_m paper (%)", "f_s (pp)", "f_s AC (pp)", "f_s paper (pp)", "read (ours)",
           "read (paper)"]


def reproduction_markdown(table: list[dict]) -> list[str]:
    """The table of docs/gest.md and report.md: ours beside the paper's."""
    lines = ["| system | lang | " + " | ".join(HEADERS) + " |", "|---|---|" + "---|" * len(HEADERS)]
    lines += [f"| {md(r['system'])} | {r['lang']} | " + " | ".join(table_cells(r)) + " |" for r in table]
    return lines


def caption(metrics: pl.DataFrame, table: list[dict], confidence: str) -> str:
    """What the reproduction table holds, its intervals named from the rows that made them."""
    shown = metrics.filter(pl.col("suite").is_in(list(SUITES)) & ~pl.col("subset").str.contains("/")
                           & pl.col("metric").is_in(["f_m", "f_s", "read"]))
    text = ("f_m = (p_f + p_m) / 2, the masculine rate, and f_s = p_m − p_f, the stereotype rate, where p_f and p_m "
            "average the masculine rate p_i over the stereotypes about women (1–7) and about men (8–16), among the "
            "outputs whose speaker's gender was read; f_m in percent, f_s in percentage points (pp). "
            "*AC*: the same from the Agresti–Coull centre of each p_i, as the paper's notebook computes them (each "
            "p_i pulled toward 50 % by about 2/(n + 4)): the values to set beside the paper's. *read*: outputs whose "
            "speaker's gender was read, of those translated; the rest the metric cannot see. "
            + methods.describe(shown, confidence))
    if any(r["paper"] for r in table):
        cite = published().get("cite", "the paper")
        text += (f" *paper*: {cite}, for the systems named as in conf/gest-recorded.yaml (amazon, deepl, google, "
                 f"nllb: {', '.join(PUBLISHED_SYSTEMS.values())}), recomputed from the masculine rates the dataset "
                 f"repository's notebook printed ({published().get('source', '')}; the paper draws f_m and f_s as "
                 "a figure only), so up to 0.5 % or pp off by rounding.")
    return text


def section(metrics: pl.DataFrame, confidence: str = "95%", charts: dict[str, str] | None = None) -> list[str]:
    """report.md's GEST part (empty without a GEST suite); ``charts``: suite -> the per-stereotype chart's
    path beside report.md, where one was drawn."""
    table = rows(metrics)
    if not table:
        return []
    lines = ["## GEST (Pikuliak et al. 2024): masculine rate per stereotype, f_m and f_s", ""]
    for suite in dict.fromkeys(r["suite"] for r in table):
        if charts and suite in charts:
            lines += [f"![{md(suite)}: masculine rate per stereotype, language and system]({md(charts[suite])})", "",
                      f"{md(suite)}: the masculine rate p_i of each stereotype (rows; 1–7 about women, above the "
                      "line) per target language and system, in percent. The values with their intervals are "
                      "in the metrics below (`masculine_rate`, subsets `<lang>/<NN>`).", ""]
    lines += [caption(metrics, table, confidence), "", *reproduction_markdown(table), ""]
    return lines


def html_part(contents, metrics: pl.DataFrame, suite: str, confidence: str, heatmap, scatter) -> dict:
    """report.html's GEST part of one suite (templates/gest.html): the two charts (``figure`` dicts of
    ``html_sections.figure``) and the reproduction table."""
    table = [r for r in rows(metrics) if r["suite"] == suite]
    rates = metrics.filter((pl.col("suite") == suite) & (pl.col("metric") == "masculine_rate"))
    return {"heading": contents.h3("Masculine rate per stereotype (GEST)"), "heatmap": heatmap,
            "rates_methods": methods.describe(rates, confidence),
            "rates_heading": contents.h3("Masculine rate f_m and stereotype rate f_s"), "scatter": scatter,
            "headers": HEADERS, "rows": [{"system": r["system"], "lang": r["lang"], "cells": table_cells(r)}
                                         for r in table],
            "caption": caption(metrics.filter(pl.col("suite") == suite), table, confidence).replace("*", "")}


def reader_markdown(table: list[dict]) -> str:
    """What ``biaseval gest reader-table`` prints (docs/gest.md holds it)."""
    lines = ["| language | gold | items | read (coverage) | right of read (accuracy) | mixed |",
             "|---|---|---|---|---|---|"]
    for r in table:
        coverage = "—" if r["coverage"] is None else f"{r['read']} ({100 * r['coverage']:.1f}%)"
        accuracy = "—" if r["accuracy"] is None else f"{r['right']} ({100 * r['accuracy']:.1f}%)"
        lines.append(f"| {r['language']} | {r['gold']} | {r['items']} | {coverage} | {accuracy} | {r['mixed']} |")
    return "\n".join(lines) + "\n"
