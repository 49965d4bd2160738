"""WinoMT-Hindi (Singh 2023): 704 WinoMT sentences rewritten in Hindi with the gender of the
entity marked grammatically; 352 pro-stereotypical and 352 anti-stereotypical.

Gold labels come from the upstream ``goldlabel{pro,anti}all.txt`` files (gender, entity index,
English sentence, occupation), line-aligned with the Hindi sources.
"""

from __future__ import annotations

import polars as pl

from biaseval.data.datasets import LocalDataset
from biaseval.data.textio import read_lines
from biaseval.errors import DataError
from biaseval.suites.base import SUITES, FileSuite, Subset, item_frame

ROOT = "WinoMT-Hindi"


def _load(suite: FileSuite, data: LocalDataset) -> pl.DataFrame:
    frames = []
    for sub in suite.subsets:
        sources = read_lines(data.path(sub.source))
        gold_rel = f"{ROOT}/goldlabel{sub.stem}all.txt"
        gold_lines = read_lines(data.path(gold_rel))
        if len(gold_lines) != len(sources):
            raise DataError(f"{data.root / gold_rel}: {len(gold_lines)} lines, but {sub.source} has {len(sources)}")
        gold, reference, occupation = [], [], []
        for number, row in enumerate(gold_lines, 1):
            fields = row.split("\t")
            if len(fields) != 4 or fields[0] not in ("male", "female", "neutral"):
                raise DataError(f"{data.root / gold_rel}:{number}: expected 'gender<TAB>index<TAB>sentence<TAB>occupation'")
            gold.append(fields[0])
            reference.append(fields[2].strip())
            occupation.append(fields[3].strip())
        frames.append(
            item_frame(
                suite, sub, sources,
                gold=gold, occupation=occupation, reference=reference,
                stereotype=[sub.name] * len(sources),
            )
        )
    return pl.concat(frames)


WINOMT_HI = SUITES.register("winomt-hi")(
    FileSuite(
        name="winomt-hi",
        version=1,
        dataset="gender-bias-hi-en-eval",
        src_lang="hi",
        targets=("en",),
        scorer="winomt",
        detectors={"en": "winomt-hi-paper"},
        subsets=(
            Subset("pro", "pro", f"{ROOT}/profinal.txt"),
            Subset("anti", "anti", f"{ROOT}/antifinal.txt"),
        ),
        loader=_load,
        scorer_params=(("basis", "macro_f1"),),  # the paper's ΔS: macro-F1(pro) - macro-F1(anti)
        doc=__doc__,
    )
)
