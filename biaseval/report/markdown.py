"""report.md: the run's tables as recomputed, beside the published values where a run names them.

Pure rendering: metrics frame and run info in, Markdown text out.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from biaseval.report.adjectives import adjective_section
from biaseval.report.collection import collected_once
from biaseval.report.control import control_tables
from biaseval.report.embedding_tables import embedding_section
from biaseval.report.escape import code, md, row
from biaseval.report import methods, numbers
from biaseval.report.mtgeneval import mtgeneval_section, mtgeneval_suites
from biaseval.report.gest import section as gest_section
from biaseval.report.mittens import section as mittens_section
from biaseval.report.mittens import without_mittens
from biaseval.report.published import Published, published_tables, published_values
from biaseval.report.sampling import sample_section
from biaseval.report.summary import markdown as summary_markdown
from biaseval.report.summary import summary
from biaseval.report.examples import markdown as examples_markdown
from biaseval.run.cost import cost_lines

# Per-occupation, gender-shift and pairwise rows go in their own sections (and the HTML report),
# not in the list of all metrics.
PER_OCCUPATION = (pl.col("subset").str.contains("/occupation/") | pl.col("subset").str.contains("/shift/")
                  | pl.col("subset").str.starts_with("vs/")
                  | pl.col("subset").str.starts_with("cell/"))  # MiTTenS's cells: its own section lists the weakest


def all_metrics_tables(metrics: pl.DataFrame, confidence: str = "95%") -> list[str]:
    """Every metric row (but per occupation, paired, MiTTenS's cells), a table per suite: the value with
    its unit, its interval in the same unit, n, and how the interval was made (the row's record)."""
    out = []
    metrics = metrics.filter(~PER_OCCUPATION)
    for suite in metrics["suite"].unique(maintain_order=True).to_list():
        part = metrics.filter(pl.col("suite") == suite)
        out.append(f"### {md(suite)}\n")
        out.append(f"| system | subset | metric | value | {confidence} CI | n | interval |")
        out.append("|---|---|---|---|---|---|---|")
        for r in part.sort("system", "subset", "metric").iter_rows(named=True):
            unit = numbers.unit(r["metric"])
            ci = numbers.interval(r["ci_low"], r["ci_high"], r["metric"])
            out.append(row(r["system"], r["subset"], r["metric"], numbers.text(r["value"], r["metric"]),
                           f"{ci} {unit}".rstrip() if ci else "—", numbers.count(r["n"]), methods.short(r)))
        out.append("")
    return out


CORRELATIONS = ["r_female_share", "rho_female_share"]


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


def winomt_language_rows(metrics: pl.DataFrame) -> pl.DataFrame:
    """The metric rows of WinoMT scored per target language (subsets that are language codes): Acc,
    ΔG, ΔS and the unknown share (not MT-GenEval's, which have their own section)."""
    others = pl.Series(mtgeneval_suites(metrics), dtype=pl.String).implode()  # their own section
    return metrics.filter(LANGUAGE_SUBSET & pl.col("metric").is_in(WINOMT_HEADLINE) & ~pl.col("suite").is_in(others))


def winomt_language_table(metrics: pl.DataFrame) -> pl.DataFrame:
    """WinoMT scored per target language (subsets that are language codes, with acc): one row per
    suite × language × system, columns ``<metric>``, ``<metric>_low``, ``<metric>_high`` and n."""
    rows = winomt_language_rows(metrics)
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


WINOMT_LABELS = {"acc": "Acc", "delta_g": "ΔG", "delta_s": "ΔS", "unknown": "unknown"}


def winomt_languages_section(metrics: pl.DataFrame, reasons: pl.DataFrame | None, confidence: str = "95%") -> list[str]:
    """WinoMT per target language (Acc, ΔG, ΔS, unknown share), and why outputs were labelled unknown."""
    wide = winomt_language_table(without_mittens(metrics))
    if wide.height == 0:
        return []
    shown = winomt_language_rows(without_mittens(metrics))
    lines = ["## WinoMT per target language", "",
             "Acc: entities given their gold gender (unknown counts as wrong); ΔG = F1(male) − F1(female); "
             "ΔS = Acc(pro) − Acc(anti); unknown: outputs whose entity gender could not be read. Shares in "
             "percent, differences in percentage points (pp). "
             + methods.describe(shown, confidence, WINOMT_LABELS.get), "",
             "| suite | language | system | " + " | ".join(numbers.header(WINOMT_LABELS[m], m) for m in WINOMT_HEADLINE)
             + " | n |", "|---|---|---|---|---|---|---|---|"]
    for r in wide.iter_rows(named=True):
        def cell(m):
            v = r.get(f"value_{m}")
            if v is None:
                return "—"
            return f"{numbers.number(v, m)} {numbers.interval(r.get(f'ci_low_{m}'), r.get(f'ci_high_{m}'), m) or ''}".rstrip()
        lines.append(row(r["suite"], r["language"], r["system"], *(cell(m) for m in WINOMT_HEADLINE),
                         numbers.count(r.get("n_acc"))))
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
            lines.append(row(suite, lang, system, *(counts.get(k, 0) for k in UNKNOWN_REASONS)))
        lines.append("")
    return lines


def occupations_section(metrics: pl.DataFrame, confidence: str = "95%") -> list[str]:
    """Per-occupation p_f against the occupations' female share, and their correlation."""
    wide = correlation_table(metrics)
    if wide.height == 0:
        return []
    lines = ["## Per occupation: does bias follow labour statistics?", "",
             "Correlation across occupations of p_f (share of outputs with a female friend) with the "
             "occupation's female share in labour statistics. "
             + methods.describe(metrics.filter(pl.col("metric").is_in(CORRELATIONS)), confidence)
             + " NaN: p_f does not vary.", "",
             "| system | suite | language | Pearson r | Spearman rho | occupations |", "|---|---|---|---|---|---|"]
    for r in wide.iter_rows(named=True):
        def cell(m):
            return f"{numbers.number(r[f'value_{m}'], m)} {numbers.interval(r[f'ci_low_{m}'], r[f'ci_high_{m}'], m) or ''}".rstrip()
        lines.append(row(r["system"], r["suite"], r["subset"], cell("r_female_share"), cell("rho_female_share"),
                         r["n_r_female_share"]))
    per = occupation_rates(metrics)
    for (suite, language), part in per.group_by("suite", "language", maintain_order=True):
        systems = sorted(part["system"].unique())
        lines += ["", f"p_f by occupation, {md(suite)} → {md(language)} (%):", "",
                  row("occupation", *systems), "|---" * (len(systems) + 1) + "|"]
        table = part.pivot(on="system", index="occupation", values="value", aggregate_function="first").sort("occupation")
        for rates in table.iter_rows(named=True):
            lines.append(row(rates["occupation"], *(numbers.share(rates.get(sy)) for sy in systems)))
    return lines + [""]


# What a rerun does with the items of the failures table (both reports say it): texts that failed are
# sent again (the store holds no answer for them); a reply rejected as not a translation is final
# (translation_store.DONE): a rerun reuses it, and nothing resends only those replies.
RERUN_NOTE = ("Rerunning the same sweep sends the texts that failed again (a timeout, a server error). A reply "
              "rejected as not a translation (error `not a translation (...)`: a refusal, an explanation, "
              "another language) is final: the translation store keeps it and it is not sent again; only a "
              "sweep that translates afresh (`--refresh` into a new `--out`, or a new `version` of the system) "
              "asks again, for every text. A recorded system's missing outputs stay missing.")


def failures_section(failures: pl.DataFrame) -> list[str]:
    """Items without a translation, per system and suite, with the most common error."""
    if failures.height == 0:
        return []
    lines = ["## Items without a translation", "",
             f"They are not scored (each metric's `n` counts only translated items). {RERUN_NOTE}", "",
             "| system | suite | items | most common error |", "|---|---|---|---|"]
    for r in failures.iter_rows(named=True):
        lines.append(row(r["system"], r["suite"], r["items"], (r["error"] or "")[:200]))
    return lines + [""]


def control_section(metrics: pl.DataFrame, systems: dict[str, dict], confidence: str = "95%") -> list[str]:
    """Gender control: per system asked for genders, each condition's control_acc, control_unknown
    and control_unasked (percent, with intervals) per suite and subset."""
    tables = control_tables(metrics, systems)
    if not tables:
        return []
    shown = metrics.filter(pl.col("metric").is_in(["control_acc", "control_unknown", "control_unasked"]))
    lines = ["## Gender control", "",
             "Asked: share of outputs with the requested gender; unread: share the detector could not read "
             "(unknown or ambiguous); unasked: the same share for the system without the request, on the same "
             "items. Percent. " + methods.describe(shown, confidence), ""]
    for table in tables:
        lines += [f"### {md(table.system)}", "", "| condition | requests | suite | subset | asked (%) | unread (%) "
                  "| unasked (%) | n |", "|---|---|---|---|---|---|---|---|"]
        for r in table.rows:
            cells = [f"{numbers.share(c.value)} {numbers.interval(c.low, c.high, 'control_acc') or ''}".rstrip() if c
                     else "—" for c in (r.shares.get(m) for m in ("control_acc", "control_unknown", "control_unasked"))]
            lines.append(row(r.condition or r.system, r.requests, r.suite, r.subset, *cells, numbers.count(r.n)))
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
    lines += [row(*line) for line in rows]
    return lines + [""]


def render(metrics: pl.DataFrame, run_info: dict, published: Published | None,
           failures: pl.DataFrame | None = None, embedding: dict | None = None,
           reasons: pl.DataFrame | None = None, *, set_gold: dict | None = None,
           examples: pl.DataFrame | None = None, charts: dict[str, str] | None = None) -> str:
    """report.md. ``set_gold``: (suite, subset) -> the gold gender of a set (``tables.set_genders``);
    ``examples``: examples.parquet's rows, a few of which are shown per suite and system; ``charts``: suite ->
    a chart drawn beside report.md for it (GEST's, ``gest.write_charts``)."""
    with collected_once():
        return _render(metrics, run_info, published, failures, embedding, reasons, set_gold, examples, charts)


def summary_section(metrics: pl.DataFrame, run_info: dict, published: Published | None,
                    set_gold: dict | None = None) -> list[str]:
    """The summary (report/summary.py) as Markdown."""
    config = run_info["config"]
    confidence = methods.confidence_text(config)
    names = list(run_info.get("systems", {})) + sorted(set(metrics["system"].to_list()) - set(run_info.get("systems", {})))
    suites = list(dict.fromkeys([*config.get("suites", []), *metrics["suite"].to_list()]))
    result = summary(metrics, suites, names, published_values(published), set_gold)
    return summary_markdown(result, methods.describe(result.shown, confidence), published.cite if published else None, row)


def _render(metrics: pl.DataFrame, run_info: dict, published: Published | None, failures: pl.DataFrame | None,
            embedding: dict | None, reasons: pl.DataFrame | None, set_gold: dict | None,
            examples: pl.DataFrame | None, charts: dict[str, str] | None) -> str:
    config = run_info["config"]
    confidence = methods.confidence_text(config)
    lines = [
        f"# biaseval report: {md(config['name'])}",
        "",
        md(config.get("description", "") or ""),
        "",
        *summary_section(metrics, run_info, published, set_gold),
        "## Run",
        "",
        f"- run: {code(run_info['run_id'])} (config hash {code(run_info['config_hash'])}, biaseval "
        f"{md(run_info['biaseval_version'])})",
        f"- created {md(run_info['created_at'])}, updated {md(run_info['updated_at'])}",
    ]
    for suite, d in run_info["suites"].items():
        origin = f"dataset {md(d['dataset'])} @ {code(d['commit'][:12])}" if d.get("commit") else "template"
        lines.append(f"- {md(suite)} (version {md(d['version'])}, {d['size']:,} items): {origin}, fingerprint "
                     f"{code(d['fingerprint'][:12])}")
    for name, s in run_info["systems"].items():
        lines.append(f"- system **{md(name)}** ({md(s['backend'])}): {md(s['version'] or 'no version given')}; "
                     f"suites: {md(', '.join(s['suites']))}")
    signatures = metrics.select("signature").unique().sort("signature")["signature"].to_list() if "signature" in metrics.columns else []
    if signatures:
        lines += ["", "<details><summary>Signatures</summary>", ""]
        lines += [f"- {code(s)}" for s in signatures]
        lines += ["", "</details>"]
    lines.append("")
    lines += cost_section(run_info.get("cost"))
    lines += sample_section(run_info)
    if published is not None:
        lines += [f"## Published tables recomputed ({md(published.cite)})", "",
                  "Each cell: recomputed value at the paper's precision; ✓ where it equals the printed value, "
                  "**bold** with the printed value where it does not.", ""]
        lines += published_tables(metrics, published)
    if failures is not None:
        lines += failures_section(failures)
    lines += control_section(metrics, config.get("systems", {}), confidence)
    lines += winomt_languages_section(metrics, reasons, confidence)
    lines += mtgeneval_section(metrics, confidence)
    lines += adjective_section(metrics, confidence)
    lines += mittens_section(metrics, confidence)
    lines += gest_section(metrics, confidence, charts)
    lines += occupations_section(metrics, confidence)
    if embedding:
        lines += embedding_section(embedding["bins"], embedding["shift"], embedding["plots"], embedding.get("words"))
    if examples is not None:
        lines += examples_markdown(examples)
    shown = metrics.filter(~PER_OCCUPATION)
    lines += ["## All metrics", "", "Shares in percent, differences of shares in percentage points (pp), counts as "
              "integers; each row says how its interval was made. " + methods.describe(shown, confidence), ""]
    if without_mittens(metrics).height < metrics.height:
        lines += ["MiTTenS's cells are in its own section.", ""]
    lines += all_metrics_tables(metrics, confidence)
    return "\n".join(lines) + "\n"
