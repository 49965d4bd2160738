"""The few numbers a sweep prints at its end, per suite, system and scope (a language, or the whole
suite), each with its 95% interval: the headline metrics of each kind of suite as its paper reads
them (WinoMT's accuracy, ΔG and ΔS; MT-GenEval's accuracy on feminine and masculine items and ΔG;
MiTTenS's accuracy and misgendered share; TGBI; OTSC's p_m and p_f; gender control's accuracy).
Plain text from metrics.parquet's rows; report.md and report.html hold every metric.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from biaseval.report.numbers import PERCENT_METRICS

DIFFERENCES = {"delta_g", "delta_s"}  # differences of two shares: percentage points


@dataclass(frozen=True)
class Column:
    label: str
    metric: str
    suffix: str = ""  # the subset it reads: the row's scope, then this


@dataclass(frozen=True)
class Headline:
    marker: str  # a metric that only this kind of suite reports
    scope: str  # the metric whose subsets matching ``scopes`` are the rows' scopes
    scopes: str  # a regular expression, matched against the whole scope
    columns: tuple[Column, ...]


WHOLE, LANGUAGES, SETS = r"all", r"all|[a-z]{2,3}", r"[^/]+(/[^/]+)?"
HEADLINES = (  # the first whose marker a suite reports is its headline
    Headline("tgbi", "tgbi", WHOLE, (Column("TGBI", "tgbi"),)),
    Headline("undecided", "delta_g", LANGUAGES, (Column("acc feminine", "acc", "/feminine"),
                                                 Column("acc masculine", "acc", "/masculine"),
                                                 Column("ΔG", "delta_g"))),
    Headline("delta_s", "delta_s", LANGUAGES, (Column("acc", "acc"), Column("ΔG", "delta_g"), Column("ΔS", "delta_s"))),
    Headline("misgendered", "misgendered", WHOLE, (Column("acc", "acc"), Column("misgendered", "misgendered"))),
    Headline("control_acc", "control_acc", SETS, (Column("control acc", "control_acc"),)),
    Headline("p_m", "p_m", SETS, (Column("p_m", "p_m"), Column("p_f", "p_f"))),
)


def cell(metric: str, value: float | None, low: float | None, high: float | None) -> str:
    """A value with its interval: shares in percent (``49.9 [46.2, 53.5]``), differences in signed
    percentage points (``+51.9 [+46.8, +57.0]``), other scores with three decimals."""
    if value is None or value != value:
        return "—"
    if metric in DIFFERENCES:
        shown = [f"{100 * x:+.1f}" if x is not None else "?" for x in (value, low, high)]
    elif metric in PERCENT_METRICS:
        shown = [f"{100 * x:.1f}" if x is not None else "?" for x in (value, low, high)]
    else:
        shown = [f"{x:.3f}" if x is not None else "?" for x in (value, low, high)]
    return shown[0] if low is None and high is None else f"{shown[0]} [{shown[1]}, {shown[2]}]"


def unit(metric: str) -> str:
    return " (points)" if metric in DIFFERENCES else " (%)" if metric in PERCENT_METRICS else ""


def headline_blocks(metrics: pl.DataFrame) -> list[list[list[str]]]:
    """Per suite with a headline, its table: a header row, then a row per scope × system."""
    blocks = []
    for (suite,), rows in metrics.group_by(["suite"], maintain_order=True):
        names = set(rows["metric"].to_list())
        headline = next((h for h in HEADLINES if h.marker in names), None)
        if headline is None:
            continue
        values = {(r["system"], r["subset"], r["metric"]): r for r in rows.iter_rows(named=True)}
        scoped = next(c for c in headline.columns if c.metric == headline.scope)
        scopes = sorted({scope for (_, s, m) in values if m == headline.scope and s.endswith(scoped.suffix)
                         and re.fullmatch(headline.scopes, scope := s[: len(s) - len(scoped.suffix)])},
                        key=lambda s: (s != "all", s))
        columns = [c for c in headline.columns if any(m == c.metric for (_, _, m) in values)]
        table = [[suite, "n", *(c.label + unit(c.metric) for c in columns)]]
        for scope in scopes:
            for system in sorted({system for (system, _, _) in values}):
                counted = values.get((system, scope + scoped.suffix, headline.scope))
                if counted is None:
                    continue
                cells = []
                for c in columns:
                    row = values.get((system, scope + c.suffix, c.metric))
                    cells.append("—" if row is None else cell(c.metric, row["value"], row["ci_low"], row["ci_high"]))
                name = system if scope == "all" else f"{scope}  {system}"
                table.append([f"  {name}", f"{counted['n']:,}", *cells])
        if len(table) > 1:
            blocks.append(table)
    return blocks


def headline_text(metrics: pl.DataFrame, reports: bool = True) -> str:
    """The blocks as aligned plain text under one line that says how to read them and where every
    metric is (the reports, or without them metrics.parquet); empty when no suite of the run has a
    headline (an embedding study)."""
    blocks = headline_blocks(metrics)
    if not blocks:
        return ""
    everything = "report.md and report.html have" if reports else "metrics.parquet has"
    lines = [f"results (95% intervals; {everything} every metric):"]
    for table in blocks:
        widths = [max(len(row[k]) for row in table) for k in range(len(table[0]))]
        for row in table:
            lines.append("  ".join(text.ljust(w) if k == 0 else text.rjust(w)
                                   for k, (text, w) in enumerate(zip(row, widths))).rstrip())
    return "\n".join(lines)
