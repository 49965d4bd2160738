"""MT-GenEval's accuracy decision (Currey et al. 2022): an output is wrong when it contains a word that
only the counterfactual reference has.

Words are those of the paper's metric: the text lowercased (Python's ``str.lower``), each ASCII
punctuation character (``string.punctuation``) replaced by a space, split on white space (Python's
``str.split()``: ``str.isspace`` characters). Nothing else is normalised: Unicode punctuation (the
Arabic comma, «», the Devanagari danda) stays part of its word, exactly as in the paper's script.
For an output *h*, its reference *r* and the counterfactual *c* (word sets): ``r_only = r − c``,
``c_only = c − r``; the output is wrong when ``h ∩ c_only`` is not empty, right otherwise (also when
it has no word of either side, or when the references' words are the same).

``words`` is that rule on one string (used for the references, once per item). ``decide`` applies
it to a whole frame of outputs in polars: each output is cleaned once (lowercased by polars, except
outputs holding a character whose lowercase polars and this Python give differently — a few letters
newer than Python's Unicode tables, and Σ, the one letter whose lowercase depends on its
neighbours: those are lowercased by Python), and each of its item's unique words is looked up as
`` word `` in `` cleaned output `` (words joined by single spaces): the same test as set membership.

The detector ``mt-geneval-words`` labels an output with the gender its words show: the item's gold
gender (a word only the reference has), the other gender (a word only the counterfactual has),
``ambiguous`` (both) or ``unknown`` (neither); the reason says which, and so the paper's decision
(``WRONG_REASONS``); ``evidence`` holds the words that decided.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from functools import cache

import numpy as np
import polars as pl

PUNCTUATION = string.punctuation
_STRIP = str.maketrans(PUNCTUATION, " " * len(PUNCTUATION))
# Python's str.isspace characters, as a regex class (polars' \s is Unicode White_Space, which lacks
# the four information separators U+001C..U+001F that Python also splits on).
WHITESPACE = r"[\s\x1c-\x1f]"
_PUNCT_CLASS = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in PUNCTUATION) + "]"

# Why an output got its label; the first two make it wrong under the paper's metric.
WRONG_REASONS = ("counterfactual-word", "both-words")
RIGHT_REASONS = ("reference-word", "no-unique-word", "counterfactual-contained", "references-same")
REASONS = WRONG_REASONS + RIGHT_REASONS
OTHER = {"female": "male", "male": "female"}


def words(text: str) -> set[str]:
    """The paper's words of one text (see the module docstring)."""
    return set(text.lower().translate(_STRIP).split())


def unique_words(reference: str, counterfactual: str) -> tuple[list[str], list[str]]:
    """(words only the reference has, words only the counterfactual has), each sorted."""
    ref, ctf = words(reference), words(counterfactual)
    return sorted(ref - ctf), sorted(ctf - ref)


@cache
def _risky_class() -> str:
    """A regex class of the characters whose lowercase polars gives differently from ``str.lower`` in
    this interpreter (letters cased in a newer Unicode than Python's), plus Σ (context-dependent).
    Every code point is compared, lowercased alone (once per process)."""
    codes = np.arange(0x110000, dtype="<u4")
    codes = codes[(codes != 0x0A) & ((codes < 0xD800) | (codes > 0xDFFF))]  # a line feed separates them
    lines = np.full(2 * codes.size, 0x0A, dtype="<u4")
    lines[0::2] = codes
    text = lines.tobytes().decode("utf-32-le")
    ours = pl.Series([text]).str.split("\n").explode()
    python = pl.Series([text.lower()]).str.split("\n").explode()
    risky = ours.filter(ours.str.to_lowercase() != python).to_list()
    return "[" + "".join(f"\\x{{{ord(c):x}}}" for c in sorted({*risky, "\u03a3"})) + "]"


def clean_expr(text: pl.Expr) -> pl.Expr:
    """`` w1 w2 ... `` : the paper's words of ``text`` in order, joined and surrounded by single spaces
    (lowercased by polars; see ``clean``, which fixes the rows polars would lowercase differently)."""
    cleaned = text.str.to_lowercase().str.replace_all(_PUNCT_CLASS, " ").str.replace_all(WHITESPACE + "+", " ")
    return pl.lit(" ") + cleaned.str.strip_chars(" ") + pl.lit(" ")


def clean(texts: pl.Series) -> pl.Series:
    """``clean_expr`` of every text, with Python's lowercase where polars' would differ."""
    out = pl.select(clean_expr(pl.lit(texts))).to_series()
    risky = texts.str.contains(_risky_class()).fill_null(False)
    if risky.any():
        fixed = [None if t is None else " " + " ".join(t.lower().translate(_STRIP).split()) + " "
                 for t in texts.filter(risky).to_list()]
        out = out.scatter(risky.arg_true(), pl.Series(fixed, dtype=pl.String))
    return out.alias(texts.name)


def last_line(text: pl.Expr) -> pl.Expr:
    """The text after its last line break (trailing white space ignored); the whole text if it has none."""
    return text.str.strip_chars_end().str.replace(r"(?s)^.*[\n\r]", "")


def decide(frame: pl.DataFrame, hypothesis: str = "translation") -> pl.DataFrame:
    """``frame`` with ``label``, ``reason``, ``evidence`` and ``right`` (the paper's decision).

    Needs ``hypothesis`` (the output, null where there is none), ``ref_only`` and ``ctf_only`` (list
    of the item's unique words, from ``unique_words``) and ``gold`` (female/male, or null)."""
    rows = frame.with_row_index("_row")
    texts = rows.select("_row", clean(rows[hypothesis]).alias("_clean")).filter(pl.col("_clean").is_not_null())
    pairs = pl.concat([
        rows.select("_row", pl.col(side).alias("_word"), pl.lit(side).alias("_side")).explode("_word")
        for side in ("ref_only", "ctf_only")
    ]).filter(pl.col("_word").is_not_null())
    found = (pairs.join(texts, on="_row", how="inner")
             .filter(pl.col("_clean").str.contains(pl.lit(" ") + pl.col("_word") + pl.lit(" "), literal=True))
             .group_by("_row", "_side").agg(pl.col("_word").sort().str.join(" ")))
    hits = found.pivot(on="_side", index="_row", values="_word") if found.height else pl.DataFrame(
        schema={"_row": pl.UInt32})
    for side in ("ref_only", "ctf_only"):
        if side not in hits.columns:
            hits = hits.with_columns(pl.lit(None, dtype=pl.String).alias(side))
    hits = hits.rename({"ref_only": "_ref_hit", "ctf_only": "_ctf_hit"})
    out = rows.join(hits, on="_row", how="left")
    ref_hit, ctf_hit = pl.col("_ref_hit").is_not_null(), pl.col("_ctf_hit").is_not_null()
    no_ref, no_ctf = pl.col("ref_only").list.len() == 0, pl.col("ctf_only").list.len() == 0
    missing = pl.col(hypothesis).is_null()
    reason = (pl.when(missing).then(None)
              .when(ctf_hit & ref_hit).then(pl.lit("both-words"))
              .when(ctf_hit).then(pl.lit("counterfactual-word"))
              .when(ref_hit).then(pl.lit("reference-word"))
              .when(no_ref & no_ctf).then(pl.lit("references-same"))
              .when(no_ctf).then(pl.lit("counterfactual-contained"))
              .otherwise(pl.lit("no-unique-word")))
    gold = pl.col("gold")
    label = (pl.when(missing).then(None)
             .when(ctf_hit & ref_hit).then(pl.lit("ambiguous"))
             .when(ctf_hit).then(pl.coalesce(gold.replace_strict(OTHER, default=None, return_dtype=pl.String), pl.lit("unknown")))
             .when(ref_hit).then(pl.coalesce(gold, pl.lit("unknown")))
             .otherwise(pl.lit("unknown")))
    evidence = pl.when(ctf_hit).then(pl.col("_ctf_hit")).when(ref_hit).then(pl.col("_ref_hit"))
    return out.with_columns(reason.alias("reason"), label.alias("label"), evidence.alias("evidence")).with_columns(
        pl.when(missing).then(None).otherwise(~pl.col("reason").is_in(WRONG_REASONS)).alias("right"),
    ).drop("_row", "_ref_hit", "_ctf_hit")


@dataclass(frozen=True)
class ReferenceWords:
    """Detector: MT-GenEval's decision from the item's reference and counterfactual (module docstring).
    Like entity alignment it labels a suite's rows together (its words come from items.parquet)."""

    name: str
    version: int
    language: str = "*"
    doc: str = ""
    labels: tuple[str, ...] = ("male", "female", "ambiguous", "unknown")

    @property
    def signature(self) -> str:
        return f"{self.name}@{self.version}"


DETECTORS = (
    ReferenceWords("mt-geneval-words", 1, doc=(
        "MT-GenEval's accuracy (Currey et al. 2022): an output is wrong when it has a word only the "
        "counterfactual reference has (lowercased, ASCII punctuation as spaces, split on white space); "
        "label: the gender its unique words show, reason: the decision (biaseval/label/reference_words.py).")),
)


def label_outputs(rows: pl.DataFrame, *, paired: bool, hypothesis: str = "whole") -> pl.DataFrame:
    """Rows of one suite (system, item_id, tgt_lang, gold, translation, with the item's line,
    reference and counterfactual) labelled by ``decide``, each item's unique words computed once.
    ``hypothesis``: ``whole`` (the output) or ``last-line`` (its last line: the contextual set's
    second sentence). With ``paired``, ``partner`` is the decision on the row's other-gender version
    (same system, language and line; null where that has no output), else null."""
    items = rows.select("item_id", "reference", "counterfactual").unique("item_id", keep="first")
    unique = [unique_words(r or "", c or "") for r, c in zip(items["reference"], items["counterfactual"])]
    items = items.select("item_id").with_columns(
        pl.Series("ref_only", [u[0] for u in unique], dtype=pl.List(pl.String)),
        pl.Series("ctf_only", [u[1] for u in unique], dtype=pl.List(pl.String)))
    text = pl.col("translation")
    frame = rows.join(items, on="item_id", how="left").with_columns(
        (last_line(text) if hypothesis == "last-line" else text).alias("_hypothesis"))
    out = decide(frame, "_hypothesis").drop("_hypothesis", "ref_only", "ctf_only")
    if not paired:
        return out.with_columns(pl.lit(None, dtype=pl.Boolean).alias("partner"))
    key = ["system", "tgt_lang", "line"]
    other = out.select(*key, pl.col("gold").replace_strict(OTHER, default=None, return_dtype=pl.String),
                       pl.col("right").alias("partner"))
    return out.join(other, on=[*key, "gold"], how="left")
