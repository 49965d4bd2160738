"""The translations behind the numbers: a bounded sample of each system × suite's outputs, each with
its item's source, the translation, the gold gender, the label, why, and the words that decided it,
written to examples.parquet, so that reading one output behind a score needs no join of items,
shards and labels.

Each output's outcome is the one its suite's headline share counts and its paired tests compare
(``paired.suite_outcome``): ``wrong``, ``right``, or ``unscored`` (a MiTTenS passage out of English
that the reader could not read); an item without a translation is not an example (report.md lists
those). For a gender-neutral set (TGBI), right is an output that commits to no gender.

The sample is taken while scoring labels the shards (``pick``: per group of shards, a few rows; no
second pass over the outputs; in a big run, from part of them: at most eight groups of shards per
suite (``labelling.PICKED_GROUPS``, spread over the suite) and, in a group of more than CANDIDATES
outputs, a stride through them): per system × suite × target language × outcome, the outputs first in
a fixed pseudo-random order (polars' hash of the item id), at most CAPS of each outcome, so it is the
same on every scoring of a run (with the same polars) and spread over the suite; ``finish`` keeps the first of the groups' picks
and adds the sources and, for rule-set detectors, the cue words found.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from biaseval.label.rules import RuleSet, rule_cues
from biaseval.metrics.paired import suite_outcome

CAPS = {"wrong": 100, "right": 25, "unscored": 25}  # per system × suite × target language
SEED = 2029
KEYS = ["system", "suite", "tgt_lang", "outcome"]
PICKED = ["system", "item_id", "tgt_lang", "gold", "translation", "label", "reason", "evidence", "outcome", "_order"]
COLUMNS = ["system", "suite", "item_id", "subset", "language", "src_lang", "tgt_lang", "source", "translation", "gold",
           "label", "reason", "evidence", "outcome", "order"]
SCHEMA = {"system": pl.String, "suite": pl.String, "item_id": pl.String, "subset": pl.String, "language": pl.String,
          "src_lang": pl.String, "tgt_lang": pl.String, "source": pl.String, "translation": pl.String,
          "gold": pl.String, "label": pl.String, "reason": pl.String, "evidence": pl.String, "outcome": pl.String,
          "order": pl.UInt32}


OUTCOMES = ("wrong", "right", "unscored")  # codes 0, 1, 2
CANDIDATES = 8192  # per group of shards: the rows a pick looks at (a stride through a bigger group)


def _outcome_code(scorer: str, params: dict) -> pl.Expr:
    """Per output: 0 wrong, 1 right, 2 unscored (``OUTCOMES``); null without a translation or a label."""
    decided = suite_outcome(scorer, params)
    return (pl.when(pl.col("translation").is_null() | pl.col("label").is_null()).then(None)
            .when(decided.is_null()).then(2).when(decided).then(1).otherwise(0).cast(pl.UInt8))


def pick(labelled: pl.DataFrame, scorer: str, params: dict, limit: int | None = CANDIDATES) -> pl.DataFrame:
    """A group of one suite's labelled outputs (label_group's frame) cut to its candidates: per system ×
    target language × outcome the CAPS first in the hash order (``_order``: the hash), among the
    group's outputs, or, where it has more than ``limit``, among a stride through them (every k-th;
    None: all, for a suite labelled in one group, whose pick is its only one). A pick costs a few
    vector passes over at most ``limit`` rows, not a sort of the group."""
    frame = labelled.lazy()
    if limit and labelled.height > limit:
        frame = frame.gather_every(-(-labelled.height // limit))
    missing = [pl.lit(None, dtype=pl.String).alias(c) for c in ("gold", "tgt_lang", "reason", "evidence")
               if c not in labelled.columns]
    code = _outcome_code(scorer, params)
    cap = code.replace_strict(list(range(len(OUTCOMES))), [CAPS[o] for o in OUTCOMES], return_dtype=pl.UInt32)
    order = pl.col("item_id").hash(SEED)
    return (frame.with_columns(missing).filter(code.is_not_null())
            .filter(order.rank("ordinal").over("system", "tgt_lang", code) <= cap)
            .with_columns(code.replace_strict(list(range(len(OUTCOMES))), list(OUTCOMES), return_dtype=pl.String)
                          .alias("outcome"), order.alias("_order"))
            .select([pl.col(c) if c == "_order" else pl.col(c).cast(pl.String) for c in PICKED])
            .collect())


def finish(picked: pl.DataFrame, items: Path, detectors: dict) -> pl.DataFrame:
    """examples.parquet's rows from every group's picks (columns PICKED and ``suite``): the first CAPS
    per system × suite × language × outcome, numbered in that order (``order``, from 0), with the
    item's subset, source and language (beside English); the cue words of a rule-set detector as ``evidence`` where the labeller
    wrote none. ``detectors``: (suite, target language) -> the detector."""
    if picked.height == 0:
        return pl.DataFrame(schema=SCHEMA)
    order = pl.col("_order").rank("ordinal").over(KEYS) - 1
    cap = pl.col("outcome").replace_strict(list(CAPS), list(CAPS.values()), return_dtype=pl.UInt32)
    chosen = (picked.with_columns(order.cast(pl.UInt32).alias("order"))
              .filter(pl.col("order") < cap).drop("_order"))
    ids = chosen["item_id"].unique().implode()
    sources = (pl.scan_parquet(items).filter(pl.col("item_id").is_in(ids))
               .select("suite", "item_id", "subset", "source", "src_lang").collect())
    chosen = chosen.join(sources, on=["suite", "item_id"], how="left")
    # the language an example is in, beside English: the target's, or the source's for a suite into English
    chosen = chosen.with_columns(pl.when((pl.col("tgt_lang") == "en") & pl.col("src_lang").is_not_null())
                                 .then(pl.col("src_lang")).otherwise(pl.col("tgt_lang")).alias("language"))
    cues = [_cues(detectors.get((suite, lang)), text) if evidence is None else evidence
            for suite, lang, text, evidence in chosen.select("suite", "tgt_lang", "translation", "evidence").iter_rows()]
    chosen = chosen.with_columns(pl.Series("evidence", cues, dtype=pl.String))
    return chosen.select(COLUMNS).cast(SCHEMA).sort("suite", "system", "tgt_lang", "outcome", "order")


def _cues(detector, text: str | None) -> str | None:
    if not isinstance(detector, RuleSet) or text is None:
        return None
    return " ".join(rule_cues(detector, text)) or None
