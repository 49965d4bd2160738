"""report.html: the run's results as one self-contained page (CSS inline, figures as base64 PNG data
URIs, one inline script of ours for the examples' filters; no font, image or script fetched from
anywhere, and a Content-Security-Policy that lets nothing else run or load), for reading in a browser
or attaching to a ticket.

It reads only the run directory: run.json, metrics.parquet, and where present labels.parquet (items
without a translation, why outputs were unknown), items.parquet (the occupations' female share, the
sets' gold genders), examples.parquet (the translations behind the numbers), embedding_bias.parquet,
embedding_bins.parquet, gender_shift.parquet and the scatter plots in plots/.
``history`` (the monitoring history of earlier runs, one row per run × system × suite × subset ×
metric) adds a section with the drift of each suite's headline metrics over time.

This module loads that data, has the numbers computed (tables.py, and markdown.py's helpers shared
with report.md), draws the figures (plots.py) and renders the jinja2 templates in templates/, which
escape every value they are given.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import polars as pl

from biaseval.errors import MissingExtra, RunDirError
from biaseval.report import adjectives, html_sections, methods, plots, sampling, tables
from biaseval.report import examples as example_rows
from biaseval.report import published as published_results
from biaseval.report.published import compare_published, published_values
from biaseval.report.collection import collected_once
from biaseval.report.embedding_tables import SHIFT_GENDERS
from biaseval.report.markdown import (
    CORRELATIONS,
    LANGUAGE_SUBSET,
    PER_OCCUPATION,
    UNKNOWN_REASONS,
    WINOMT_LABELS,
    occupation_rates,
    read_failures,
    read_reasons,
    winomt_language_rows,
)
from biaseval.report.occupation_chart import occupation_charts
from biaseval.report.tables import ALPHA, significance, suite_kinds
from biaseval.run.cost import cost_lines
from biaseval.run.rundir import RunDir

PNG_MAGIC = html_sections.PNG_MAGIC
MAX_OCCUPATIONS_DRAWN = 60
MAX_SETS_DRAWN = 40  # p_m/p_f bars: a template suite can have a thousand sets; the table has them all
MAX_OCCUPATION_CHARTS = 6  # per suite: a chart costs about 0.2 s to draw, tables are cheap


_figure = html_sections.figure


class Contents:
    """The headings' ids (unique, made from their titles) and the table of contents: top-level
    sections with their subsections, in the order the headings are made."""

    def __init__(self) -> None:
        self.entries: list[dict] = []
        self._ids: set[str] = set()

    def _anchor(self, title: str) -> str:
        base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"
        name, k = base, 2
        while name in self._ids:
            name, k = f"{base}-{k}", k + 1
        self._ids.add(name)
        return name

    def h2(self, title: str, label: str | None = None) -> dict:
        """A section's heading; ``label`` is its shorter name in the contents."""
        ident = self._anchor(title)
        self.entries.append({"id": ident, "title": label or title, "subs": []})
        return {"id": ident, "title": title}

    def h3(self, title: str, in_toc: bool = True) -> dict:
        ident = self._anchor(f"{self.entries[-1]['id']}-{title}" if self.entries else title)
        if in_toc and self.entries:
            self.entries[-1]["subs"].append({"id": ident, "title": title})
        return {"id": ident, "title": title}


def _read(path: Path) -> pl.DataFrame | None:
    return pl.read_parquet(path) if path.exists() else None


def _embedding_data(run: RunDir, suites: list[str]) -> dict:
    """The embedding study's frames (None where absent) and scatter plots by suite; ``suites``: those
    with any of it."""
    embedding = {"bins": _read(run.root / "embedding_bins.parquet"), "shift": _read(run.root / "gender_shift.parquet"),
                 "words": _read(run.root / "embedding_bias.parquet"), "plots": {}}
    by_length = sorted(suites, key=len, reverse=True)
    for path in sorted((run.root / "plots").glob("embedding-*.png")):
        owner = next((s for s in by_length if path.stem.startswith(f"embedding-{s}-")), None)
        if owner is not None:
            embedding["plots"].setdefault(owner, []).append(path)
    embedding["suites"] = set(embedding["plots"]) | {
        s for key in ("bins", "shift", "words") if embedding[key] is not None for s in embedding[key]["suite"].to_list()}
    return embedding


# --- sections: each a dict for its template ------------------------------------------------------

def _run_section(contents: Contents, info: dict, metrics: pl.DataFrame) -> dict:
    return {"template": "run.html", "heading": contents.h2("Systems and suites"), "systems": tables.system_rows(info),
            "suites": tables.suite_rows(info), "signatures": tables.signatures(metrics),
            "cost": cost_lines(info.get("cost")), "sample": sampling.sample_rows(info),
            "sample_head": sampling.HEAD, "sample_note": sampling.NOTE}


def _failures_section(contents: Contents, failures: pl.DataFrame) -> dict | None:
    if failures is None or failures.height == 0:
        return None
    return {"template": "failures.html", "heading": contents.h2("Items without a translation"),
            "rows": tables.failure_rows(failures)}


def _control_section(contents: Contents, metrics: pl.DataFrame, info: dict, confidence: str) -> dict | None:
    found = tables.control_rows(metrics, info.get("config", {}).get("systems", {}))
    if not found:
        return None
    heading = contents.h2("Gender control")
    shown = metrics.filter(pl.col("metric").is_in(["control_acc", "control_unknown", "control_unasked"]))
    return {"template": "control.html", "heading": heading, "methods": methods.describe(shown, confidence),
            "tables": [{**t, "heading": contents.h3(t["system"])} for t in found]}


def _adjective_section(contents: Contents, metrics: pl.DataFrame, confidence: str) -> dict | None:
    rows = tables.adjective_rows(metrics)
    if not rows:
        return None
    return {"template": "adjectives.html", "heading": contents.h2("WinoMT: the adjective experiment"), "rows": rows,
            "note": adjectives.note(metrics, confidence)}


def _published_section(contents: Contents, metrics: pl.DataFrame, name: str) -> dict | None:
    published = published_results.load(name)
    comparison = compare_published(metrics, published, only_present=True)
    if not comparison.tables:
        return None
    return {"template": "published.html", "comparison": comparison,
            "heading": contents.h2(f"Published tables recomputed ({published.cite})", "Published tables recomputed")}


def _suite_section(contents: Contents, run: RunDir, info: dict, metrics: pl.DataFrame, suite: str,
                   colours: dict[str, str], confidence: str, embedding: dict, examples: pl.DataFrame | None) -> dict:
    part = metrics.filter(pl.col("suite") == suite)
    systems = [s for s in colours if s in set(part["system"].to_list())]
    kinds = suite_kinds(part)
    sets = tables.metric_sets(part)
    d = info.get("suites", {}).get(suite, {})
    about = {"version": d.get("version"), "size": f"{d.get('size') or 0:,}", "dataset": d.get("dataset"),
             "commit": d.get("commit")} if d else None
    section = {"template": "suite.html", "suite": suite, "systems": systems, "about": about,
               "heading": contents.h2(f"Suite {suite}", suite), "tgbi": None, "winomt": None, "languages": None,
               "proportions": None, "pairwise": None, "occupations": None, "embedding": None, "mittens": None,
               "mtgeneval": None, "gest": None, "examples": None}
    if "gest" in kinds:
        section["gest"] = html_sections.gest_section(contents, run.root, part, suite, colours, confidence)
    if "mittens" in kinds:
        section["mittens"] = {"heading": contents.h3("MiTTenS: accuracy, weakest groups and worst case (Table 3)"),
                              **tables.mittens_rows(part, suite, confidence)}
        section["mittens"]["figure"] = html_sections.mittens_figure(part, suite, colours, confidence)
    if "mtgeneval" in kinds:
        section["mtgeneval"] = html_sections.mtgeneval_section(contents, part, suite, colours, confidence)
    if "tgbi" in kinds:
        shown = sets.filter(pl.col("metric").is_in(["P", "tgbi"]))
        png = plots.tgbi_bars(shown, colours)
        section["tgbi"] = {"heading": contents.h3("TGBI per set"), "methods": methods.describe(shown, confidence),
                           "figure": _figure(png, f"{suite}: P per set and TGBI per system")}
    if "winomt" in kinds:
        marks = significance(metrics, suite)
        heading = contents.h3("Accuracy and bias (WinoMT)")
        shown = sets.filter((pl.col("subset") == "all") & pl.col("metric").is_in(["acc", "delta_g", "delta_s"]))
        png = plots.winomt_bars(shown, colours, marks)
        section["winomt"] = {"heading": heading, "marks": marks, "has_pairs": part.filter(tables.PAIRWISE).height > 0,
                             "methods": methods.describe(shown, confidence, WINOMT_LABELS.get),
                             "figure": _figure(png, f"{suite}: accuracy, ΔG and ΔS per system")}
    if "winomt-languages" in kinds:
        section["languages"] = _languages(contents, run, part, suite, colours, confidence)
    if "proportions" in kinds:
        heading = contents.h3("Male and female renderings per set")
        shown = sets.filter(pl.col("metric").is_in(["p_m", "p_f"]))
        png, drawn = plots.proportion_bars(shown, colours, limit=MAX_SETS_DRAWN)
        section["proportions"] = {"heading": heading, "drawn": drawn, "total": shown["subset"].n_unique(),
                                  "methods": methods.describe(shown, confidence),
                                  "figure": _figure(png, f"{suite}: p_m and p_f per set and system")}
    grid = tables.pairwise_grid(part, systems)
    if grid:
        section["pairwise"] = {"heading": contents.h3("Paired comparisons"), "grid": grid,
                               "neutral": bool({"tgbi", "gest"} & kinds), "gest": "gest" in kinds}
    if "occupations" in kinds:
        section["occupations"] = _occupations(contents, run, part, suite, colours, confidence)
    if "embedding" in kinds or suite in embedding["suites"]:
        section["embedding"] = _embedding(contents, suite, embedding)
    section["examples"] = html_sections.examples_section(contents, examples, suite)
    section["metrics"] = {"heading": contents.h3(f"All metrics with {confidence} CIs"),
                          "methods": methods.describe(tables.metric_sets(part), confidence),
                          "rows": tables.metric_rows(part, systems)}
    return section


def _languages(contents: Contents, run: RunDir, part: pl.DataFrame, suite: str, colours: dict[str, str],
               confidence: str) -> dict:
    """WinoMT scored per target language: bars of Acc/ΔG/ΔS, a table, and why outputs were unknown."""
    heading = contents.h3("Accuracy and bias per target language (WinoMT)")
    shown = tables.metric_sets(part).filter(LANGUAGE_SUBSET & pl.col("metric").is_in(["acc", "delta_g", "delta_s"]))
    png = plots.winomt_language_bars(shown, colours)
    languages = {"heading": heading, "rows": tables.language_rows(part), "unknown": None,
                 "methods": methods.describe(winomt_language_rows(part), confidence, WINOMT_LABELS.get),
                 "figure": _figure(png, f"{suite}: Acc, ΔG and ΔS per target language and system")}
    if run.labels.exists() and run.items.exists():
        rows = tables.unknown_rows(read_reasons(run.labels, run.items), suite)
        if rows:
            languages["unknown"] = {"heading": contents.h3("Why outputs were labelled unknown", in_toc=False),
                                    "reasons": UNKNOWN_REASONS, "rows": rows}
    return languages


def _occupations(contents: Contents, run: RunDir, part: pl.DataFrame, suite: str, colours: dict[str, str],
                 confidence: str) -> dict:
    """Correlations with the female share; per target language a chart (the first few) and a table."""
    per = occupation_rates(part)
    occupations = {"heading": contents.h3("Per occupation"), "correlations": tables.correlation_rows(part),
                   "charts_for": MAX_OCCUPATION_CHARTS, "shares": {}, "languages": [],
                   "methods_correlations": methods.describe(part.filter(pl.col("metric").is_in(CORRELATIONS)), confidence),
                   "methods_rates": methods.describe(per, confidence)}
    if per.height == 0:
        return occupations
    shares = tables.female_shares(pl.scan_parquet(run.items) if run.items.exists() else None, suite)
    occupations["shares"] = shares
    languages = [(language, rates) for (language,), rates in per.group_by("language", maintain_order=True)]
    charts = occupation_charts([rates for _, rates in languages[:MAX_OCCUPATION_CHARTS]], colours, shares or None,
                               limit=MAX_OCCUPATIONS_DRAWN)
    for k, (language, rates) in enumerate(languages):
        systems = [s for s in colours if s in set(rates["system"].to_list())]
        entry = {"language": language, "systems": systems, "figure": None,
                 "rows": tables.occupation_rows(rates, shares, systems)}
        if k < len(charts):
            png, drawn = charts[k]
            entry.update(figure=_figure(png, f"{suite} → {language}: p_f per occupation"), drawn=drawn,
                         total=rates["occupation"].n_unique())
        occupations["languages"].append(entry)
    return occupations


def _embedding(contents: Contents, suite: str, embedding: dict) -> dict:
    """A suite's embedding study: its scatter plots and its rows of each of the study's frames."""
    def of_suite(frame):
        return frame.filter(pl.col("suite") == suite) if frame is not None and frame.height else None

    section = {"heading": contents.h3("Embedding bias before and after translation"), "plots": [], "words": None,
               "sanity": [], "missing": [], "bins": [], "shift": [], "shift_genders": SHIFT_GENDERS}
    for path in embedding["plots"].get(suite, []):
        data = path.read_bytes()
        figure = _figure(data, path.stem) if data.startswith(PNG_MAGIC) else None
        section["plots"].append({"name": path.name, "figure": figure})
    words = of_suite(embedding["words"])
    if words is not None and words.height:
        section.update(sanity=tables.sanity_rows(words), missing=tables.missing_vectors(words),
                       words={"rows": tables.word_rows(words), "total": words.height})
    bins = of_suite(embedding["bins"])
    if bins is not None:
        section["bins"] = tables.bin_tables(bins)
    shift = of_suite(embedding["shift"])
    if shift is not None and shift.height:
        section["shift"] = tables.shift_rows(shift)
    return section


# --- the page ----------------------------------------------------------------------------------

@functools.cache
def _environment():
    """The templates' environment, made once per process: jinja2 compiles each template on first use
    and keeps it (a monitor renders a report per run)."""
    try:
        import jinja2
    except ImportError:
        raise MissingExtra("report", "report", "jinja2") from None
    return jinja2.Environment(loader=jinja2.PackageLoader("biaseval.report", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              finalize=lambda value: "" if value is None else value)


def _css(env) -> str:
    """The stylesheet, inlined as it is (it is ours, not data)."""
    from markupsafe import Markup

    return Markup(env.loader.get_source(env, "report.css")[0])


def _script(env) -> str:
    """The page's one script (the examples' filters), inlined as it is (it is ours, not data)."""
    from markupsafe import Markup

    return Markup(env.loader.get_source(env, "filters.js")[0])


def set_genders(run: RunDir) -> dict[tuple[str, str], str]:
    """(suite, subset) -> the gold gender of every item of a set where they all have the same one (the
    summary marks the share that counts right answers in such a set, OTSC's p_f or p_m)."""
    if not run.items.exists() or not {"suite", "subset", "gold"} <= set(pl.scan_parquet(run.items).collect_schema().names()):
        return {}
    sets = (pl.scan_parquet(run.items).group_by("suite", "subset")
            .agg(pl.col("gold").n_unique().alias("golds"), pl.col("gold").first()).filter(pl.col("golds") == 1)
            .collect())
    return {(suite, subset): gold for suite, subset, _, gold in sets.iter_rows() if gold is not None}


def system_names(info: dict, metrics: pl.DataFrame, history: pl.DataFrame | None = None) -> list[str]:
    """The run's systems in the order its figures and tables show them (their colours follow)."""
    names = list(info.get("systems", {}))
    names += sorted(set(metrics["system"].unique().to_list()) - set(names))
    if history is not None and "system" in history.columns:
        names += sorted(set(history["system"].drop_nulls().unique().to_list()) - set(names))
    return names


def render_html(run_root: Path, history: pl.DataFrame | None = None) -> str:
    """The whole report.html of a run directory as text; ``history`` adds trends over earlier runs."""
    with collected_once():
        return _render_html(run_root, history)


def _render_html(run_root: Path, history: pl.DataFrame | None) -> str:
    env = _environment()
    run = RunDir(run_root)
    info = run.read_run()
    if info is None:
        raise RunDirError(f"{run.run_json}: not found; is {run.root} a biaseval run directory?")
    if not run.metrics.exists():
        raise RunDirError(f"{run.metrics}: not found; score the run first (biaseval score --run {run.root})")
    metrics = pl.read_parquet(run.metrics)
    config = info["config"]
    confidence = methods.confidence_text(config)

    names = system_names(info, metrics, history)
    colours = plots.system_colours(names)
    suites = tables.suite_order(config.get("suites", []), metrics["suite"].to_list())
    embedding = _embedding_data(run, suites)

    published = published_results.load(config["published"]) if config.get("published") else None
    examples = example_rows.load(run.examples)

    contents = Contents()
    sections = []
    monitored = (run.root / "drift.json").is_file()
    if monitored or history is not None:  # a monitoring run's report opens with its verdict
        sections.append(html_sections.drift_section(contents, run, history, suites, colours))
    sections += [html_sections.summary_section(contents, metrics, suites, names, published_values(published),
                                               published.cite if published else None, set_genders(run), confidence),
                 _run_section(contents, info, metrics)]
    if run.labels.exists():
        sections.append(_failures_section(contents, read_failures(run.labels)))
    if config.get("published"):
        sections.append(_published_section(contents, metrics, config["published"]))
    sections.append(_control_section(contents, metrics, info, confidence))
    sections += [_suite_section(contents, run, info, metrics, suite, colours, confidence, embedding, examples)
                 for suite in suites]
    sections.append(_adjective_section(contents, metrics, confidence))

    meta = {"name": config.get("name"), "description": config.get("description"), "run_id": info.get("run_id"),
            "config_hash": info.get("config_hash"), "version": info.get("biaseval_version"),
            "created_at": info.get("created_at"), "updated_at": info.get("updated_at"),
            "intervals": methods.describe(metrics.filter(~PER_OCCUPATION), confidence)}
    script = _script(env)
    page = env.get_template("report.html").render(
        meta=meta, confidence=confidence, css=_css(env), colours=colours, alpha=ALPHA, contents=contents.entries,
        script=script, script_hash=html_sections.script_hash(str(script)),
        sections=[s for s in sections if s is not None])
    return page + "\n"
