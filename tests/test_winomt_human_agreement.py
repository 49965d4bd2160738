"""Our WinoMT labels against people: mt_gender's hand annotations (100 translated sentences per
language: the entity found or not, and its gender M/F/N) compared with what entity alignment +
morphology reads from the same translations.

The aligner is trained on every recorded system's pairs of the language plus the annotated ones, as
a run would train it. Agreement is measured on the rows where the annotator found the entity and
gave it a male or female gender; the floors below are what our stack reaches on this data, less a
margin, so a regression in the aligner, the tokenizer or an analyser fails here."""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl
import pytest

from biaseval.label.rules import builtin
from biaseval.suites.winomt_en import AGGREGATE, parse_rows
from biaseval.data.textio import read_lines

pytestmark = pytest.mark.slow  # each language aligns a corpus: seconds

ANNOTATIONS = {  # language -> (file, systems whose outputs train the aligner with the annotated pairs)
    "es": "es.in - es.in.csv",
    "fr": "fr.in - fr.in.csv",
    "it": "google.it.in.2 - it.in.csv",
    "ru": "ru.google - ru.in.csv",
    "uk": "uk.google.gold - uk.in.csv",
    "de": "aws.de.in - de.in.csv",
    "he": "he.in.csv - he.in.csv",
    "ar": "aws.ar.in - ar.in.csv",
}
# Agreement floors (share of clearly gendered annotations we read the same way), a few rows below
# what this stack reaches (printed by the test; measured 2026-12: es 100%, uk 99%, ru 92%, ar 92%,
# it 86%, he 81%, fr 76%, de 62%). Of the eight Arabic disagreements (of 95), five annotators followed
# a later pronoun or the English (three "someone" rows, "المدقق ... لأنها", a housekeeper مدبرة
# annotated male after "له"), one span covers two noun phrases (the carpenter read as الممرضة), one
# aligns only the verb (وفحص), and one renders the cleaner as النظافة "cleanliness" (annotated
# female; we read no person there). The German and French annotators often gave the entity the gender of a
# later pronoun when the translation contradicts itself ("Die Krankenschwester sah den Arzt und bat
# sie ...": annotated female); WinoMT, and we, read the noun's grammatical gender (male). In 29 of
# the 32 German disagreements the annotation equals the English gold gender, which the noun does not
# carry — the floors there measure that, not a weaker analyser.
FLOORS = {"ar": 0.88, "es": 0.95, "uk": 0.95, "ru": 0.88, "it": 0.82, "he": 0.75, "fr": 0.72, "de": 0.58}
GENDER = {"M": "male", "F": "female", "N": "neutral"}
# No people annotated Dutch or Portuguese, and mt_gender's Arabic annotations are of AWS outputs only;
# these samples of Google lines were labelled by hand for this project, in mt_gender's annotation
# format plus U (nothing to read: Dutch "de arts", Arabic النظافة): 30 random lines (seed 16) whose
# labels were prefilled from the analyser and checked row by row, then 20 more (seed 99) labelled
# blind, before seeing the analyser's reading (comment "blind"). Every label is compared, unknown
# included (see docs/winomt-en.md).
HAND = {"ar": "google.ar.csv", "nl": "google.nl.csv", "pt": "google.pt.csv"}
HAND_DIR = Path(__file__).parent / "data" / "winomt_hand"
HAND_GENDER = {**GENDER, "U": "unknown"}
HAND_FLOORS = {"ar": 0.9, "nl": 0.9, "pt": 0.9}  # measured 2026-12: ar 48/50, nl 50/50, pt 50/50


def read_annotations(path, lang: str) -> list[dict]:
    """Rows of one annotation file: index (0-based line of en.txt), entity, translation, found, gender."""
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        next(reader)
        for record in reader:
            # (the Ukrainian file's header says "Index,,Entity", but its columns are in the same order)
            index, entity, sentence, found, gender = record[:5]
            rows.append({"index": int(index), "entity": entity.strip(), "translation": sentence.strip(),
                         "found": found.strip().upper(), "gender": gender.strip().upper()})
    return rows


@pytest.fixture(scope="module")
def sources(data_dir):
    path = data_dir / "mt_gender" / AGGREGATE
    return parse_rows(path, read_lines(path))


def _corpus(data_dir, lang: str) -> list[tuple[str, str]]:
    pairs = []
    for path in sorted((data_dir / "mt_gender" / "translations").glob(f"*/en-{lang}.txt")):
        for line in read_lines(path):
            source, sep, translation = line.partition(" ||| ")
            if sep:
                pairs.append((source.strip(), translation.strip()))
    return pairs


def agreement(data_dir, sources, lang: str, path=None, genders=GENDER) -> tuple[float, int, pl.DataFrame]:
    """Agreement on the clear male/female annotations of ``path`` (default: mt_gender's file for
    ``lang``), and every row with its label."""
    path = path or data_dir / "mt_gender" / "data" / "human_annotations" / ANNOTATIONS[lang]
    annotations = read_annotations(path, lang)
    rows = []
    for a in annotations:
        gold, index, sentence, entity = sources[a["index"]]
        rows.append({"row": len(rows), "source": sentence, "translation": a["translation"], "entity_index": index,
                     "occupation": entity, "human": genders.get(a["gender"]) if a["found"] == "Y" else None,
                     "annotated_entity": a["entity"], "gold": gold})
    annotated = pl.DataFrame(rows)
    assert (annotated["annotated_entity"].str.to_lowercase().str.replace(r"^the ", "")
            == annotated["occupation"].str.to_lowercase()).mean() >= 0.95  # the index points at the same entity
    training = pl.DataFrame(_corpus(data_dir, lang), schema=["source", "translation"], orient="row").with_columns(
        pl.lit(0, dtype=pl.Int32).alias("entity_index"), pl.lit("").alias("occupation"))
    frame = pl.concat([annotated.select("source", "translation", pl.col("entity_index").cast(pl.Int32), "occupation"),
                       training], how="vertical_relaxed").with_columns(pl.lit(lang).alias("tgt_lang"))
    labelled = builtin().get("entity-alignment").label_frame(frame).head(annotated.height)
    both = annotated.with_columns(labelled.select("label", "reason", "evidence"))
    clear = both.filter(pl.col("human").is_in(["male", "female"]))
    agree = (clear["label"] == clear["human"]).mean()
    return agree, clear.height, both


@pytest.mark.parametrize("lang", sorted(ANNOTATIONS))
def test_agreement_with_human_annotations(data_dir, sources, lang):
    agree, n, both = agreement(data_dir, sources, lang)
    clear = both.filter(pl.col("human").is_in(["male", "female"]))
    disagree = clear.filter(pl.col("label") != pl.col("human"))
    print(f"\n{lang}: {agree:.1%} of {n} clearly gendered annotations agree; "
          f"unknown {(clear['label'] == 'unknown').sum()}, wrong gender {(disagree['label'] != 'unknown').sum()}")
    for r in disagree.head(8).iter_rows(named=True):
        print(f"  {r['human']:>6} vs {r['label']:<7} ({r['reason']}: {r['evidence']}) {r['translation'][:90]}")
    assert n >= 50
    assert agree >= FLOORS[lang], f"{lang}: {agree:.1%} agreement (floor {FLOORS[lang]:.0%})"


@pytest.mark.parametrize("lang", sorted(HAND))
def test_agreement_with_hand_checked_samples(data_dir, sources, lang):
    """Every label (unknown included) against the hand-checked sample of Google's outputs."""
    _, _, both = agreement(data_dir, sources, lang, HAND_DIR / HAND[lang], HAND_GENDER)
    assert both.height == 50 and both["human"].null_count() == 0
    agree = (both["label"] == both["human"]).mean()
    blind = both.tail(20)
    print(f"\n{lang}: {agree:.1%} of {both.height} hand-checked rows agree "
          f"({(blind['label'] == blind['human']).sum()} of the {blind.height} labelled blind); "
          f"by hand {dict(both['human'].value_counts().iter_rows())}")
    assert agree >= HAND_FLOORS[lang], f"{lang}: {agree:.1%} agreement (floor {HAND_FLOORS[lang]:.0%})"
