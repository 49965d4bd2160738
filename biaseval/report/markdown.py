"""report.md: the run's tables as recomputed, beside the published values where a run names them.

Pure rendering: metrics frame and run info in, Markdown text out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from biaseval.report.adjectives import adjective_section
from biaseval.report.collection import collected_once
from biaseval.report.control import control_tables
from biaseval.report.mittens import section as mittens_section
from biaseval.report.mittens import without_mittens
from biaseval.report.published import Published
from biaseval.report.sampling import sample_section
from biaseval.run.cost import cost_lines

PERCENT_METRICS = {"p_m", "p_f", "p_n", "acc", "delta_g", "delta_s", "neutral", "unknown", "f1_male", "f1_female",
                   "macro_f1", "control_acc", "control_unknown", "control_unasked"}
PERCENT_METRICS |= {"misgendered", "ambiguous", "read", "mixed", "no_reader", "worst_gender", "worst_language", "worst_set",
                    "worst_level", "worst_case"}  # MiTTenS (report/mittens.py)
# Per-occupation, gender-shift and pairwise rows go in their own sections (and the HTML report),
# not in the list of all metrics.
PER_OCCUPATION = (pl.col("subset").str.contains("/occupation/") | pl.col("subset").str.contains("/shift/")
                  | pl.col("subset").str.starts_with("vs/")
                  | pl.col("subset").str.starts_with("cell/"))  # MiTTenS's cells: its own section lists the weakest


def _fmt(value: float | None, scale: float, decimals: int) -> str:
    if value is None:
        return "—"
    return f"{value * scale:.{decimals}f}"


def _lookup(metrics: pl.DataFrame) -> dict[tuple[str, str, str, str], dict]:
    return {(r["suite"], r["subset"], r["metric"], r["system"]): r for r in metrics.iter_rows(named=True)}


def fmt_value(value: float | None, scale: float, decimals: int) -> str:
    """A metric value at a table's scale and precision; "—" when there is none."""
    return _fmt(value, scale, decimals)


def metric_format(metric: str) -> tuple[float, int, str]:
    """(scale, decimals, unit) a metric is shown with: fractions in percent, other values as they are."""
    return (100, 2, " %") if metric in PERCENT_METRICS else (1, 4, "")


@dataclass(frozen=True)
class PublishedCell:
    """One recomputed cell beside the printed one. ``status``: "extra" (a system the paper does not
    print), "match", "erratum" (a known difference; ``note`` numbers it) or "differs"."""

    ours: str
    paper: str | None
    status: str
    note: int | None = None


@dataclass(frozen=True)
class PublishedTable:
    title: str
    suite: str
    systems: tuple[str, ...]
    rows: tuple[tuple[str, tuple[PublishedCell, ...]], ...]  # (row label, one cell per system)


@dataclass(frozen=True)
class PublishedComparison:
    tables: tuple[PublishedTable, ...]
    notes: tuple[tuple[str, str, str], ...]  # (system, row label, the erratum's note), numbered from 1


def compare_published(metrics: pl.DataFrame, published: Published, only_present: bool = False) -> PublishedComparison:
    """Each published table of a suite in ``metrics`` recomputed at the paper's precision, cell by cell:
    the paper's systems (``only_present``: those the run has), then the run's other systems."""
    cells = _lookup(metrics)
    present = set(metrics["system"].unique())
    columns = tuple(c for c in published.columns if c in present or not only_present)
    systems = columns + tuple(sorted(present - set(published.columns)))
    tables: list[PublishedTable] = []
    notes: list[tuple[str, str, str]] = []
    for table in published.tables:
        if table.suite not in set(metrics["suite"]):
            continue
        rows = []
        for row in table.rows:
            printed = dict(zip(published.columns, row["values"]))
            line = []
            for system in systems:
                cell = cells.get((table.suite, row["subset"], row["metric"], system))
                ours = _fmt(cell["value"] if cell else None, table.scale, table.decimals)
                if system not in printed:
                    line.append(PublishedCell(ours, None, "extra"))
                    continue
                paper = f"{printed[system]:.{table.decimals}f}"
                if ours == paper:
                    line.append(PublishedCell(ours, paper, "match"))
                    continue
                erratum = published.erratum(table.suite, row["subset"], row["metric"], system)
                if erratum is not None:
                    notes.append((system, row["label"], erratum.note))
                    line.append(PublishedCell(ours, paper, "erratum", len(notes)))
                else:
                    line.append(PublishedCell(ours, paper, "differs"))
            rows.append((row["label"], tuple(line)))
        tables.append(PublishedTable(table.title, table.suite, systems, tuple(rows)))
    return PublishedComparison(tuple(tables), tuple(notes))


def published_tables(metrics: pl.DataFrame, published: Published) -> list[str]:
    """Each published table recomputed: "recomputed (published)" per cell, marked where they differ."""
    comparison = compare_published(metrics, published)
    out: list[str] = []
    for table in comparison.tables:
        out.append(f"### {table.title}\n")
        out.append("| | " + " | ".join(table.systems) + " |")
        out.append("|---" * (len(table.systems) + 1) + "|")
        for label, cells in table.rows:
            line = [label]
            for cell in cells:
                if cell.status == "extra":
                    line.append(cell.ours)
                elif cell.status == "match":
                    line.append(f"{cell.ours} ✓")
                elif cell.status == "erratum":
                    line.append(f"**{cell.ours}** (paper {cell.paper}) [{cell.note}]")
                else:
                    line.append(f"**{cell.ours}** (paper {cell.paper}) ≠")
            out.append("| " + " | ".join(line) + " |")
        out.append("")
    if comparison.notes:
        out.append("Known differences between the paper's print and its recorded data:\n")
        out.extend(f"{i}. {system}, {label}: {note}" for i, (system, label, note) in enumerate(comparison.notes, 1))
        out.append("")
    return out


def all_metrics_tables(metrics: pl.DataFrame) -> list[str]:
    out = []
    conf = "95%"
    metrics = metrics.filter(~PER_OCCUPATION)
    for suite in metrics["suite"].unique(maintain_order=True).to_list():
        part = metrics.filter(pl.col("suite") == suite)
        out.append(f"### {suite}\n")
        out.append(f"| system | subset | metric | value | {conf} CI | n |")
        out.append("|---|---|---|---|---|---|")
        for r in part.sort("system", "subset", "metric").iter_rows(named=True):
            scale, digits = (100, 2) if r["metric"] in PERCENT_METRICS else (1, 4)
            unit = " %" if scale == 100 else ""
            ci = f"[{_fmt(r['ci_low'], scale, digits)}, {_fmt(r['ci_high'], scale, digits)}]"
            out.append(f"| {r['system']} | {r['subset']} | {r['metric']} | {_fmt(r['value'], scale, digits)}{unit} | {ci} | {r['n']} |")
        out.append("")
    return out


CORRELATIONS = ["r_female_share", "rho_female_share"]
SHIFT_GENDERS = ["masculine", "feminine", "both", "unknown"]


def correlation_table(metrics: pl.DataFrame) -> pl.DataFrame:
    """One row per system × suite × language (``subset``) with the correlations of p_f and female share:
    columns ``value_<metric>``, ``ci_low_<metric>``, ``ci_high_<metric>``, ``n_<metric>``; empty if none."""
    corr = metrics.filter(pl.col("metric").is_in(CORRELATIONS))
    if corr.height == 0:
        return pl.DataFrame()
    return corr.pivot(on="metric", index=["system", "suite", "subset"], values=["value", "ci_low", "ci_high", "n"],
                      aggregate_function="first").sort("suite", "subset", "system")


def occupation_rates(metrics: pl.DataFrame, metric: str = "p_f") -> pl.DataFrame:
    """Per-occupation rows of one metric, with ``language`` and ``occupation`` split out of the subset."""
    per = metrics.filter(pl.col("subset").str.contains("/occupation/") & (pl.col("metric") == metric))
    return per.with_columns(pl.col("subset").str.split("/occupation/").list.get(0).alias("language"),
                            pl.col("subset").str.split("/occupation/").list.get(1).alias("occupation"))


def shift_table(shift: pl.DataFrame) -> pl.DataFrame:
    """gender_shift.parquet wide: one row per suite × system × language × source class, ``share_<gender>``
    and ``count_<gender>`` per translation gender, and ``words`` (the class's words)."""
    wide = shift.pivot(on="tgt_gender", index=["suite", "system", "tgt_lang", "gender_class"], values=["share", "count"],
                       aggregate_function="first")
    for g in SHIFT_GENDERS:
        for col in (f"share_{g}", f"count_{g}"):
            if col not in wide.columns:
                wide = wide.with_columns(pl.lit(None, dtype=pl.Float64 if col.startswith("share") else pl.Int64).alias(col))
    words = pl.sum_horizontal(*(pl.col(f"count_{g}").fill_null(0) for g in SHIFT_GENDERS)).alias("words")
    return wide.with_columns(words).sort("suite", "system", "tgt_lang", "gender_class")


def read_failures(labels: Path) -> pl.DataFrame:
    """Items without a translation in labels.parquet, per system and suite, with the most common error
    (of errors equally common, the first in alphabetical order: the same report every time)."""
    failed = pl.scan_parquet(labels).filter(pl.col("label").is_null())
    common = (failed.group_by("system", "suite", "error").len()
              .sort(["system", "suite", "len", "error"], descending=[False, False, True, False], nulls_last=True)
              .group_by("system", "suite", maintain_order=True).agg(pl.col("error").first()))
    return (failed.group_by("system", "suite").agg(pl.len().alias("items"))
            .join(common, on=["system", "suite"], how="left").sort("system", "suite").collect())


LANGUAGE_SUBSET = pl.col("subset").str.contains(r"^[a-z]{2,3}$")
WINOMT_HEADLINE = ["acc", "delta_g", "delta_s", "unknown"]
UNKNOWN_REASONS = ["no-alignment", "not-in-lexicon", "epicene-no-article", "conflict"]


def winomt_language_table(metrics: pl.DataFrame) -> pl.DataFrame:
    """WinoMT scored per target language (subsets that are language codes, with acc): one row per
    suite × language × system, columns ``<metric>``, ``<metric>_low``, ``<metric>_high`` and n."""
    rows = metrics.filter(LANGUAGE_SUBSET & pl.col("metric").is_in(WINOMT_HEADLINE))
    if rows.filter(pl.col("metric") == "acc").height == 0:
        return pl.DataFrame()
    wide = rows.pivot(on="metric", index=["suite", "subset", "system"], values=["value", "ci_low", "ci_high", "n"],
                      aggregate_function="first")
    return wide.rename({"subset": "language"}).sort("suite", "language", "system")


def read_reasons(labels: Path, items: Path) -> pl.DataFrame:
    """Per system × suite × target language: how many rows a corpus detector labelled, by label and
    reason (empty where the run has no reasons, i.e. only rule-set detectors)."""
    frame = pl.scan_parquet(labels)
    if "reason" not in frame.collect_schema().names():
        return pl.DataFrame()
    langs = pl.scan_parquet(items).select("item_id", "tgt_lang")
    return (frame.filter(pl.col("reason").is_not_null()).join(langs, on="item_id", how="left")
            .group_by("system", "suite", "tgt_lang", "label", "reason").len().rename({"len": "count"})
            .sort("suite", "tgt_lang", "system", "label", "reason").collect())


def winomt_languages_section(metrics: pl.DataFrame, reasons: pl.DataFrame | None) -> list[str]:
    """WinoMT per target language (Acc, ΔG, ΔS, unknown share), and why outputs were labelled unknown."""
    wide = winomt_language_table(without_mittens(metrics))
    if wide.height == 0:
        return []
    lines = ["## WinoMT per target language", "",
             "Acc: entities given their gold gender (unknown counts as wrong); ΔG = F1(male) − F1(female); "
             "ΔS = Acc(pro) − Acc(anti); unknown: outputs whose entity gender could not be read. "
             "Percent, with 95% bootstrap intervals.", "",
             "| suite | language | system | Acc | ΔG | ΔS | unknown | n |", "|---|---|---|---|---|---|---|---|"]
    for r in wide.iter_rows(named=True):
        def cell(m):
            v = r.get(f"value_{m}")
            if v is None:
                return "—"
            return f"{_fmt(v, 100, 1)} [{_fmt(r.get(f'ci_low_{m}'), 100, 1)}, {_fmt(r.get(f'ci_high_{m}'), 100, 1)}]"
        lines.append(f"| {r['suite']} | {r['language']} | {r['system']} | " + " | ".join(cell(m) for m in WINOMT_HEADLINE)
                     + f" | {r.get('n_acc')} |")
    lines.append("")
    if reasons is not None and reasons.height:
        unknown = reasons.filter((pl.col("label") == "unknown") & pl.col("reason").is_in(UNKNOWN_REASONS))
        lines += ["### Why unknown", "",
                  "Rows labelled unknown, by reason: no target word aligned to the entity; no aligned word the "
                  "analyser knows as a noun; a noun with one form for both genders and nothing else marking it; "
                  "evidence that disagrees.", "",
                  "| suite | language | system | " + " | ".join(UNKNOWN_REASONS) + " |",
                  "|---|---|---|" + "---|" * len(UNKNOWN_REASONS)]
        table = {}
        for r in unknown.iter_rows(named=True):
            table.setdefault((r["suite"], r["tgt_lang"], r["system"]), {})[r["reason"]] = r["count"]
        for (suite, lang, system), counts in sorted(table.items()):
            lines.append(f"| {suite} | {lang} | {system} | " + " | ".join(str(counts.get(k, 0)) for k in UNKNOWN_REASONS) + " |")
        lines.append("")
    return lines


def occupations_section(metrics: pl.DataFrame) -> list[str]:
    """Per-occupation p_f against the occupations' female share, and their correlation."""
    wide = correlation_table(metrics)
    if wide.height == 0:
        return []
    lines = ["## Per occupation: does bias follow labour statistics?", "",
             "Correlation across occupations of p_f (share of outputs with a female friend) with the "
             "occupation's female share in labour statistics; 95% bootstrap CIs. NaN: p_f does not vary.", "",
             "| system | suite | language | Pearson r | Spearman rho | occupations |", "|---|---|---|---|---|---|"]
    for r in wide.iter_rows(named=True):
        def cell(m):
            return f"{r[f'value_{m}']:.2f} [{r[f'ci_low_{m}']:.2f}, {r[f'ci_high_{m}']:.2f}]"
        lines.append(f"| {r['system']} | {r['suite']} | {r['subset']} | {cell('r_female_share')} | "
                     f"{cell('rho_female_share')} | {r['n_r_female_share']} |")
    per = occupation_rates(metrics)
    for (suite, language), part in per.group_by("suite", "language", maintain_order=True):
        systems = sorted(part["system"].unique())
        lines += ["", f"p_f by occupation, {suite} → {language} (%):", "",
                  "| occupation | " + " | ".join(systems) + " |", "|---" * (len(systems) + 1) + "|"]
        table = part.pivot(on="system", index="occupation", values="value", aggregate_function="first").sort("occupation")
        for row in table.iter_rows(named=True):
            lines.append(f"| {row['occupation']} | " + " | ".join(_fmt(row.get(sy), 100, 1) for sy in systems) + " |")
    return lines + [""]


def _percent(value: float | None) -> str:
    return "—" if value is None or value != value else f"{100 * value:.1f}%"


def embedding_section(bins: pl.DataFrame, shift: pl.DataFrame, plots: list[str],
                      words: pl.DataFrame | None = None) -> list[str]:
    """The embedding-bias study: plots, the sanity figures, the words without a vector,
    intensity/direction bins, and the gender-shift table (``words``: embedding_bias.parquet)."""
    from biaseval.metrics.embedding import describe_missing, missing_words, sanity

    lines = ["## Embedding bias before and after translation", "",
             "Per word w and the female/male target words f, m of its language: intensity = |cos(w, f) − cos(w, m)|, "
             "direction = cos(w, f) − cos(w, m) (positive leans female). Points above the diagonal lean female.", ""]
    lines += [f"![{Path(p).stem}]({p})" for p in plots] + [""]
    figures = sanity(words) if words is not None else pl.DataFrame()
    if figures.height:
        lines += ["Sanity figures: cos(f, m) of each language's female and male word in its model (the paper's "
                  "cos(she, he) and cos(lei, lui)), and the share of words whose similarity to f (to m) rose in "
                  "translation, of the words with a vector before and after:", "",
                  "| suite | system | languages | cos(f, m) before | cos(f, m) after | words | rose to f | rose to m |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in figures.iter_rows(named=True):
            lines.append(f"| {r['suite']} | {r['system']} | {r['src_lang']} → {r['tgt_lang']} | {r['cos_src_fm']:.3f} | "
                         f"{r['cos_tgt_fm']:.3f} | {r['words']} | {_percent(r['share_rose_f'])} | {_percent(r['share_rose_m'])} |")
        lines.append("")
    if words is not None and words.height:
        notes = [n for n in map(describe_missing, missing_words(words)) if n]
        lines += (["Words without a vector:", ""] + [f"- {n}" for n in notes] if notes
                  else ["Every word and translation has a vector in its embedding model."]) + [""]
    for (suite, side, language, system), part in bins.group_by("suite", "side", "language", "system", maintain_order=True):
        who = "source words" if side == "source" else f"translations by {system}"
        binning = f", {part['binning'][0]} bins" if "binning" in part.columns else ""
        lines += [f"Bins, {suite}, {who} ({language}{binning}):", "",
                  "| feature | bin | range | words | share | share of all | examples |", "|---|---|---|---|---|---|---|"]
        for r in part.iter_rows(named=True):
            lines.append(f"| {r['feature']} | {r['bin']} | [{r['lo']:.3f}, {r['hi']:.3f}] | {r['count']} | "
                         f"{100 * r['share']:.1f}% | {_percent(r.get('share_all'))} | {r['examples']} |")
        lines.append("")
    if bins.height:
        lines += ["Direction is binned by its size on each side: bin 1 is the weakest lean, female (direction+) and "
                  "male (direction−) alike; a direction of exactly 0 counts on neither side (direction0). A bin's "
                  "share is within its feature (its sign), its share of all is of every word with a direction.", ""]
    if shift.height:
        lines += ["Gender shift: the source word's class against the grammatical gender of its translation "
                  "(share of the class's words, %):", ""]
        genders = SHIFT_GENDERS
        lines += ["| suite | system | language | source class | words | " + " | ".join(genders) + " |",
                  "|---" * (5 + len(genders)) + "|"]
        for r in shift_table(shift).iter_rows(named=True):
            cells = " | ".join(_fmt(r.get(f"share_{g}"), 100, 1) for g in genders)
            lines.append(f"| {r['suite']} | {r['system']} | {r['tgt_lang']} | {r['gender_class']} | {r['words']} | {cells} |")
        lines.append("")
    return lines


def failures_section(failures: pl.DataFrame) -> list[str]:
    """Items without a translation, per system and suite, with the most common error."""
    if failures.height == 0:
        return []
    lines = ["## Items without a translation", "",
             "They are not scored (each metric's `n` counts only translated items); rerunning the sweep "
             "retries them.", "", "| system | suite | items | most common error |", "|---|---|---|---|"]
    for r in failures.iter_rows(named=True):
        error = (r["error"] or "").replace("|", "\\|").replace("\n", " ")[:200]
        lines.append(f"| {r['system']} | {r['suite']} | {r['items']} | {error} |")
    return lines + [""]


def control_section(metrics: pl.DataFrame, systems: dict[str, dict]) -> list[str]:
    """Gender control: per system asked for genders, each condition's control_acc, control_unknown
    and control_unasked (percent, with intervals) per suite and subset."""
    tables = control_tables(metrics, systems)
    if not tables:
        return []
    lines = ["## Gender control", "",
             "Asked: share of outputs with the requested gender; unread: share the detector could not read "
             "(unknown or ambiguous); unasked: the same share for the system without the request, on the same "
             "items. Percent, with 95% bootstrap intervals.", ""]
    for table in tables:
        lines += [f"### {table.system}", "", "| condition | requests | suite | subset | asked | unread | unasked | n |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in table.rows:
            cells = [f"{_fmt(c.value, 100, 1)} [{_fmt(c.low, 100, 1)}, {_fmt(c.high, 100, 1)}]" if c else "—"
                     for c in (r.shares.get(m) for m in ("control_acc", "control_unknown", "control_unasked"))]
            lines.append(f"| {r.condition or r.system} | {r.requests} | {r.suite} | {r.subset} | "
                         + " | ".join(cells) + f" | {r.n if r.n is not None else '—'} |")
        lines.append("")
    return lines


def cost_section(cost: dict | None) -> list[str]:
    """The run's cost: what the rows say was billed beside the plan's estimate (``run.json``'s ``cost``)."""
    rows = cost_lines(cost)
    if not rows:
        return []
    lines = ["## Cost", "", "In the currency of the configured prices; billed: the units the rows record, "
             "at those prices; estimated: the plan's, before the run.", "",
             "| system | billed units | billed cost | estimated cost |", "|---|---|---|---|"]
    lines += [f"| {name} | {units} | {actual} | {planned} |" for name, units, actual, planned in rows]
    return lines + [""]


def render(metrics: pl.DataFrame, run_info: dict, published: Published | None,
           failures: pl.DataFrame | None = None, embedding: dict | None = None,
           reasons: pl.DataFrame | None = None) -> str:
    with collected_once():
        return _render(metrics, run_info, published, failures, embedding, reasons)


def _render(metrics: pl.DataFrame, run_info: dict, published: Published | None, failures: pl.DataFrame | None,
            embedding: dict | None, reasons: pl.DataFrame | None) -> str:
    config = run_info["config"]
    lines = [
        f"# biaseval report: {config['name']}",
        "",
        config.get("description", "") or "",
        "",
        f"- run: `{run_info['run_id']}` (config hash `{run_info['config_hash']}`, biaseval {run_info['biaseval_version']})",
        f"- created {run_info['created_at']}, updated {run_info['updated_at']}",
    ]
    for suite, d in run_info["suites"].items():
        origin = f"dataset {d['dataset']} @ `{d['commit'][:12]}`" if d.get("commit") else "template"
        lines.append(f"- {suite} (version {d['version']}, {d['size']:,} items): {origin}, fingerprint `{d['fingerprint'][:12]}`")
    for name, s in run_info["systems"].items():
        lines.append(f"- system **{name}** ({s['backend']}): {s['version'] or 'no version given'}; suites: {', '.join(s['suites'])}")
    signatures = metrics.select("signature").unique().sort("signature")["signature"].to_list() if "signature" in metrics.columns else []
    if signatures:
        lines += ["", "<details><summary>Signatures</summary>", ""]
        lines += [f"- `{s}`" for s in signatures]
        lines += ["", "</details>"]
    lines.append("")
    lines += cost_section(run_info.get("cost"))
    lines += sample_section(run_info)
    if published is not None:
        lines += [f"## Published tables recomputed ({published.cite})", "",
                  "Each cell: recomputed value at the paper's precision; ✓ where it equals the printed value, "
                  "**bold** with the printed value where it does not.", ""]
        lines += published_tables(metrics, published)
    if failures is not None:
        lines += failures_section(failures)
    lines += control_section(metrics, config.get("systems", {}))
    lines += winomt_languages_section(metrics, reasons)
    lines += adjective_section(metrics)
    lines += mittens_section(metrics)
    lines += occupations_section(metrics)
    if embedding:
        lines += embedding_section(embedding["bins"], embedding["shift"], embedding["plots"], embedding.get("words"))
    lines += ["## All metrics", "", "Fractions shown in percent where marked; confidence intervals are seeded percentile bootstraps over items.", ""]
    if without_mittens(metrics).height < metrics.height:
        lines += ["MiTTenS's shares have Wilson score intervals instead; its cells are in its own section.", ""]
    lines += all_metrics_tables(metrics)
    return "\n".join(lines) + "\n"
