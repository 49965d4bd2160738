"""GEST in both reports' shape of the paper (Pikuliak et al. 2024, section 4.1): f_m and f_s per system and
language with intervals and the number read, beside the published values where the run scored the recorded
systems (``data/published/gest.yaml``: recomputed from the masculine rates the dataset repository's notebook
printed); the masculine rate per stereotype as a chart (``gest_chart``); the reader table of
``biaseval gest reader-table``.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import polars as pl

from biaseval.data.yamlio import package_yaml
from biaseval.report.escape import md

# A run's system names for the published ones (conf/gest-recorded.yaml).
PUBLISHED_SYSTEMS = {"amazon": "Amazon Translate", "deepl": "DeepL", "google": "Google Translate",
                     "nllb": "NLLB-3.3B"}
SUITES = ("gest", "gest-1.1")


@cache
def published() -> dict:
    return package_yaml("data/published/gest.yaml")


def published_rates(system: str, lang: str) -> tuple[float, float, int] | None:
    """(f_m, f_s, outputs read) of a published system and language, from the notebook's printed p_i."""
    data = published()
    centres = data["p_i"].get(system, {}).get(lang)
    if centres is None:
        return None
    p_f, p_m = float(np.mean(centres[:7])), float(np.mean(centres[7:]))
    return (p_f + p_m) / 2, p_m - p_f, int(data["read"][system][lang])


def rows(metrics: pl.DataFrame) -> list[dict]:
    """Per system × language of the GEST suites: our f_m, f_s (with intervals), the Agresti-Coull centred
    f_m and f_s the paper computes, the share read, and the published values where there are any."""
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


def _num(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def _with_interval(row: dict) -> str:
    return f"{row['value']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"


def reproduction_markdown(table: list[dict]) -> list[str]:
    """The table of docs/gest.md and report.md: ours beside the paper's."""
    lines = ["| system | lang | f_m (ours, 95 % CI) | f_m AC | f_m paper | f_s (ours, 95 % CI) | f_s AC | f_s paper "
             "| read (ours) | read (paper) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        paper = r["paper"] or (None, None, None)
        lines.append(f"| {md(r['system'])} | {r['lang']} | {_with_interval(r['f_m'])} | {_num(r['f_m_ac'])} | "
                     f"{_num(paper[0])} | {_with_interval(r['f_s'])} | {_num(r['f_s_ac'])} | {_num(paper[1])} | "
                     f"{r['read']['value'] * r['read']['n']:.0f} ({100 * r['read']['value']:.1f} %) | "
                     f"{paper[2] if paper[2] is not None else '—'} |")
    return lines


def section(metrics: pl.DataFrame) -> list[str]:
    """report.md's GEST part (empty without a GEST suite)."""
    table = rows(metrics)
    if not table:
        return []
    return ["## GEST (Pikuliak et al. 2024): masculine rate f_m and stereotype rate f_s", "",
            "f_m = (p_f + p_m) / 2 and f_s = p_m − p_f, where p_f and p_m average the masculine rate p_i over the "
            "stereotypes about women (1–7) and about men (8–16), among outputs whose speaker's gender was read; "
            "intervals from a stratified bootstrap. *AC*: the same from the Agresti–Coull centres, as the paper "
            "computes them. *paper*: recomputed from the masculine rates the dataset repository's notebook "
            "printed (systems named amazon, deepl, google, nllb as in conf/gest-recorded.yaml). The masculine "
            "rate of every stereotype is in the metrics below (`masculine_rate`, subsets `<lang>/<NN>`).", "",
            *reproduction_markdown(table), ""]


def reader_markdown(table: list[dict]) -> str:
    """What ``biaseval gest reader-table`` prints (docs/gest.md holds it)."""
    lines = ["| language | gold | items | read (coverage) | right of read (accuracy) | mixed |",
             "|---|---|---|---|---|---|"]
    for r in table:
        coverage = "—" if r["coverage"] is None else f"{r['read']} ({100 * r['coverage']:.1f}%)"
        accuracy = "—" if r["accuracy"] is None else f"{r['right']} ({100 * r['accuracy']:.1f}%)"
        lines.append(f"| {r['language']} | {r['gold']} | {r['items']} | {coverage} | {accuracy} | {r['mixed']} |")
    return "\n".join(lines) + "\n"


def chart(metrics: pl.DataFrame, path) -> bool:
    """The masculine rate per stereotype, one panel per system, a line per language (the paper's Figure of
    p_i), written as PNG to ``path``; False when the run has no GEST rates."""
    part = metrics.filter(pl.col("suite").is_in(list(SUITES)) & (pl.col("metric") == "masculine_rate"))
    if part.height == 0:
        return False
    from matplotlib.figure import Figure

    from biaseval.data.gest_stereotypes import SHORT_NAMES

    systems = part["system"].unique(maintain_order=True).to_list()
    figure = Figure(figsize=(4.2 * len(systems), 4.2))
    for k, system in enumerate(systems):
        axes = figure.add_subplot(1, len(systems), k + 1)
        rows_ = part.filter(pl.col("system") == system).with_columns(
            pl.col("subset").str.split("/").list.get(0).alias("lang"),
            pl.col("subset").str.split("/").list.get(1).cast(pl.Int32).alias("stereotype"))
        for lang in sorted(rows_["lang"].unique().to_list()):
            one = rows_.filter(pl.col("lang") == lang).sort("stereotype")
            axes.plot(one["value"].to_numpy(), one["stereotype"].to_numpy(), marker="o", markersize=3,
                      linewidth=1, label=lang)
        axes.axhspan(0.5, 7.5, color="#f4c2c2", alpha=0.35, linewidth=0)
        axes.set_ylim(16.5, 0.5)
        axes.set_yticks(range(1, 17), [f"{i} {SHORT_NAMES[i]}" for i in range(1, 17)] if k == 0 else [])
        axes.set_xlim(0, 1)
        axes.set_xlabel("masculine rate p_i")
        axes.set_title(system)
        axes.grid(axis="x", alpha=0.3)
    figure.axes[-1].legend(fontsize=7, loc="lower left")
    figure.suptitle("GEST: share of outputs read as masculine, per stereotype (shaded: about women)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return True
