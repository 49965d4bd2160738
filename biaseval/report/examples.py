"""The translations behind the numbers, as the reports and ``biaseval examples`` show them: rows of
examples.parquet (``metrics/examples.py`` wrote it: per system × suite × target language, outputs that
went wrong, and samples of those that went right and of those not scored) with the words that decided
each label marked in the translation.

Pure functions of the examples frame: ``choose`` filters it (the command line's options), ``segments``
splits a translation around its deciding words, ``html_sections`` gives report.html's rows per suite
(at most HTML_CAPS per system × suite, spread over the languages), ``markdown`` report.md's few, and
``text_lines``, ``jsonl``, ``csv_text`` what the command prints.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import polars as pl

from biaseval.report.escape import code, md

OUTCOMES = ("wrong", "right", "unscored")
HTML_CAPS = {"wrong": 20, "right": 5, "unscored": 5}  # per system × suite in report.html
MARKDOWN_PER_SYSTEM = 3  # wrong outputs per system × suite in report.md
SHOWN = ["system", "suite", "item_id", "language", "outcome", "gold", "label", "reason", "evidence", "source",
         "translation"]


def load(path: Path) -> pl.DataFrame | None:
    """A run's examples.parquet (None where the run has none); one written before it had a
    ``language`` gets the target language as its language."""
    if not path.exists():
        return None
    frame = pl.read_parquet(path)
    if "language" not in frame.columns:
        frame = frame.with_columns(pl.col("tgt_lang").alias("language"))
    return frame


def choose(examples: pl.DataFrame, system: str | None = None, suite: str | None = None, language: str | None = None,
           outcome: str | None = None, limit: int | None = None) -> pl.DataFrame:
    """The examples that match every filter given, wrong ones first, spread over systems, suites and
    languages (each group's first, then each one's second, ...); at most ``limit``."""
    keep = pl.lit(True)
    for column, value in (("system", system), ("suite", suite), ("language", language), ("outcome", outcome)):
        if value is not None:
            keep = keep & (pl.col(column) == value)
    rank = pl.col("outcome").replace_strict(list(OUTCOMES), list(range(len(OUTCOMES))), default=len(OUTCOMES))
    chosen = examples.filter(keep).sort(rank, "order", "suite", "system", "language", "item_id")
    return chosen.head(limit) if limit is not None else chosen


def cue_words(evidence: str | None, gold: str | None = None) -> dict[str, str]:
    """The words of a label's evidence, lowercased -> "cue" (a word of the gold gender, or of no side
    the evidence says) or "other" (of the other gender: MT-GenEval's counterfactual words, written
    ``-word``; the person reader's ``word:m`` / ``word:f`` against the gold)."""
    words: dict[str, str] = {}
    for token in (evidence or "").split():
        if token == "...":
            continue
        kind = "cue"
        if token[0] in "+-" and len(token) > 1:
            kind, token = ("other" if token[0] == "-" else "cue"), token[1:]
        elif re.fullmatch(r".+:[mf]", token):
            token, side = token[:-2], token[-1]
            if gold in ("male", "female") and side != gold[0]:
                kind = "other"
        words.setdefault(token.lower(), kind)
    return words


def segments(text: str | None, evidence: str | None, gold: str | None = None) -> list[tuple[str, str | None]]:
    """``text`` as (piece, kind) pairs: kind "cue" or "other" for an evidence word (whole words, any
    case), None for the text between them; the pieces put together are the text."""
    if not text:
        return [(text or "", None)]
    words = cue_words(evidence, gold)
    if not words:
        return [(text, None)]
    pattern = re.compile(r"(?<!\w)(" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
                         + r")(?!\w)", re.IGNORECASE)
    out, at = [], 0
    for found in pattern.finditer(text):
        if found.start() > at:
            out.append((text[at:found.start()], None))
        out.append((found.group(), words[found.group().lower()]))
        at = found.end()
    if at < len(text):
        out.append((text[at:], None))
    return out


def html_sections(examples: pl.DataFrame, suites: list[str]) -> list[dict]:
    """Per suite with examples: its rows for report.html (each with its translation's segments) and the
    values its filters offer."""
    out = []
    rank = pl.col("outcome").replace_strict(list(OUTCOMES), list(range(len(OUTCOMES))), default=len(OUTCOMES))
    for suite in suites:
        part = examples.filter(pl.col("suite") == suite)
        if part.height == 0:
            continue
        cap = pl.col("outcome").replace_strict(list(HTML_CAPS), list(HTML_CAPS.values()), default=0)
        within = pl.col("order").rank("ordinal").over("system", "outcome")  # spread over the languages
        part = part.sort("order", "language", "item_id").filter(within <= cap).sort("system", rank, "order", "language")
        rows = [{**r, "segments": segments(r["translation"], r["evidence"], r["gold"])} for r in part.iter_rows(named=True)]
        total = examples.filter(pl.col("suite") == suite).height
        out.append({"suite": suite, "rows": rows, "total": total,
                    "systems": sorted(part["system"].unique().to_list()),
                    "languages": sorted(part["language"].drop_nulls().unique().to_list()),
                    "outcomes": [o for o in OUTCOMES if o in set(part["outcome"].to_list())],
                    "neutral": part["gold"].null_count() > 0})
    return out


def _marked_md(text: str | None, evidence: str | None, gold: str | None) -> str:
    return "".join(f"**{md(piece)}**" if kind else md(piece) for piece, kind in segments(text, evidence, gold))


def markdown(examples: pl.DataFrame) -> list[str]:
    """A few outputs that went wrong per suite and system, with the deciding words in bold."""
    wrong = examples.filter(pl.col("outcome") == "wrong")
    if wrong.height == 0:
        return []
    lines = ["## Translations behind the numbers", "",
             f"The first {MARKDOWN_PER_SYSTEM} outputs that went wrong per suite and system, the words that decided "
             "the label in bold; report.html has more, with filters, and `biaseval examples --run DIR` lists them "
             "all (examples.parquet).", ""]
    for (suite, system), part in wrong.sort("suite", "system", "order", "language").group_by(
            "suite", "system", maintain_order=True):
        lines += [f"### {md(suite)}: {md(system)}", ""]
        for r in part.head(MARKDOWN_PER_SYSTEM).iter_rows(named=True):
            why = f", {md(r['reason'])}" if r["reason"] else ""
            lines.append(f"- {code(r['item_id'])} ({md(r['language'] or '')}; gold {md(r['gold'] or 'none')}, read "
                         f"{md(r['label'])}{why}): {md(r['source'] or '')} → "
                         f"{_marked_md(r['translation'], r['evidence'], r['gold'])}")
        lines.append("")
    return lines


def text_lines(examples: pl.DataFrame) -> list[str]:
    """Examples for a terminal: a header line per example, then source and translation (deciding words
    between ⟦ ⟧)."""
    out = []
    for r in examples.iter_rows(named=True):
        marked = "".join(f"⟦{piece}⟧" if kind else piece for piece, kind in segments(r["translation"], r["evidence"], r["gold"]))
        why = f" ({r['reason']})" if r["reason"] else ""
        out += [f"{r['outcome'].upper()}  {r['system']}  {r['suite']}  {r['language'] or ''}  {r['item_id']}  "
                f"gold {r['gold'] or 'none'}, read {r['label']}{why}",
                f"  source:      {r['source'] or ''}", f"  translation: {marked}", ""]
    return out


def jsonl(examples: pl.DataFrame) -> str:
    """One JSON object per line (the columns SHOWN)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in examples.select(SHOWN).iter_rows(named=True))


def csv_text(examples: pl.DataFrame) -> str:
    """CSV with a header (the columns SHOWN)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SHOWN)
    writer.writerows(examples.select(SHOWN).iter_rows())
    return buffer.getvalue()
