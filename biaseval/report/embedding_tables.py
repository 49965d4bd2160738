"""The embedding-bias study in report.md: plots, sanity figures, bins and the gender-shift table."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from biaseval.report.escape import md, row
from biaseval.report.numbers import count, share, share_text

SHIFT_GENDERS = ["masculine", "feminine", "both", "unknown"]


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


def embedding_section(bins: pl.DataFrame, shift: pl.DataFrame, plots: list[str],
                      words: pl.DataFrame | None = None) -> list[str]:
    """The embedding-bias study: plots, the sanity figures, the words without a vector,
    intensity/direction bins, and the gender-shift table (``words``: embedding_bias.parquet)."""
    from biaseval.metrics.embedding import describe_missing, missing_words, sanity

    lines = ["## Embedding bias before and after translation", "",
             "Per word w and the female/male target words f, m of its language: intensity = |cos(w, f) − cos(w, m)|, "
             "direction = cos(w, f) − cos(w, m) (positive leans female). Points above the diagonal lean female.", ""]
    lines += [f"![{md(Path(p).stem)}]({md(p)})" for p in plots] + [""]
    figures = sanity(words) if words is not None else pl.DataFrame()
    if figures.height:
        lines += ["Sanity figures: cos(f, m) of each language's female and male word in its model (the paper's "
                  "cos(she, he) and cos(lei, lui)), and the share of words whose similarity to f (to m) rose in "
                  "translation, of the words with a vector before and after:", "",
                  "| suite | system | languages | cos(f, m) before | cos(f, m) after | words | rose to f | rose to m |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in figures.iter_rows(named=True):
            lines.append(row(r["suite"], r["system"], f"{r['src_lang']} → {r['tgt_lang']}", f"{r['cos_src_fm']:.3f}",
                             f"{r['cos_tgt_fm']:.3f}", count(r["words"]), share_text(r["share_rose_f"]),
                             share_text(r["share_rose_m"])))
        lines.append("")
    if words is not None and words.height:
        notes = [n for n in map(describe_missing, missing_words(words)) if n]
        lines += (["Words without a vector:", ""] + [f"- {md(n)}" for n in notes] if notes
                  else ["Every word and translation has a vector in its embedding model."]) + [""]
    for (suite, side, language, system), part in bins.group_by("suite", "side", "language", "system", maintain_order=True):
        who = "source words" if side == "source" else f"translations by {system}"
        binning = f", {part['binning'][0]} bins" if "binning" in part.columns else ""
        lines += [f"Bins, {md(suite)}, {md(who)} ({md(language)}{md(binning)}):", "",
                  "| feature | bin | range | words | share | share of all | examples |", "|---|---|---|---|---|---|---|"]
        for r in part.iter_rows(named=True):
            lines.append(row(r["feature"], r["bin"], f"[{r['lo']:.3f}, {r['hi']:.3f}]", count(r["count"]),
                             share_text(r["share"]), share_text(r.get("share_all")), r["examples"]))
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
            lines.append(row(r["suite"], r["system"], r["tgt_lang"], r["gender_class"], count(r["words"]),
                             *(share(r.get(f"share_{g}")) for g in genders)))
        lines.append("")
    return lines
