"""WinoMT's adjective experiment (Stanovsky et al. 2019, §3.3, Table 4): the 1,584 anti-stereotypical
WinoBias sentences of WinoMT, each with a stereotypically gendered adjective put before its entity
that agrees with the entity's gold gender: "handsome" for a man, "pretty" for a woman ("The pretty
developer argued with the designer because she did not like the design.").

The sources are rebuilt from ``data/aggregates/en_anti.txt`` the way mt_gender built them before
translating them (``src/add_adjectives.py``): the adjective is inserted as a word at the entity's
index, so the entity moves one word to the right. The recorded outputs
(``translations/{google,bing}/adj.en-<lang>.txt``) hold exactly these sources, line for line.

Items are targets × sentences in subsets ``<target>/anti``; ``line`` is the sentence's line in
``en_anti.txt``, which is also its line in ``en.txt``, so ``winomt-en-adj/es/anti/00007`` is
``winomt-en/es/anti/00007`` with the adjective. Scored like ``winomt-en`` (entity alignment, accuracy
basis); the report sets Acc beside that of the same sentences without the adjective when the run has
both suites. There is no ΔS: every sentence is anti-stereotypical.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from biaseval.data.datasets import LocalDataset
from biaseval.data.textio import read_lines
from biaseval.suites.base import SUITES, Subset, conform
from biaseval.suites.winomt_en import ANTI, TARGETS, WINOMT_EN, WinoMTSuite, parse_rows

ADJECTIVES = {"male": "handsome", "female": "pretty"}  # mt_gender's src/add_adjectives.py


def with_adjective(gold: str, index: int, sentence: str) -> tuple[str, int]:
    """The sentence with the gold gender's adjective inserted as word ``index`` (single spaces, as
    mt_gender splits and joins), and the entity's new word index; a neutral gold keeps its sentence, as
    in mt_gender (the anti-stereotypical sentences have none)."""
    if gold not in ADJECTIVES:
        return sentence, index
    words = sentence.split(" ")
    return " ".join(words[:index] + [ADJECTIVES[gold]] + words[index:]), index + 1


def _load(suite: "WinoMTAdjSuite", data: LocalDataset) -> pl.DataFrame:
    rows = parse_rows(data.path(ANTI), read_lines(data.path(ANTI)))
    built = [with_adjective(gold, index, sentence) for gold, index, sentence, _ in rows]
    base = pl.DataFrame({
        "line": list(range(1, len(rows) + 1)),
        "source": [b[0] for b in built],
        "gold": [r[0] for r in rows],
        "occupation": [r[3] for r in rows],
        "entity_index": [b[1] for b in built],
        "stereotype": ["anti"] * len(rows),
    })
    frame = pl.concat([base.with_columns(pl.lit(suite.name).alias("suite"), pl.lit(f"{t}/anti").alias("subset"),
                                         pl.lit(suite.src_lang).alias("src_lang"), pl.lit(t).alias("tgt_lang"))
                       for t in suite.targets])
    frame = frame.with_columns(
        (pl.lit(f"{suite.name}/") + pl.col("subset") + pl.lit("/") + pl.col("line").cast(pl.String).str.zfill(5))
        .alias("item_id"))
    return conform(frame)


def _subsets(targets) -> tuple[Subset, ...]:
    return tuple(Subset(f"{t}/anti", t, ANTI) for t in targets)


@dataclasses.dataclass(frozen=True)
class WinoMTAdjSuite(WinoMTSuite):
    """The adjective variant for any subset of WinoMT's target languages."""

    def with_targets(self, targets: tuple[str, ...]) -> "WinoMTAdjSuite":
        narrowed = super().with_targets(targets)
        return dataclasses.replace(narrowed, subsets=_subsets(targets))


# winomt-en's settings (dataset, languages, detector, scorer), with its own items and subsets
WINOMT_EN_ADJ = SUITES.register("winomt-en-adj")(
    WinoMTAdjSuite(**{
        **{f.name: getattr(WINOMT_EN, f.name) for f in dataclasses.fields(WINOMT_EN) if f.init},
        "name": "winomt-en-adj",
        "version": 1,
        "subsets": _subsets(TARGETS),
        "loader": _load,
        "doc": __doc__,
        "optional_targets": ("ar",),  # of winomt-en's optional languages, only Arabic has adjective outputs
    })
)
