"""Arabic, Dutch and Portuguese WinoMT labels against hand-checked samples of Google's outputs.

No people annotated Dutch or Portuguese, and mt_gender's Arabic annotations are of AWS outputs only
(those are in test_winomt_human_agreement.py). These samples were labelled by hand for this project,
in mt_gender's annotation format plus U (nothing to read: Dutch "de arts", Arabic النظافة): 30
random Google lines (seed 16) whose labels were prefilled from the analyser and checked row by row,
then 20 more (seed 99) labelled blind, before seeing the analyser's reading (comment "blind"). Every
label is compared, unknown included. The aligner is trained as a run trains it: the sample's pairs
with every recorded system's pairs of the language (see docs/winomt-en.md)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from biaseval.data.datasets import resolve
from biaseval.data.textio import read_lines
from biaseval.label.rules import builtin
from biaseval.metrics.human_agreement import GENDER, read_annotations, recorded_pairs
from biaseval.suites.winomt_en import AGGREGATE, parse_rows

pytestmark = pytest.mark.slow  # each language aligns a corpus: seconds

HAND_DIR = Path(__file__).parent / "data" / "winomt_hand"
HAND_GENDER = {**GENDER, "U": "unknown"}
FLOORS = {"ar": 0.9, "nl": 0.9, "pt": 0.9}  # measured 2026-12: ar 48/50, nl 50/50, pt 50/50


def labelled_sample(lang: str) -> pl.DataFrame:
    """The sample of ``lang`` with ``human`` (the hand label) and our ``label``."""
    data = resolve("mt-gender")
    sources = parse_rows(data.path(AGGREGATE), read_lines(data.path(AGGREGATE)))
    rows = []
    for a in read_annotations(HAND_DIR / f"google.{lang}.csv"):
        _gold, index, sentence, entity = sources[a["index"]]
        assert a["entity"].lower().removeprefix("the ") == entity.lower()  # the index points at this entity
        rows.append({"source": sentence, "translation": a["translation"], "entity_index": index,
                     "occupation": entity, "human": HAND_GENDER[a["gender"]], "blind": a["comment"].startswith("blind")})
    sample = pl.DataFrame(rows, schema_overrides={"entity_index": pl.Int32})
    training = recorded_pairs(data, lang).with_columns(pl.lit(0, dtype=pl.Int32).alias("entity_index"),
                                                      pl.lit("").alias("occupation"))
    frame = pl.concat([sample.select("source", "translation", "entity_index", "occupation"), training],
                      how="vertical_relaxed").with_columns(pl.lit(lang).alias("tgt_lang"))
    labels = builtin().get("entity-alignment").label_frame(frame).head(sample.height)
    return sample.with_columns(labels.select("label", "reason", "evidence"))


@pytest.mark.parametrize("lang", sorted(FLOORS))
def test_agreement_with_hand_checked_samples(data_dir, lang):
    both = labelled_sample(lang)
    assert both.height == 50 and both["blind"].sum() == 20
    agree = (both["label"] == both["human"]).mean()
    blind = both.filter(pl.col("blind"))
    print(f"\n{lang}: {agree:.1%} of {both.height} hand-checked rows agree "
          f"({(blind['label'] == blind['human']).sum()} of the {blind.height} labelled blind); "
          f"by hand {dict(both['human'].value_counts().iter_rows())}")
    for r in both.filter(pl.col("label") != pl.col("human")).iter_rows(named=True):
        print(f"  {r['human']:>7} vs {r['label']:<7} ({r['reason']}: {r['evidence']}) {r['translation'][:90]}")
    assert agree >= FLOORS[lang], f"{lang}: {agree:.1%} agreement (floor {FLOORS[lang]:.0%})"
