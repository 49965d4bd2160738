"""report.html: the run's results as one self-contained page (inline CSS, figures as base64 PNG data
URIs; no script, no font or image fetched from anywhere), for reading in a browser or attaching to a
ticket.

It reads only the run directory: run.json, metrics.parquet, and where present labels.parquet (items
without a translation), items.parquet (the occupations' female share), embedding_bias.parquet,
embedding_bins.parquet, gender_shift.parquet and the scatter plots in plots/. Tables come from the
same helpers as report.md (biaseval/report/markdown.py); figures from biaseval/report/plots.py. ``history`` (the
monitoring history of earlier runs, one row per run × system × suite × subset × metric) adds a
section with the drift of each suite's headline metrics over time.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import polars as pl

from biaseval.errors import RunDirError
from biaseval.report import plots
from biaseval.report import published as published_results
from biaseval.report.markdown import (
    CORRELATIONS,
    LANGUAGE_SUBSET,
    PER_OCCUPATION,
    SHIFT_GENDERS,
    UNKNOWN_REASONS,
    WINOMT_HEADLINE,
    compare_published,
    correlation_table,
    fmt_value,
    metric_format,
    occupation_rates,
    read_failures,
    read_reasons,
    shift_table,
    winomt_language_table,
)
from biaseval.run.rundir import RunDir

ALPHA = 0.05  # significance level for the paired tests' marks
PAIRWISE = pl.col("subset").str.starts_with("vs/")
PAIR_METRICS = ("mcnemar_p", "diff_correct")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MAX_OCCUPATIONS_DRAWN = 60
MAX_OCCUPATION_CHARTS = 6  # per suite: a chart costs about a second to draw, tables are cheap
MAX_WORD_ROWS = 1000
MAX_DRIFT_ROWS = 60
HISTORY_COLUMNS = {"run_id": pl.String, "created_at": pl.Datetime("us", "UTC"), "system": pl.String, "suite": pl.String,
                   "subset": pl.String, "metric": pl.String, "value": pl.Float64, "ci_low": pl.Float64,
                   "ci_high": pl.Float64, "change": pl.Float64, "change_low": pl.Float64, "change_high": pl.Float64,
                   "mcnemar_p": pl.Float64, "significant": pl.Boolean, "status": pl.String}

CSS = """
:root { --ink: #1d1d1f; --muted: #5f6368; --line: #d9dce1; --soft: #f5f6f8; --accent: #0b5cad;
        --good: #1e7b34; --bad: #b00020; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; line-height: 1.45;
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 64px; }
h1 { font-size: 1.7em; margin: 0.2em 0 0.1em; }
h2 { font-size: 1.35em; margin: 2.2em 0 0.5em; padding-bottom: 0.25em; border-bottom: 2px solid var(--line); }
h3 { font-size: 1.1em; margin: 1.6em 0 0.4em; }
h4 { font-size: 1em; margin: 1.2em 0 0.3em; color: var(--muted); }
p.lead { color: var(--muted); margin-top: 0; }
a { color: var(--accent); }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.9em; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 12px 0; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; }
nav.toc { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 10px 18px;
          margin: 18px 0; display: inline-block; min-width: 320px; }
nav.toc h2 { font-size: 1em; margin: 0 0 4px; border: 0; padding: 0; }
nav.toc ol { margin: 0; padding-left: 20px; }
nav.toc ol ol { list-style: lower-alpha; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 0.9em; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--line); padding: 3px 8px; vertical-align: top; }
th { background: var(--soft); text-align: left; font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap; }
tbody tr:nth-child(even) td { background: #fafbfc; }
.ci { color: var(--muted); font-size: 0.85em; display: block; }
.swatch { display: inline-block; width: 0.85em; height: 0.85em; border-radius: 2px; margin-right: 5px;
          vertical-align: -0.05em; }
.match { color: var(--good); }
.differs, .erratum { font-weight: 700; }
.differs { color: var(--bad); }
.paper { color: var(--muted); font-weight: 400; font-size: 0.85em; }
.sig { font-weight: 700; }
td.sig-better { background: #e6f4ea !important; }
td.sig-worse { background: #fce8e6 !important; }
.mark { color: var(--bad); font-weight: 700; }
.share { display: inline-block; height: 0.7em; background: #9fb8d6; vertical-align: middle; margin-right: 6px; }
figure { margin: 12px 0 22px; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { color: var(--muted); font-size: 0.9em; max-width: 900px; margin-top: 4px; }
details { margin: 8px 0; }
summary { cursor: pointer; color: var(--accent); }
.note { color: var(--muted); font-size: 0.9em; }
footer { margin-top: 48px; color: var(--muted); font-size: 0.85em; border-top: 1px solid var(--line); padding-top: 8px; }
@media print { nav.toc { display: none; } h2 { break-before: auto; } figure { break-inside: avoid; } }
"""


def e(value) -> str:
    """HTML-escaped text of any value."""
    return html.escape("" if value is None else str(value), quote=True)


def png_data_uri(data: bytes) -> str:
    if not data.startswith(PNG_MAGIC):
        raise ValueError("not a PNG image")
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


class _Page:
    """The page under construction: body parts and the table of contents (top-level sections with
    their subsections)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.toc: list[tuple[str, str, list[tuple[str, str]]]] = []
        self._ids: set[str] = set()

    def anchor(self, title: str) -> str:
        base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"
        name, k = base, 2
        while name in self._ids:
            name, k = f"{base}-{k}", k + 1
        self._ids.add(name)
        return name

    def h2(self, title: str, label: str | None = None) -> str:
        ident = self.anchor(title)
        self.toc.append((ident, label or title, []))
        self.parts.append(f'<h2 id="{ident}">{e(title)}</h2>')
        return ident

    def h3(self, title: str, in_toc: bool = True) -> str:
        ident = self.anchor(f"{self.toc[-1][0]}-{title}" if self.toc else title)
        if in_toc and self.toc:
            self.toc[-1][2].append((ident, title))
        self.parts.append(f'<h3 id="{ident}">{e(title)}</h3>')
        return ident

    def add(self, *parts: str) -> None:
        self.parts.extend(p for p in parts if p)

    def toc_html(self) -> str:
        items = []
        for ident, title, subs in self.toc:
            inner = "".join(f'<li><a href="#{s}">{e(t)}</a></li>' for s, t in subs)
            items.append(f'<li><a href="#{ident}">{e(title)}</a>' + (f"<ol>{inner}</ol>" if inner else "") + "</li>")
        return f'<nav class="toc"><h2>Contents</h2><ol>{"".join(items)}</ol></nav>'


def _figure(png: bytes, alt: str, caption: str) -> str:
    return (f'<figure><img alt="{e(alt)}" src="{png_data_uri(png)}">'
            f"<figcaption>{caption}</figcaption></figure>")


def _swatch(system: str, colours: dict[str, str]) -> str:
    return f'<span class="swatch" style="background:{colours.get(system, "#888888")}"></span>'


def _table(header: list[str], rows: list[list[str]], numeric: set[int] = frozenset(), cls: str = "") -> str:
    """A table from already-escaped cell HTML; columns in ``numeric`` are right-aligned."""
    def cell(tag, i, content):
        return f'<{tag} class="num">{content}</{tag}>' if i in numeric else f"<{tag}>{content}</{tag}>"
    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>" for r in rows)
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _missing(x) -> bool:
    return x is None or x != x


def _value_cell(value, low, high, metric: str) -> str:
    scale, digits, _ = metric_format(metric)
    if _missing(value):
        return "—" if value is None else '<span title="not a number: undefined here">NaN</span>'
    ci = ""
    if not (_missing(low) and _missing(high)):
        ci = f'<span class="ci">[{e(fmt_value(low, scale, digits))}, {e(fmt_value(high, scale, digits))}]</span>'
    return f"{e(fmt_value(value, scale, digits))}{ci}"


def _small(x) -> str:
    """A feature value: three decimals, or three significant digits for values too small for that."""
    if _missing(x):
        return "—"
    return f"{x:.3f}" if x == 0 or abs(x) >= 0.01 else f"{x:.2e}"


def _p_text(p) -> str:
    if p is None or p != p:
        return "—"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


# --- what the run holds -------------------------------------------------------------------------

def suite_kinds(part: pl.DataFrame) -> set[str]:
    """What a suite's metrics allow to draw: "tgbi", "winomt", "proportions" (p_m/p_f per set),
    "occupations", "embedding"."""
    metrics = set(part["metric"].unique().to_list())
    sets = part.filter(~PER_OCCUPATION & ~PAIRWISE)
    kinds = set()
    if "tgbi" in metrics:
        kinds.add("tgbi")
    if sets.filter((pl.col("subset") == "all") & (pl.col("metric") == "acc")).height:
        kinds.add("winomt")
    if sets.filter(LANGUAGE_SUBSET & (pl.col("metric") == "acc")).height:
        kinds.add("winomt-languages")
    if "tgbi" not in kinds and sets.filter(pl.col("metric").is_in(["p_m", "p_f"])).height:
        kinds.add("proportions")
    if part.filter(pl.col("subset").str.contains("/occupation/")).height or metrics & set(CORRELATIONS):
        kinds.add("occupations")
    if {"mean_intensity_src", "mean_intensity_tgt"} & metrics or part.filter(pl.col("subset").str.contains("/shift/")).height:
        kinds.add("embedding")
    return kinds


def significance(metrics: pl.DataFrame, suite: str, alpha: float = ALPHA) -> dict[str, str]:
    """Systems of ``suite`` whose paired comparisons (rows system=A, subset="vs/B", metrics mcnemar_p
    and diff_correct) show them better ("best") or worse ("worst") than every other system at p < alpha."""
    rows = metrics.filter((pl.col("suite") == suite) & PAIRWISE & pl.col("metric").is_in(PAIR_METRICS))
    pairs: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows.iter_rows(named=True):
        pairs.setdefault((r["system"], r["subset"][3:]), {})[r["metric"]] = r["value"]
    systems = {a for a, _ in pairs} | {b for _, b in pairs}
    marks = {}
    for a in sorted(systems):
        others = [pairs.get((a, b)) for b in systems if b != a]
        if not others or any(o is None or "mcnemar_p" not in o or "diff_correct" not in o for o in others):
            continue
        significant = all(o["mcnemar_p"] is not None and o["mcnemar_p"] < alpha for o in others)
        if significant and all(o["diff_correct"] > 0 for o in others):
            marks[a] = "best"
        elif significant and all(o["diff_correct"] < 0 for o in others):
            marks[a] = "worst"
    return marks


def headline_panels(frame: pl.DataFrame) -> list[tuple[str, str]]:
    """The (subset, metric) pairs that sum a suite up, for trends: the TGBI index; WinoMT's Acc, ΔG and
    ΔS; p_f per set of OTSC-like suites; the embedding study's mean intensity and direction after
    translation."""
    present = frame.select("subset", "metric").unique(maintain_order=True)
    pairs = [(s, m) for s, m in present.iter_rows()]
    have = set(pairs)
    if any(m == "tgbi" for _, m in pairs):
        return [(s, m) for s, m in pairs if m == "tgbi"]
    if ("all", "acc") in have:
        return [p for p in (("all", "acc"), ("all", "delta_g"), ("all", "delta_s")) if p in have]
    by_language = sorted({s for s, m in pairs if m == "acc" and "/" not in s and s != "all"})
    if by_language:  # WinoMT per target language
        return [(s, m) for s in by_language for m in ("acc", "delta_g", "delta_s") if (s, m) in have][:24]
    ordinary = [(s, m) for s, m in pairs if "/occupation/" not in s and "/shift/" not in s and not s.startswith("vs/")]
    sets = [(s, m) for s, m in ordinary if m == "p_f"]
    if sets:
        return sets[:12]
    return [(s, m) for s, m in ordinary if m in ("mean_intensity_tgt", "mean_direction_tgt")][:12]


def _female_shares(run: RunDir, suite: str) -> dict[str, float]:
    """Occupation -> female share (percent, as in the lexicon) from items.parquet, where it has them."""
    if not run.items.exists():
        return {}
    scan = pl.scan_parquet(run.items)
    if not {"occupation", "female_share"} <= set(scan.collect_schema().names()):
        return {}
    shares = (scan.filter((pl.col("suite") == suite) & pl.col("occupation").is_not_null())
              .group_by("occupation").agg(pl.col("female_share").first()).collect())
    return {o: s for o, s in shares.iter_rows() if s is not None}


def _read(path: Path) -> pl.DataFrame | None:
    return pl.read_parquet(path) if path.exists() else None


# --- sections -----------------------------------------------------------------------------------

def _header(page: _Page, info: dict, confidence: str) -> None:
    config = info["config"]
    boot = config.get("metrics", {})
    page.add(f"<header><h1>biaseval report: {e(config.get('name'))}</h1>",
             f'<p class="lead">{e(config.get("description") or "")}</p>',
             '<dl class="meta">'
             f"<dt>run</dt><dd><code>{e(info.get('run_id'))}</code></dd>"
             f"<dt>config hash</dt><dd><code>{e(info.get('config_hash'))}</code></dd>"
             f"<dt>biaseval</dt><dd>{e(info.get('biaseval_version'))}</dd>"
             f"<dt>created</dt><dd>{e(info.get('created_at'))}</dd>"
             f"<dt>updated</dt><dd>{e(info.get('updated_at'))}</dd>"
             f"<dt>intervals</dt><dd>{e(confidence)} percentile bootstrap over items, "
             f"{e(boot.get('bootstrap', '?'))} resamples, seed {e(boot.get('seed', '?'))}</dd>"
             "</dl></header>")


def _run_section(page: _Page, info: dict, metrics: pl.DataFrame, colours: dict[str, str]) -> None:
    page.h2("Systems and suites", "Systems and suites")
    rows = []
    for name, s in info.get("systems", {}).items():
        rows.append([f"{_swatch(name, colours)}<strong>{e(name)}</strong>", e(s.get("backend")),
                     e(s.get("version") or "no version given"), e(", ".join(s.get("suites", [])))])
    page.add(_table(["system", "backend", "version", "suites"], rows, cls="systems"))
    rows = []
    for name, d in info.get("suites", {}).items():
        if d.get("commit"):
            origin = f'{e(d.get("dataset"))} @ <code title="{e(d["commit"])}">{e(d["commit"][:12])}</code>'
        else:
            origin = "template / word list" + (f' (<code>{e(d.get("path"))}</code>)' if d.get("path") else "")
        rows.append([f"<strong>{e(name)}</strong>", e(d.get("version")), e(f"{d.get('size', 0):,}"), origin,
                     f'<code title="{e(d.get("fingerprint"))}">{e((d.get("fingerprint") or "")[:12])}</code>'])
    page.add(_table(["suite", "version", "items", "source (dataset @ commit)", "fingerprint"], rows, numeric={2},
                    cls="suites"))
    if "signature" in metrics.columns:
        signatures = metrics.select("signature").drop_nulls().unique().sort("signature")["signature"].to_list()
        if signatures:
            page.add("<details><summary>Signatures (what each metric row was computed from)</summary><ul>"
                     + "".join(f"<li><code>{e(s)}</code></li>" for s in signatures) + "</ul></details>")


def _failures_section(page: _Page, failures: pl.DataFrame) -> None:
    if failures is None or failures.height == 0:
        return
    page.h2("Items without a translation")
    page.add('<p class="note">Not scored: each metric\'s n counts only translated items. Rerunning the sweep '
             "retries them.</p>")
    rows = [[e(r["system"]), e(r["suite"]), e(r["items"]), e((r["error"] or "")[:300])] for r in failures.iter_rows(named=True)]
    page.add(_table(["system", "suite", "items", "most common error"], rows, numeric={2}, cls="failures"))


def _published_section(page: _Page, metrics: pl.DataFrame, name: str, colours: dict[str, str]) -> None:
    published = published_results.load(name)
    comparison = compare_published(metrics, published, only_present=True)
    if not comparison.tables:
        return
    page.h2(f"Published tables recomputed ({published.cite})", "Published tables recomputed")
    page.add('<p class="note">Each cell: the value recomputed from this run at the paper\'s precision. '
             '<span class="match">✓</span> equals the printed value; <strong>bold</strong> with the printed value '
             "beside it where it does not, with a numbered note where the difference is a known erratum and "
             '<span class="differs">≠</span> where it is not explained.</p>')
    for table in comparison.tables:
        page.add(f"<h3>{e(table.title)}</h3>")
        rows = []
        for label, cells in table.rows:
            line = [e(label)]
            for cell in cells:
                if cell.status == "extra":
                    line.append(e(cell.ours))
                elif cell.status == "match":
                    line.append(f'{e(cell.ours)} <span class="match" title="equals the printed value">✓</span>')
                elif cell.status == "erratum":
                    line.append(f'<span class="erratum">{e(cell.ours)}</span> <span class="paper">(paper {e(cell.paper)})</span> '
                                f'<a href="#erratum-{cell.note}">[{cell.note}]</a>')
                else:
                    line.append(f'<span class="differs">{e(cell.ours)}</span> <span class="paper">(paper {e(cell.paper)})</span> '
                                '<span class="differs" title="differs, no known reason">≠</span>')
            rows.append(line)
        header = [""] + [f"{_swatch(s, colours)}{e(s)}" for s in table.systems]
        page.add(_table(header, rows, numeric=set(range(1, len(header))), cls=f"published suite-{table.suite}"))
    if comparison.notes:
        page.add("<p>Known differences between the paper's print and its recorded data:</p><ol class=\"errata\">"
                 + "".join(f'<li id="erratum-{i}"><strong>{e(system)}, {e(label)}:</strong> {e(note)}</li>'
                           for i, (system, label, note) in enumerate(comparison.notes, 1))
                 + "</ol>")


def _metric_table(part: pl.DataFrame, systems: list[str], colours: dict[str, str], suite: str) -> str:
    """Wide: a row per subset × metric, a column per system with the value and its CI."""
    rows_frame = part.filter(~PER_OCCUPATION & ~PAIRWISE)
    cells = {(r["subset"], r["metric"], r["system"]): r for r in rows_frame.iter_rows(named=True)}
    rows = []
    for subset, metric in rows_frame.select("subset", "metric").unique(maintain_order=True).iter_rows():
        ns = {cells[(subset, metric, s)]["n"] for s in systems if (subset, metric, s) in cells}
        n = e(next(iter(ns))) if len(ns) == 1 else e(f"{min(ns)}–{max(ns)}") if ns else "—"
        line = [e(subset), e(metric + (" (%)" if metric_format(metric)[2] else "")), n]
        for s in systems:
            r = cells.get((subset, metric, s))
            line.append(_value_cell(r["value"], r["ci_low"], r["ci_high"], metric) if r else "—")
        rows.append(line)
    header = ["subset", "metric", "n"] + [f"{_swatch(s, colours)}{e(s)}" for s in systems]
    return _table(header, rows, numeric=set(range(2, len(header))), cls=f"metrics suite-{suite}")


def _pairwise_table(part: pl.DataFrame, systems: list[str], colours: dict[str, str], suite: str, tgbi: bool) -> str:
    pairs = part.filter(PAIRWISE & pl.col("metric").is_in(PAIR_METRICS))
    if pairs.height == 0:
        return ""
    cells: dict[tuple[str, str], dict] = {}
    for r in pairs.iter_rows(named=True):
        cells.setdefault((r["system"], r["subset"][3:]), {})[r["metric"]] = r["value"]
        cells[(r["system"], r["subset"][3:])]["n"] = r["n"]
    names = [s for s in systems if any(a == s for a, _ in cells)] + sorted({a for a, _ in cells} - set(systems))
    rows = []
    for a in names:
        line = [f"{_swatch(a, colours)}<strong>{e(a)}</strong>"]
        for b in names:
            c = cells.get((a, b))
            if a == b or c is None:
                line.append("—" if a != b else "")
                continue
            diff, p = c.get("diff_correct"), c.get("mcnemar_p")
            significant = p is not None and p == p and p < ALPHA
            text = f"{diff * 100:+.1f} pts" if diff is not None and diff == diff else "—"
            kind = ("sig-better" if diff > 0 else "sig-worse") if significant and diff else ""
            html_cell = f'<span class="{"sig" if significant else ""}">{e(text)}</span><span class="ci">{e(_p_text(p))}, n = {e(c.get("n"))}</span>'
            line.append((kind, html_cell))
        rows.append(line)
    head = "".join(f'<th class="num">vs {_swatch(b, colours)}{e(b)}</th>' for b in names)
    body = []
    for line in rows:
        tds = [f"<td>{line[0]}</td>"]
        for c in line[1:]:
            if isinstance(c, tuple):
                tds.append(f'<td class="num {c[0]}">{c[1]}</td>')
            else:
                tds.append(f'<td class="num">{c}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    outcome = ("the share of gender-neutral outputs" if tgbi
               else "the share of items whose detected gender equals the gold gender (accuracy)")
    return (f'<table class="pairwise suite-{e(suite)}"><thead><tr><th>system</th>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>"
            f'<p class="note">Paired comparisons on the items both systems translated: each cell is the row system\'s '
            f"{outcome} minus the column system's, in percentage points, with the p-value of McNemar's exact test on "
            f"the per-item outcomes. Green / red: the row system is significantly better / worse (p &lt; {ALPHA}).</p>")


def _suite_section(page: _Page, run: RunDir, info: dict, metrics: pl.DataFrame, suite: str, colours: dict[str, str],
                   confidence: str, embedding: dict) -> None:
    part = metrics.filter(pl.col("suite") == suite)
    systems = [s for s in colours if s in set(part["system"].to_list())]
    kinds = suite_kinds(part)
    d = info.get("suites", {}).get(suite, {})
    page.h2(f"Suite {suite}", suite)
    facts = []
    if d:
        size = d.get("size") or 0
        facts.append(f"version {e(d.get('version'))}, {size:,} items")
        if d.get("commit"):
            facts.append(f"dataset {e(d.get('dataset'))} @ <code>{e(d['commit'][:12])}</code>")
    facts.append("systems: " + ", ".join(f"{_swatch(s, colours)}{e(s)}" for s in systems))
    page.add(f'<p class="note">{"; ".join(facts)}.</p>')
    sets = part.filter(~PER_OCCUPATION & ~PAIRWISE)

    if "tgbi" in kinds:
        page.h3("TGBI per set")
        png = plots.tgbi_bars(sets.filter(pl.col("metric").is_in(["P", "tgbi"])), colours)
        page.add(_figure(png, f"{suite}: P per set and TGBI per system",
                         f"Left: P = √(p_m·p_f + p_n) for each set of gender-neutral sentences (1 when every output "
                         f"is gender-neutral, lower when outputs commit to one gender), one bar per system; right: the "
                         f"TGBI index, the mean P over the sets the index is defined on. Whiskers: {e(confidence)} bootstrap CIs."))
    if "winomt" in kinds:
        marks = significance(metrics, suite)
        page.h3("Accuracy and bias (WinoMT)")
        png = plots.winomt_bars(sets.filter(pl.col("subset") == "all"), colours, marks)
        has_pairs = part.filter(PAIRWISE).height > 0
        if marks:
            said = "; ".join(f"{e(s)} is significantly {'more' if m == 'best' else 'less'} accurate than every other system"
                             for s, m in marks.items())
        elif has_pairs:
            said = "no system is significantly more (or less) accurate than every other one"
        else:
            said = "this run has no paired tests, so no system is marked"
        page.add(_figure(png, f"{suite}: accuracy, ΔG and ΔS per system",
                         f"Acc: share of sentences whose entity gets the gold gender. ΔG: F1 on male minus F1 on female "
                         f"entities (positive favours men). ΔS: pro- minus anti-stereotypical performance (positive: "
                         f"better where the gender follows the stereotype). Whiskers: {e(confidence)} bootstrap CIs. "
                         f"<span class=\"mark\">▲ best / ▼ worst</span>: better (worse) than every other system by "
                         f"McNemar's test on per-item correctness, p &lt; {ALPHA}; here {said}."))
    if "winomt-languages" in kinds:
        _winomt_languages(page, run, part, suite, systems, colours, confidence)
    if "proportions" in kinds:
        shown = sets.filter(pl.col("metric").is_in(["p_m", "p_f"]))
        page.h3("Male and female renderings per set")
        png = plots.proportion_bars(shown, colours)
        page.add(_figure(png, f"{suite}: p_m and p_f per set and system",
                         f"Share of outputs that render the person male (p_m, left) and female (p_f, right) in each set "
                         f"(<code>subset</code>: the cue's genders, e.g. speaker-friend, or target language / pronoun), "
                         f"one bar per system; the rest are neutral or undetected (p_n). Where the cue is female an "
                         f"unbiased system has p_f near 100%. Whiskers: {e(confidence)} bootstrap CIs."))
    pairwise = _pairwise_table(part, systems, colours, suite, "tgbi" in kinds)
    if pairwise:
        page.h3("Paired comparisons")
        page.add(pairwise)
    if "occupations" in kinds:
        _occupations(page, run, part, suite, colours, confidence)
    if "embedding" in kinds or suite in embedding.get("suites", set()):
        _embedding(page, run, suite, embedding, colours)
    page.h3(f"All metrics with {confidence} CIs")
    page.add('<p class="note">Value, with the bootstrap interval below it; n: items (occupations for '
             "correlations). Per-occupation and paired rows are in their own tables.</p>",
             _metric_table(part, systems, colours, suite))


def _winomt_languages(page: _Page, run: RunDir, part: pl.DataFrame, suite: str, systems: list[str],
                      colours: dict[str, str], confidence: str) -> None:
    """WinoMT scored per target language: bars of Acc/ΔG/ΔS, a table, and why outputs were unknown."""
    page.h3("Accuracy and bias per target language (WinoMT)")
    by_language = part.filter(~PER_OCCUPATION & ~PAIRWISE & LANGUAGE_SUBSET)
    png = plots.winomt_language_bars(by_language, colours)
    page.add(_figure(png, f"{suite}: Acc, ΔG and ΔS per target language and system",
                     f"Acc: share of sentences whose entity gets the gold gender in the translation (unknown counts "
                     f"as wrong). ΔG: F1 on male minus F1 on female entities. ΔS: accuracy on pro-stereotypical minus "
                     f"anti-stereotypical sentences. A group per target language, a bar per system; whiskers: "
                     f"{e(confidence)} bootstrap CIs."))
    wide = winomt_language_table(part)
    rows = []
    for r in wide.iter_rows(named=True):
        line = [e(r["language"]), f"{_swatch(r['system'], colours)}{e(r['system'])}"]
        for m in WINOMT_HEADLINE:
            v = r.get(f"value_{m}")
            line.append(_value_cell(v, r.get(f"ci_low_{m}"), r.get(f"ci_high_{m}"), m) if v is not None else "—")
        line.append(e(r.get("n_acc")))
        rows.append(line)
    page.add(_table(["language", "system", "Acc (%)", "ΔG (%)", "ΔS (%)", "unknown (%)", "n"], rows,
                    numeric={2, 3, 4, 5, 6}, cls=f"winomt-languages suite-{e(suite)}"))
    if not (run.labels.exists() and run.items.exists()):
        return
    reasons = read_reasons(run.labels, run.items)
    if reasons.height == 0:
        return
    reasons = reasons.filter((pl.col("suite") == suite) & (pl.col("label") == "unknown"))
    table: dict[tuple[str, str], dict[str, int]] = {}
    for r in reasons.iter_rows(named=True):
        table.setdefault((r["tgt_lang"], r["system"]), {})[r["reason"]] = r["count"]
    rows = [[e(lang), f"{_swatch(system, colours)}{e(system)}"] + [e(counts.get(k, 0)) for k in UNKNOWN_REASONS]
            for (lang, system), counts in sorted(table.items())]
    if rows:
        page.h3("Why outputs were labelled unknown", in_toc=False)
        page.add('<p class="note">Rows per reason: no target word aligned to the entity; no aligned word the '
                 "language's analyser knows as a noun; a noun with one form for both genders and nothing marking "
                 "its gender; evidence that disagrees. Unknown is a label, not a guess.</p>",
                 _table(["language", "system", *UNKNOWN_REASONS], rows, numeric=set(range(2, 2 + len(UNKNOWN_REASONS))),
                        cls="unknown-reasons"))


def _occupations(page: _Page, run: RunDir, part: pl.DataFrame, suite: str, colours: dict[str, str], confidence: str) -> None:
    page.h3("Per occupation")
    corr = correlation_table(part)
    if corr.height:
        rows = []
        for r in corr.iter_rows(named=True):
            def cell(m):
                if f"value_{m}" not in r:
                    return "—"
                return _value_cell(r[f"value_{m}"], r[f"ci_low_{m}"], r[f"ci_high_{m}"], m)
            n = r.get("n_r_female_share", r.get("n_rho_female_share"))
            rows.append([f"{_swatch(r['system'], colours)}{e(r['system'])}", e(r["subset"]), cell("r_female_share"),
                         cell("rho_female_share"), e(n)])
        page.add(_table(["system", "language", "Pearson r", "Spearman ρ", "occupations"], rows, numeric={2, 3, 4},
                        cls=f"correlations suite-{suite}"),
                 f'<p class="note">Correlation across occupations of p_f (outputs with a female form) with the '
                 f"occupation's female share in labour statistics, {e(confidence)} bootstrap CIs. Positive: systems "
                 f"reproduce the labour market's gender split. NaN: p_f does not vary across occupations.</p>")
    per = occupation_rates(part)
    if per.height == 0:
        return
    shares = _female_shares(run, suite)
    languages = per["language"].unique(maintain_order=True).to_list()
    if len(languages) > MAX_OCCUPATION_CHARTS:
        page.add(f'<p class="note">Charts for the first {MAX_OCCUPATION_CHARTS} of {len(languages)} target languages; '
                 "every language has its table.</p>")
    for k, ((language,), rows_) in enumerate(per.group_by("language", maintain_order=True)):
        if k < MAX_OCCUPATION_CHARTS:
            png, drawn = plots.occupation_bars(rows_, colours, shares or None, limit=MAX_OCCUPATIONS_DRAWN)
            total = rows_["occupation"].n_unique()
            which = "" if drawn == total else (f" Only the {drawn} of {total} occupations at both ends of the order "
                                               "are drawn; the table below has them all.")
            order = "by female share in labour statistics (black diamonds)" if shares else "by mean p_f"
            page.add(_figure(png, f"{suite} → {language}: p_f per occupation",
                             f"{e(suite)} → {e(language)}: p_f, the share of outputs with a female form, per occupation "
                             f"and system, occupations ordered {order}. A system that follows the cue regardless of "
                             f"stereotype gives the same p_f for every occupation; bars that grow with the diamonds "
                             f"follow the stereotype. Whiskers: {e(confidence)} bootstrap CIs.{which}"))
        systems = [s for s in colours if s in set(rows_["system"].to_list())]
        wide = rows_.pivot(on="system", index="occupation", values="value", aggregate_function="first").sort("occupation")
        lines = []
        for r in wide.iter_rows(named=True):
            share = shares.get(r["occupation"])
            lines.append([e(r["occupation"]), e(f"{share:.1f}") if share is not None else "—"]
                         + [e(fmt_value(r.get(s), 100, 1)) for s in systems])
        page.add(f"<details><summary>p_f by occupation, {e(suite)} → {e(language)} (%)</summary>"
                 + _table(["occupation", "female share (%)"] + [f"{_swatch(s, colours)}{e(s)}" for s in systems], lines,
                          numeric=set(range(1, 2 + len(systems))), cls=f"occupations suite-{suite}")
                 + "</details>")


def _embedding(page: _Page, run: RunDir, suite: str, embedding: dict, colours: dict[str, str]) -> None:
    page.h3("Embedding bias before and after translation")
    page.add('<p class="note">Per word w and the female/male words f, m of its language (she/he, lei/lui, …): '
             "intensity = |cos(w, f) − cos(w, m)|, direction = cos(w, f) − cos(w, m) (positive leans female).</p>")
    for path in embedding.get("plots", {}).get(suite, []):
        data = path.read_bytes()
        if not data.startswith(PNG_MAGIC):
            page.add(f'<p class="note">{e(path.name)} is not a PNG image; left out.</p>')
            continue
        page.add(_figure(data, path.stem,
                         f"{e(path.name)}: each word's cosine similarity to the male word (x) against the female word (y), "
                         "before translation (left, source language) and after (right); colour: the word's gender class. "
                         "Points above the diagonal lean female, below it male; points that move towards the diagonal "
                         "lost their lean in translation."))
    words = embedding.get("words")
    words = words.filter(pl.col("suite") == suite) if words is not None and words.height else None
    _embedding_checks(page, suite, words)
    bins = embedding.get("bins")
    if bins is not None and bins.height:
        part = bins.filter(pl.col("suite") == suite)
        for (side, language, system), rows_ in part.group_by("side", "language", "system", maintain_order=True):
            who = "source words" if side == "source" else f"translations by {system}"
            binning = f", {rows_['binning'][0]} bins" if "binning" in rows_.columns else ""
            lines = []
            for r in rows_.iter_rows(named=True):
                share = r["share"] if r["share"] == r["share"] else 0.0
                bar = f'<span class="share" style="width:{max(0.0, min(share, 1.0)) * 80:.0f}px"></span>'
                everyone = r.get("share_all")
                lines.append([e(r["feature"]), e(r["bin"]), e(f"[{_small(r['lo'])}, {_small(r['hi'])}]"), e(r["count"]),
                              f"{bar}{e(f'{100 * share:.1f}%')}", e(fmt_value(everyone, 100, 1)), e(r["examples"])])
            page.add(f"<h4>Bins: {e(who)} ({e(language)}{e(binning)})</h4>",
                     _table(["feature", "bin", "range", "words", "share", "share of all (%)", "most extreme words"],
                            lines, numeric={1, 3, 4, 5}, cls=f"bins suite-{suite}"))
        if part.height:
            page.add('<p class="note">Intensity in equal-width bins over its observed range, or in bins of a fixed '
                     "width from 0; direction by its size on each side, so bin 1 is the weakest lean, female "
                     "(direction+) and male (direction−) alike; a direction of exactly 0 is on neither side "
                     "(direction0). Share: within the feature (its sign); share of all: of every word with a "
                     "direction. Most words in the first intensity bins: words stay close to both gendered words; a "
                     "heavy direction+ side: words lean female.</p>")
    shift = embedding.get("shift")
    if shift is not None and shift.height:
        part = shift.filter(pl.col("suite") == suite)
        if part.height:
            lines = []
            for r in shift_table(part).iter_rows(named=True):
                lines.append([f"{_swatch(r['system'], colours)}{e(r['system'])}", e(r["tgt_lang"]), e(r["gender_class"]),
                              e(r["words"])] + [e(fmt_value(r.get(f"share_{g}"), 100, 1)) for g in SHIFT_GENDERS])
            page.add("<h4>Gender shift</h4>",
                     _table(["system", "language", "source class", "words"] + [f"{g} (%)" for g in SHIFT_GENDERS], lines,
                            numeric=set(range(3, 4 + len(SHIFT_GENDERS))), cls=f"shift suite-{suite}"),
                     '<p class="note">Rows: the source word\'s gender class; columns: the grammatical gender of its '
                     "translation, as a share of the class's words. Neutral words coming out masculine is the "
                     "default-to-masculine bias.</p>")
    if words is not None:
        part = words
        if part.height:
            shown = part.head(MAX_WORD_ROWS)
            lines = []
            for r in shown.iter_rows(named=True):
                def num(x):
                    return e(f"{x:+.4f}") if x is not None and x == x else "—"
                lines.append([e(r.get("word")), e(r.get("gender_class")), e(r.get("system")), e(r.get("translation")),
                              e(r.get("tgt_gender")), num(r.get("direction_src")), num(r.get("direction_tgt"))])
            more = f" (first {MAX_WORD_ROWS} of {part.height})" if part.height > MAX_WORD_ROWS else ""
            page.add(f"<details><summary>Every word and its translation{e(more)}</summary>"
                     + _table(["word", "class", "system", "translation", "translation's gender", "direction before",
                               "direction after"], lines, numeric={5, 6}, cls=f"words suite-{suite}")
                     + "</details>")


def _embedding_checks(page: _Page, suite: str, words: pl.DataFrame | None) -> None:
    """The sanity figures of a suite's embedding study and the words without a vector."""
    if words is None or not words.height:
        return
    from biaseval.metrics.embedding import describe_missing, missing_words, sanity

    figures = sanity(words)
    if figures.height:
        lines = [[e(r["system"]), e(f"{r['src_lang']} → {r['tgt_lang']}"), e(f"{r['cos_src_fm']:.3f}"),
                  e(f"{r['cos_tgt_fm']:.3f}"), e(r["words"]), e(fmt_value(r["share_rose_f"], 100, 1)),
                  e(fmt_value(r["share_rose_m"], 100, 1))] for r in figures.iter_rows(named=True)]
        page.add("<h4>Sanity figures</h4>",
                 _table(["system", "languages", "cos(f, m) before", "cos(f, m) after", "words", "rose to f (%)",
                         "rose to m (%)"], lines, numeric={2, 3, 4, 5, 6}, cls=f"sanity suite-{suite}"),
                 '<p class="note">cos(f, m): the female and male word of each language in its model (cos(she, he), '
                 "cos(lei, lui)); rose: the share of words whose similarity to f (to m) is higher after translation, "
                 "of the words with a vector before and after.</p>")
    notes = [n for n in map(describe_missing, missing_words(words)) if n]
    if notes:
        page.add('<h4>Words without a vector</h4><ul class="missing">'
                 + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>")
    else:
        page.add('<p class="note">Every word and translation has a vector in its embedding model.</p>')


def _history_frame(history: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in ("run_id", "created_at", "system", "suite", "subset", "metric", "value") if c not in history.columns]
    if missing:
        raise ValueError(f"history: missing columns {', '.join(missing)}")
    extra = [pl.lit(None, dtype=t).alias(c) for c, t in HISTORY_COLUMNS.items() if c not in history.columns]
    frame = history.with_columns(extra) if extra else history
    return frame.with_columns(pl.col("significant").cast(pl.Boolean).fill_null(False))


def _drift_section(page: _Page, history: pl.DataFrame, suites: list[str], colours: dict[str, str]) -> None:
    page.h2("Drift over time")
    history = _history_frame(history)
    runs = history["run_id"].n_unique()
    if history.height == 0:
        page.add('<p class="note">The history holds no runs yet.</p>')
        return
    page.add(f'<p class="note">{runs} runs from {e(history["created_at"].min())} to {e(history["created_at"].max())}. '
             "Each point is one run's value with its bootstrap CI; a red ring marks a run whose change from its baseline "
             "the monitor judged significant.</p>")
    order = [s for s in suites if s in set(history["suite"].to_list())]
    order += sorted(set(history["suite"].to_list()) - set(order))
    for suite in order:
        part = history.filter(pl.col("suite") == suite)
        panels = headline_panels(part)
        if not panels:
            continue
        page.h3(f"{suite}: headline metrics")
        png = plots.trend_plot(part, colours, panels)
        names = ", ".join(f"{plots.metric_label(m)} on {s}" for s, m in panels)
        page.add(_figure(png, f"{suite}: trends of {names}",
                         f"{e(suite)}: {e(names)} for each system over the runs' creation time; whiskers: bootstrap CIs; "
                         "red rings: significant changes."))
    significant = history.filter(pl.col("significant")).sort("created_at", "system", "suite", "subset", "metric",
                                                             descending=[True, False, False, False, False])
    page.h3("Significant changes")
    if significant.height == 0:
        page.add('<p class="note">None: no metric of any run changed significantly from its baseline.</p>')
        return
    lines = []
    for r in significant.head(MAX_DRIFT_ROWS).iter_rows(named=True):
        scale, digits, unit = metric_format(r["metric"])
        change = "—"
        if r["change"] is not None:
            change = f"{r['change'] * scale:+.{digits}f}"
            if r["change_low"] is not None and r["change_high"] is not None:
                change += f" [{r['change_low'] * scale:+.{digits}f}, {r['change_high'] * scale:+.{digits}f}]"
        lines.append([e(r["created_at"]), f"<code>{e(r['run_id'])}</code>", f"{_swatch(r['system'], colours)}{e(r['system'])}",
                      e(r["suite"]), e(r["subset"]), e(r["metric"] + (" (%)" if unit else "")), _value_cell(r["value"], r["ci_low"], r["ci_high"], r["metric"]),
                      e(change + (" pts" if unit and r["change"] is not None else "")), e(_p_text(r["mcnemar_p"])),
                      e(r["status"] or "")])
    more = (f'<p class="note">The {MAX_DRIFT_ROWS} latest of {significant.height} significant changes.</p>'
            if significant.height > MAX_DRIFT_ROWS else "")
    page.add(_table(["created", "run", "system", "suite", "subset", "metric", "value", "change [CI]", "McNemar", "status"],
                    lines, numeric={6, 7, 8}, cls="drift"), more)


def render_html(run_root: Path, history: pl.DataFrame | None = None) -> str:
    """The whole report.html of a run directory as text; ``history`` adds trends over earlier runs."""
    run = RunDir(run_root)
    info = run.read_run()
    if info is None:
        raise RunDirError(f"{run.run_json}: not found; is {run.root} a biaseval run directory?")
    if not run.metrics.exists():
        raise RunDirError(f"{run.metrics}: not found; score the run first (biaseval score --run {run.root})")
    metrics = pl.read_parquet(run.metrics)
    config = info["config"]
    confidence = f"{round(100 * float(config.get('metrics', {}).get('confidence', 0.95)))}%"

    names = list(info.get("systems", {}))
    names += sorted(set(metrics["system"].unique().to_list()) - set(names))
    if history is not None and "system" in history.columns:
        names += sorted(set(history["system"].drop_nulls().unique().to_list()) - set(names))
    colours = plots.system_colours(names)

    suites = [s for s in config.get("suites", []) if s in set(metrics["suite"].to_list())]
    suites += [s for s in metrics["suite"].unique(maintain_order=True).to_list() if s not in suites]

    embedding = {"bins": _read(run.root / "embedding_bins.parquet"), "shift": _read(run.root / "gender_shift.parquet"),
                 "words": _read(run.root / "embedding_bias.parquet"), "plots": {}}
    by_length = sorted(suites, key=len, reverse=True)
    for path in sorted((run.root / "plots").glob("embedding-*.png")):
        owner = next((s for s in by_length if path.stem.startswith(f"embedding-{s}-")), None)
        if owner is not None:
            embedding["plots"].setdefault(owner, []).append(path)
    embedding["suites"] = set(embedding["plots"]) | {
        s for key in ("bins", "shift", "words") if embedding[key] is not None for s in embedding[key]["suite"].to_list()}

    page = _Page()
    _run_section(page, info, metrics, colours)
    if run.labels.exists():
        _failures_section(page, read_failures(run.labels))
    if config.get("published"):
        _published_section(page, metrics, config["published"], colours)
    for suite in suites:
        _suite_section(page, run, info, metrics, suite, colours, confidence, embedding)
    if history is not None:
        _drift_section(page, history, suites, colours)

    head = _Page()
    _header(head, info, confidence)
    title = f"biaseval report: {config.get('name')}"
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title>",
        f"<style>{CSS}</style></head>",
        "<body><main>",
        *head.parts,
        page.toc_html(),
        *page.parts,
        f"<footer>biaseval {e(info.get('biaseval_version'))}: report of run <code>{e(info.get('run_id'))}</code>, "
        "from run.json and metrics.parquet in its run directory. Values are fractions shown in percent where marked."
        "</footer>",
        "</main></body></html>",
    ]) + "\n"
