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
neighbours: those are lowercased by Python; then every separator, ASCII punctuation or white space,
made one space), and each of its item's unique words is looked up as `` word `` in
`` cleaned output ``: the same test as set membership, since a word holds no separator.

The detector ``mt-geneval-words`` labels an output with the gender its words show: the item's gold
gender (a word only the reference has), the other gender (a word only the counterfactual has),
``ambiguous`` (both) or ``unknown`` (neither); the reason says which, and so the paper's decision
(``WRONG_REASONS``); ``evidence`` lists the unique words found, ``-`` before the counterfactual's and
``+`` before the reference's (``-la -nueva +el``).
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from functools import cache

import numpy as np
import polars as pl

PUNCTUATION = string.punctuation
_STRIP = str.maketrans(PUNCTUATION, " " * len(PUNCTUATION))
# The characters Python's str.split() splits on (str.isspace; a test checks this list against every
# code point): Unicode's White_Space, and the four information separators U+001C..U+001F.
WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
              "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
# Each becomes one space: a word of the paper is then exactly a run between spaces.
_SEPARATORS = list(PUNCTUATION + WHITESPACE)

# Why an output got its label; the first two make it wrong under the paper's metric.
WRONG_REASONS = ("counterfactual-word", "both-words")
RIGHT_REASONS = ("reference-word", "no-unique-word", "counterfactual-contained", "references-same")
REASONS = WRONG_REASONS + RIGHT_REASONS
OTHER = {"female": "male", "male": "female"}
# Put before a looked-up word to say its side: ASCII punctuation, so never part of a word.
_CTF, _REF = "-", "+"


def words(text: str) -> set[str]:
    """The paper's words of one text (see the module docstring)."""
    return set(text.lower().translate(_STRIP).split())


def unique_words(reference: str, counterfactual: str) -> tuple[list[str], list[str]]:
    """(words only the reference has, words only the counterfactual has), each sorted."""
    ref, ctf = words(reference), words(counterfactual)
    return sorted(ref - ctf), sorted(ctf - ref)


@cache
def _risky() -> list[str]:
    """The characters whose lowercase polars gives differently from ``str.lower`` in this interpreter
    (letters cased in a newer Unicode than Python's), plus Σ (context-dependent). Every code point is
    compared, lowercased alone (once per process)."""
    codes = np.arange(0x110000, dtype="<u4")
    codes = codes[(codes != 0x0A) & ((codes < 0xD800) | (codes > 0xDFFF))]  # a line feed separates them
    lines = np.full(2 * codes.size, 0x0A, dtype="<u4")
    lines[0::2] = codes
    text = lines.tobytes().decode("utf-32-le")
    ours = pl.Series([text]).str.split("\n").explode()
    python = pl.Series([text.lower()]).str.split("\n").explode()
    return sorted({*ours.filter(ours.str.to_lowercase() != python).to_list(), "\u03a3"})


def clean(texts: pl.Series) -> pl.Series:
    """Each text as `` w1 w2 ... ``: lowercased, every separator (ASCII punctuation, white space) made
    one space, a space added at each end; so a word of the paper is exactly what `` word `` finds.
    Lowercased by polars, except the texts holding a character polars lowercases otherwise than
    Python (``_risky``), which Python lowercases."""
    spaces = [" "] * len(_SEPARATORS)
    out = pl.select(pl.lit(" ") + pl.lit(texts).str.to_lowercase().str.replace_many(_SEPARATORS, spaces)
                    + pl.lit(" ")).to_series()
    risky = texts.str.contains_any(_risky()).fill_null(False)
    if risky.any():
        fixed = [None if t is None else " " + " ".join(t.lower().translate(_STRIP).split()) + " "
                 for t in texts.filter(risky).to_list()]
        out = out.scatter(risky.arg_true(), pl.Series(fixed, dtype=pl.String))
    return out.alias(texts.name)


def last_line(text: pl.Expr) -> pl.Expr:
    """The text after its last line break (trailing white space ignored); the whole text if it has none."""
    return text.str.strip_chars_end().str.replace(r"(?s)^.*[\n\r]", "")


def marked_words(reference: str, counterfactual: str) -> list[str]:
    """The unique words of an item, each marked with its side: ``-`` before a word only the
    counterfactual has, ``+`` before one only the reference has (sorted, counterfactual first)."""
    ref_only, ctf_only = unique_words(reference, counterfactual)
    return [_CTF + w for w in ctf_only] + [_REF + w for w in ref_only]


def decide(frame: pl.DataFrame, hypothesis: str = "translation") -> pl.DataFrame:
    """``frame`` with ``label``, ``reason``, ``evidence`` and ``right`` (the paper's decision).

    Needs ``hypothesis`` (the output, null where there is none), ``words`` (the item's
    ``marked_words``) and ``gold`` (female/male, or null). Each output is cleaned once and each of its
    item's words looked up in it."""
    rows = frame.with_row_index("_row")
    found = (rows.select("_row", clean(rows[hypothesis]).alias("_clean"), pl.col("words").alias("_word"))
             .explode("_word").drop_nulls()
             .filter(pl.col("_clean").str.contains(pl.lit(" ") + pl.col("_word").str.slice(1) + pl.lit(" "),
                                                   literal=True))
             .group_by("_row").agg(pl.col("_word").str.join(" ").alias("_found")))
    out = rows.join(found, on="_row", how="left")
    hits = pl.col("_found").fill_null("")
    ctf_hit, ref_hit = hits.str.contains(_CTF, literal=True), hits.str.contains(_REF, literal=True)
    sides = pl.col("words").list.join("")
    no_ctf, no_ref = ~sides.str.contains(_CTF, literal=True), ~sides.str.contains(_REF, literal=True)
    missing = pl.col(hypothesis).is_null()
    reason = (pl.when(missing).then(None)
              .when(ctf_hit & ref_hit).then(pl.lit("both-words"))
              .when(ctf_hit).then(pl.lit("counterfactual-word"))
              .when(ref_hit).then(pl.lit("reference-word"))
              .when(no_ref & no_ctf).then(pl.lit("references-same"))
              .when(no_ctf).then(pl.lit("counterfactual-contained"))
              .otherwise(pl.lit("no-unique-word")))
    gold = pl.col("gold")
    other = pl.coalesce(gold.replace_strict(OTHER, default=None, return_dtype=pl.String), pl.lit("unknown"))
    label = (pl.when(missing).then(None)
             .when(ctf_hit & ref_hit).then(pl.lit("ambiguous"))
             .when(ctf_hit).then(other)
             .when(ref_hit).then(pl.coalesce(gold, pl.lit("unknown")))
             .otherwise(pl.lit("unknown")))
    return out.with_columns(reason.alias("reason"), label.alias("label"), pl.col("_found").alias("evidence")).with_columns(
        pl.when(missing).then(None).otherwise(~pl.col("reason").is_in(WRONG_REASONS)).alias("right"),
    ).drop("_row", "_found")


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
    reference and counterfactual) labelled by ``decide``, each item's unique words found once.
    ``hypothesis``: ``whole`` (the output) or ``last-line`` (its last line: the contextual set's
    second sentence). With ``paired``, ``partner`` is the decision on the row's other-gender version
    (same system, language and line; null where that has no output), else null."""
    items = rows.select("item_id", "reference", "counterfactual").unique("item_id", keep="first")
    words = [marked_words(r or "", c or "") for r, c in zip(items["reference"], items["counterfactual"])]
    items = items.select("item_id").with_columns(pl.Series("words", words, dtype=pl.List(pl.String)))
    text = pl.col("translation")
    frame = rows.join(items, on="item_id", how="left").with_columns(
        (last_line(text) if hypothesis == "last-line" else text).alias("_hypothesis"))
    out = decide(frame, "_hypothesis").drop("_hypothesis", "words")
    if not paired:
        return out.with_columns(pl.lit(None, dtype=pl.Boolean).alias("partner"))
    key = ["system", "tgt_lang", "line"]
    other = out.select(*key, pl.col("gold").replace_strict(OTHER, default=None, return_dtype=pl.String),
                       pl.col("right").alias("partner"))
    return out.join(other, on=[*key, "gold"], how="left")
