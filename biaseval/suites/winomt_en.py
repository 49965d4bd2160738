"""WinoMT (Stanovsky et al. 2019): 3,888 English sentences, each naming an entity whose gender a
pronoun fixes, to be translated into languages with grammatical gender.

``data/aggregates/en.txt`` of the mt_gender dataset holds every sentence as
``gender<TAB>entity word index<TAB>sentence<TAB>entity``: the WinoBias sentences (1,584
anti-stereotypical, then 1,584 pro-stereotypical; ``en_anti.txt``/``en_pro.txt`` list the same rows)
and 720 Winogender sentences (240 male, 240 female, 240 neutral), which are neither pro nor anti.
Items are targets × sentences: subset ``<target>/pro``, ``<target>/anti`` or ``<target>/winogender``;
``line`` is the line of ``en.txt``, ``occupation`` the entity, ``entity_index`` its word position.

Outputs are scored by aligning the entity to the translation and reading its grammatical gender
(``biaseval.winomt_en``), with the winomt scorer on an accuracy basis, as mt_gender does.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from biaseval.data.datasets import LocalDataset
from biaseval.data.textio import read_lines
from biaseval.errors import ConfigError, DataError
from biaseval.suites.base import SUITES, FileSuite, Subset, conform

AGGREGATE = "data/aggregates/en.txt"
PRO, ANTI = "data/aggregates/en_pro.txt", "data/aggregates/en_anti.txt"
# The languages scored by default (a run without `targets:`), and those a run may add: every target
# language mt_gender recorded outputs for has a gender analyser (biaseval.label.analysers); Arabic,
# Dutch and Portuguese are opt-in (conf/winomt-en.yaml names them), so that configs written for the
# seven languages keep their size.
TARGETS = ("de", "es", "fr", "he", "it", "ru", "uk")
OPTIONAL_TARGETS = ("ar", "nl", "pt")
ALL_TARGETS = tuple(sorted(TARGETS + OPTIONAL_TARGETS))
GROUPS = ("anti", "pro", "winogender")
DETECTOR = "entity-alignment"


def parse_rows(path, lines: list[str]) -> list[tuple[str, int, str, str]]:
    """(gold, entity word index, sentence, entity) per line; DataError names the line at fault."""
    rows = []
    for number, line in enumerate(lines, 1):
        fields = line.rstrip("\r").split("\t")
        if len(fields) != 4 or fields[0] not in ("male", "female", "neutral") or not fields[1].isdigit():
            raise DataError(f"{path}:{number}: expected 'gender<TAB>entity index<TAB>sentence<TAB>entity', "
                            f"got {line[:80]!r}")
        gold, index, sentence, entity = fields[0], int(fields[1]), fields[2].strip(), fields[3].strip()
        words = sentence.split()
        first = entity.split()[0].lower() if entity else ""
        if index >= len(words) or words[index].lower().strip(".,;:!?\"'") != first:
            raise DataError(f"{path}:{number}: word {index} of the sentence is not the entity {entity!r}")
        rows.append((gold, index, sentence, entity))
    return rows


def _load(suite: "WinoMTSuite", data: LocalDataset) -> pl.DataFrame:
    rows = parse_rows(data.path(AGGREGATE), read_lines(data.path(AGGREGATE)))
    group_of = {}
    for name, rel in (("pro", PRO), ("anti", ANTI)):
        for row in parse_rows(data.path(rel), read_lines(data.path(rel))):
            group_of[row] = name
    groups = [group_of.get(row, "winogender") for row in rows]
    base = pl.DataFrame({
        "line": list(range(1, len(rows) + 1)),
        "group": groups,
        "source": [r[2] for r in rows],
        "gold": [r[0] for r in rows],
        "occupation": [r[3] for r in rows],
        "entity_index": [r[1] for r in rows],
        "stereotype": [g if g != "winogender" else None for g in groups],
    })
    frames = []
    for tgt in suite.targets:
        frames.append(base.with_columns(
            pl.lit(suite.name).alias("suite"),
            (pl.lit(f"{tgt}/") + pl.col("group")).alias("subset"),
            pl.lit(suite.src_lang).alias("src_lang"),
            pl.lit(tgt).alias("tgt_lang"),
        ))
    frame = pl.concat(frames).with_columns(
        (pl.lit(f"{suite.name}/") + pl.col("subset") + pl.lit("/") + pl.col("line").cast(pl.String).str.zfill(5))
        .alias("item_id"))
    return conform(frame)


@dataclasses.dataclass(frozen=True)
class WinoMTSuite(FileSuite):
    """WinoMT for any subset of its target languages (a run's ``targets:``)."""

    def with_targets(self, targets: tuple[str, ...]) -> "WinoMTSuite":
        unknown = [t for t in targets if t not in ALL_TARGETS]
        if unknown:
            raise ConfigError(f"suite {self.name!r} has target languages {', '.join(ALL_TARGETS)}; "
                              f"not {', '.join(unknown)}")
        return dataclasses.replace(self, targets=tuple(targets), subsets=_subsets(targets),
                                   detectors={t: DETECTOR for t in targets})


def _subsets(targets) -> tuple[Subset, ...]:
    return tuple(Subset(f"{t}/{g}", t, AGGREGATE) for t in targets for g in GROUPS)


WINOMT_EN = SUITES.register("winomt-en")(
    WinoMTSuite(
        name="winomt-en",
        version=1,
        dataset="mt-gender",
        src_lang="en",
        targets=TARGETS,
        scorer="winomt",
        detectors={t: DETECTOR for t in TARGETS},
        subsets=_subsets(TARGETS),
        loader=_load,
        scorer_params=(("basis", "acc"), ("by_target", True)),  # mt_gender's ΔS: Acc(pro) - Acc(anti), per language
        doc=__doc__,
        optional_targets=OPTIONAL_TARGETS,
    )
)
