"""Sections of report.html beside html.py's: the summary it opens with, MT-GenEval and GEST in the
paper's shape, MiTTenS's chart, and the translations behind the numbers with their filters. Each function
returns the dict its template reads; the page's one script (templates/filters.js) does the filtering."""

from __future__ import annotations

import base64
import hashlib
import math

import polars as pl

from biaseval.report import drift, gest, gest_charts, methods, mtgeneval, numbers, plots, suite_charts, tables, trends
from biaseval.report import examples as example_rows
from biaseval.report.summary import caption, summary


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_data_uri(data: bytes) -> str:
    if not data.startswith(PNG_MAGIC):
        raise ValueError("not a PNG image")
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def figure(png: bytes, alt: str) -> dict:
    """A figure for the templates' ``figure`` macro: the PNG inline, with its alternative text."""
    return {"src": png_data_uri(png), "alt": alt}


def summary_section(contents, metrics: pl.DataFrame, suites: list[str], systems: list[str], published: dict,
                    cite: str | None, set_gold: dict, confidence: str) -> dict | None:
    result = summary(metrics, suites, systems, published, set_gold)
    if not result.tables:
        return None
    return {"template": "summary.html", "heading": contents.h2("Summary"), "summary": result,
            "caption": caption(result, methods.describe(result.shown, confidence), cite)}


def mtgeneval_section(contents, part: pl.DataFrame, suite: str, colours: dict[str, str], confidence: str) -> dict:
    """MT-GenEval's table in the paper's shape and its chart (feminine against masculine accuracy)."""
    heading = contents.h3("Accuracy on feminine and masculine items (MT-GenEval)")
    rows = [{"language": r["language"], "system": r["system"], "n": numbers.count(r["n"]),
             "cells": [_value(c) for c in r["cells"]]} for r in mtgeneval.rows_of(part, suite)]
    png = suite_charts.mtgeneval_bars(part, colours)
    overall = "both right" if "contextual" not in suite else "all"
    return {"heading": heading, "rows": rows, "note": mtgeneval.note(part, suite, confidence),
            "overall": overall, "figure": figure(png, f"{suite}: accuracy on feminine and masculine items per language"),
            "methods": methods.describe(part.filter((pl.col("metric") == "acc")
                                                    & pl.col("subset").str.contains(r"/(feminine|masculine)$")),
                                        confidence)}


def _value(row: dict | None) -> dict | None:
    if row is None or row["value"] is None:
        return None
    return {"text": numbers.number(row["value"], row["metric"]),
            "ci": numbers.interval(row["ci_low"], row["ci_high"], row["metric"])}


def mittens_figure(part: pl.DataFrame, suite: str, colours: dict[str, str], confidence: str) -> dict:
    """MiTTenS's accuracy by language and by evaluation set, as a chart."""
    shown = part.filter((pl.col("metric") == "acc") & pl.col("subset").str.contains(r"^(lang|set)/"))
    return {"figure": figure(suite_charts.mittens_bars(shown, colours), f"{suite}: accuracy by language and evaluation set"),
            "methods": methods.describe(shown, confidence)}


def gest_section(contents, root, part: pl.DataFrame, suite: str, colours: dict[str, str], confidence: str) -> dict:
    """GEST in the paper's shape: the masculine rate per stereotype as a chart (the one drawn for report.md
    beside it, where there is one: ``gest.write_charts``), f_m against f_s as a chart and a table beside the
    paper's values (report/gest.py)."""
    path = gest.chart_path(root, suite)
    png = path.read_bytes() if path.is_file() else gest_charts.stereotype_heatmap(part, colours)
    heatmap = figure(png, f"{suite}: masculine rate per stereotype, target language and system")
    table = [r for r in gest.rows(part) if r["suite"] == suite]
    points = [r for r in table if math.isfinite(r["f_m"]["value"]) and math.isfinite(r["f_s"]["value"])]
    scatter = figure(gest_charts.rates_scatter(points, colours),  # none where no language has every stereotype read
                     f"{suite}: masculine rate f_m against stereotype rate f_s per system and target language"
                     ) if points else None
    return gest.html_part(contents, part, suite, confidence, heatmap, scatter)


def examples_section(contents, examples: pl.DataFrame | None, suite: str) -> dict | None:
    """The outputs of one suite behind its numbers (examples.parquet's, at most HTML_CAPS per system)."""
    if examples is None:
        return None
    found = example_rows.html_sections(examples, [suite])
    if not found:
        return None
    return {**found[0], "heading": contents.h3("Translations behind the numbers"), "id": f"examples-{_slug(suite)}",
            "caps": example_rows.HTML_CAPS}


def _slug(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def script_hash(script: str) -> str:
    """The Content-Security-Policy source of the page's one script: only it may run."""
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


def drift_section(contents, run, history: pl.DataFrame | None, suites: list[str],
                   colours: dict[str, str]) -> dict:
    """The monitoring run's verdict, its suites' paired tests, its significant changes and flips
    (from drift.json), then each suite's headline metrics over the history."""
    section = {"template": "drift.html", "heading": contents.h2("Drift" if history is None else "Drift over time"),
               "now": None, "runs": 0}
    found = drift.read_drift(run.root)
    if found is not None:
        summary, flips = found
        info = run.read_run() or {}
        shown = ((info.get("config") or {}).get("monitor") or {}).get("flips_in_report", drift.FLIPS_SHOWN)
        flip_rows, flipped = drift.flip_rows(flips, shown)
        section["now"] = {"heading": contents.h3("Verdict"), "verdict": drift.verdict(summary),
                          "suites": drift.suite_rows(summary, info.get("suites")),
                          "changes": drift.change_rows(summary),
                          "flips_heading": contents.h3("Flipped items"), "flips": flip_rows, "flipped": flipped}
    if history is None:
        return section
    history = tables.history_frame(history)
    if history.height == 0:
        return section
    present = set(history["suite"].to_list())
    order = [s for s in suites if s in present] + sorted(present - set(suites))
    trend_figures = []
    for suite in order:
        part = history.filter(pl.col("suite") == suite)
        panels = tables.headline_panels(part)
        if not panels:
            continue
        heading = contents.h3(f"{suite}: headline metrics")
        names = ", ".join(f"{plots.metric_label(m)} on {s}" for s, m in panels)
        png = trends.trend_plot(part, colours, panels)
        trend_figures.append({"heading": heading, "suite": suite, "names": names,
                              "figure": figure(png, f"{suite}: trends of {names}")})
    changes, total = tables.significant_changes(history)
    return {**section, "runs": history["run_id"].n_unique(), "first": tables.when(history["created_at"].min()),
            "last": tables.when(history["created_at"].max()), "trends": trend_figures,
            "changes_heading": contents.h3("Significant changes over the history"), "changes": changes, "total": total}
