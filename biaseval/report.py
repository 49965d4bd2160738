"""report.md: the run's tables as recomputed, beside the published values where a run names them.

Pure rendering: metrics frame and run info in, Markdown text out.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from .published import Published

PERCENT_METRICS = {"p_m", "p_f", "p_n", "acc", "delta_g", "delta_s", "neutral", "f1_male", "f1_female", "macro_f1"}
# Per-occupation and gender-shift rows go in their own sections, not in the list of all metrics.
PER_OCCUPATION = pl.col("subset").str.contains("/occupation/") | pl.col("subset").str.contains("/shift/")


def _fmt(value: float | None, scale: float, decimals: int) -> str:
    if value is None:
        return "—"
    return f"{value * scale:.{decimals}f}"


def _lookup(metrics: pl.DataFrame) -> dict[tuple[str, str, str, str], dict]:
    return {(r["suite"], r["subset"], r["metric"], r["system"]): r for r in metrics.iter_rows(named=True)}


def published_tables(metrics: pl.DataFrame, published: Published) -> list[str]:
    """Each published table recomputed: "recomputed (published)" per cell, marked where they differ."""
    cells = _lookup(metrics)
    systems = list(published.columns) + sorted(set(metrics["system"].unique()) - set(published.columns))
    out: list[str] = []
    notes: list[str] = []
    for table in published.tables:
        if table.suite not in set(metrics["suite"]):
            continue
        out.append(f"### {table.title}\n")
        out.append("| | " + " | ".join(systems) + " |")
        out.append("|---" * (len(systems) + 1) + "|")
        for row in table.rows:
            printed = dict(zip(published.columns, row["values"]))
            line = [row["label"]]
            for system in systems:
                cell = cells.get((table.suite, row["subset"], row["metric"], system))
                ours = _fmt(cell["value"] if cell else None, table.scale, table.decimals)
                if system not in printed:
                    line.append(ours)
                    continue
                paper = f"{printed[system]:.{table.decimals}f}"
                if ours == paper:
                    line.append(f"{ours} ✓")
                    continue
                erratum = published.erratum(table.suite, row["subset"], row["metric"], system)
                if erratum is not None:
                    notes.append(f"{len(notes) + 1}. {system}, {row['label']}: {erratum.note}")
                    line.append(f"**{ours}** (paper {paper}) [{len(notes)}]")
                else:
                    line.append(f"**{ours}** (paper {paper}) ≠")
            out.append("| " + " | ".join(line) + " |")
        out.append("")
    if notes:
        out.append("Known differences between the paper's print and its recorded data:\n")
        out.extend(notes)
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


def occupations_section(metrics: pl.DataFrame) -> list[str]:
    """Per-occupation p_f against the occupations' female share, and their correlation."""
    corr = metrics.filter(pl.col("metric").is_in(["r_female_share", "rho_female_share"]))
    if corr.height == 0:
        return []
    lines = ["## Per occupation: does bias follow labour statistics?", "",
             "Correlation across occupations of p_f (share of outputs with a female friend) with the "
             "occupation's female share in labour statistics; 95% bootstrap CIs. NaN: p_f does not vary.", "",
             "| system | suite | language | Pearson r | Spearman rho | occupations |", "|---|---|---|---|---|---|"]
    wide = corr.pivot(on="metric", index=["system", "suite", "subset"], values=["value", "ci_low", "ci_high", "n"],
                      aggregate_function="first")
    for r in wide.sort("suite", "subset", "system").iter_rows(named=True):
        def cell(m):
            return f"{r[f'value_{m}']:.2f} [{r[f'ci_low_{m}']:.2f}, {r[f'ci_high_{m}']:.2f}]"
        lines.append(f"| {r['system']} | {r['suite']} | {r['subset']} | {cell('r_female_share')} | "
                     f"{cell('rho_female_share')} | {r['n_r_female_share']} |")
    per = metrics.filter(pl.col("subset").str.contains("/occupation/") & (pl.col("metric") == "p_f"))
    per = per.with_columns(pl.col("subset").str.split("/occupation/").list.get(0).alias("language"),
                           pl.col("subset").str.split("/occupation/").list.get(1).alias("occupation"))
    for (suite, language), part in per.group_by("suite", "language", maintain_order=True):
        systems = sorted(part["system"].unique())
        lines += ["", f"p_f by occupation, {suite} → {language} (%):", "",
                  "| occupation | " + " | ".join(systems) + " |", "|---" * (len(systems) + 1) + "|"]
        table = part.pivot(on="system", index="occupation", values="value", aggregate_function="first").sort("occupation")
        for row in table.iter_rows(named=True):
            lines.append(f"| {row['occupation']} | " + " | ".join(_fmt(row.get(sy), 100, 1) for sy in systems) + " |")
    return lines + [""]


def embedding_section(bins: pl.DataFrame, shift: pl.DataFrame, plots: list[str]) -> list[str]:
    """The embedding-bias study: plots, intensity/direction bins, and the gender-shift table."""
    lines = ["## Embedding bias before and after translation", "",
             "Per word w and the female/male target words f, m of its language: intensity = |cos(w, f) − cos(w, m)|, "
             "direction = cos(w, f) − cos(w, m) (positive leans female). Points above the diagonal lean female.", ""]
    lines += [f"![{Path(p).stem}]({p})" for p in plots] + [""]
    for (suite, side, language, system), part in bins.group_by("suite", "side", "language", "system", maintain_order=True):
        who = "source words" if side == "source" else f"translations by {system}"
        lines += [f"Bins, {suite}, {who} ({language}):", "",
                  "| feature | bin | range | words | share | examples |", "|---|---|---|---|---|---|"]
        for r in part.iter_rows(named=True):
            lines.append(f"| {r['feature']} | {r['bin']} | [{r['lo']:.3f}, {r['hi']:.3f}] | {r['count']} | "
                         f"{100 * r['share']:.1f}% | {r['examples']} |")
        lines.append("")
    if shift.height:
        lines += ["Gender shift: the source word's class against the grammatical gender of its translation "
                  "(share of the class's words, %):", ""]
        genders = ["masculine", "feminine", "both", "unknown"]
        lines += ["| suite | system | language | source class | words | " + " | ".join(genders) + " |",
                  "|---" * (5 + len(genders)) + "|"]
        wide = shift.pivot(on="tgt_gender", index=["suite", "system", "tgt_lang", "gender_class"], values=["share", "count"],
                           aggregate_function="first")
        for r in wide.sort("suite", "system", "tgt_lang", "gender_class").iter_rows(named=True):
            total = sum(r.get(f"count_{g}") or 0 for g in genders)
            cells = " | ".join(_fmt(r.get(f"share_{g}"), 100, 1) for g in genders)
            lines.append(f"| {r['suite']} | {r['system']} | {r['tgt_lang']} | {r['gender_class']} | {total} | {cells} |")
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


def render(metrics: pl.DataFrame, run_info: dict, published: Published | None,
           failures: pl.DataFrame | None = None, embedding: dict | None = None) -> str:
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
    if published is not None:
        lines += [f"## Published tables recomputed ({published.cite})", "",
                  "Each cell: recomputed value at the paper's precision; ✓ where it equals the printed value, "
                  "**bold** with the printed value where it does not.", ""]
        lines += published_tables(metrics, published)
    if failures is not None:
        lines += failures_section(failures)
    lines += occupations_section(metrics)
    if embedding:
        lines += embedding_section(embedding["bins"], embedding["shift"], embedding["plots"])
    lines += ["## All metrics", "", "Fractions shown in percent where marked; confidence intervals are seeded percentile bootstraps over items.", ""]
    lines += all_metrics_tables(metrics)
    return "\n".join(lines) + "\n"
