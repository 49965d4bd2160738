"""Our WinoMT labels against people: mt_gender's hand annotations (100 translated sentences per
language: the entity found or not, and its gender M/F/N) compared with what entity alignment +
morphology reads from the same translations (``biaseval.metrics.human_agreement``), and the
disagreements by class (``biaseval.metrics.disagreements``), as docs/winomt-en-mt-gender.md
publishes them.

The aligner is trained on every recorded system's pairs of the language plus the annotated ones, as
a run would train it. Agreement is measured on the rows where the annotator found the entity and
gave it a male or female gender; the floors below are what our stack reaches on this data, less a
margin, so a regression in the aligner, the tokenizer or an analyser fails here."""

from __future__ import annotations

import polars as pl
import pytest
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.data.datasets import resolve
from biaseval.label.rules import builtin
from biaseval.metrics.disagreements import CLASSES, class_counts, classify
from biaseval.metrics.human_agreement import ANNOTATIONS, agreement, label_annotated
from biaseval.report.disagreements import disagreements_markdown
from conftest import REPO

pytestmark = pytest.mark.slow  # each language aligns a corpus (twice: both readings): seconds

# Agreement floors (share of clearly gendered annotations we read the same way), a few rows below
# what this stack reaches (printed by the test; measured 2026-12: es 100%, uk 99%, ru 92%, ar 92%,
# it 86%, he 81%, fr 76%, de 62%). The German and French annotators often gave the entity the gender of a
# later pronoun when the translation contradicts itself ("Die Krankenschwester sah den Arzt und bat
# sie ...": annotated female); WinoMT, and we, read the noun's grammatical gender (male). The classes
# of every disagreement are in docs/winomt-en-mt-gender.md ("Where people read otherwise").
FLOORS = {"ar": 0.88, "es": 0.95, "uk": 0.95, "ru": 0.88, "it": 0.82, "he": 0.75, "fr": 0.72, "de": 0.58}
# With the pronoun-following reading (detector entity-alignment-pronoun): measured de 91%, fr 89%.
PRONOUN_FLOORS = {"de": 0.86, "fr": 0.84}

_labelled: dict[str, pl.DataFrame] = {}


def labelled(lang: str) -> pl.DataFrame:
    """The annotations of ``lang`` with both readings, labelled once per test session."""
    if lang not in _labelled:
        detectors = {"": builtin().get("entity-alignment"), "pronoun": builtin().get("entity-alignment-pronoun")}
        _labelled[lang] = label_annotated(resolve("mt-gender"), lang, detectors)
    return _labelled[lang]


@pytest.mark.parametrize("lang", sorted(ANNOTATIONS))
def test_agreement_with_human_annotations(data_dir, lang):
    both = labelled(lang)
    # the annotation's index points at the same entity as en.txt's line
    assert (both["annotated_entity"].str.to_lowercase().str.replace(r"^the ", "")
            == both["occupation"].str.to_lowercase()).mean() >= 0.95
    agree, n = agreement(both)
    clear = both.filter(pl.col("human").is_in(["male", "female"]))
    disagree = clear.filter(pl.col("label") != pl.col("human"))
    print(f"\n{lang}: {agree:.1%} of {n} clearly gendered annotations agree; "
          f"unknown {(clear['label'] == 'unknown').sum()}, wrong gender {(disagree['label'] != 'unknown').sum()}")
    for r in disagree.head(8).iter_rows(named=True):
        print(f"  {r['human']:>6} vs {r['label']:<7} ({r['reason']}: {r['evidence']}) {r['translation'][:90]}")
    assert n >= 50
    assert agree >= FLOORS[lang], f"{lang}: {agree:.1%} agreement (floor {FLOORS[lang]:.0%})"


@pytest.mark.parametrize("lang", sorted(PRONOUN_FLOORS))
def test_german_and_french_annotators_follow_the_later_pronoun(data_dir, lang):
    both = labelled(lang)
    noun, _ = agreement(both)
    pronoun, _ = agreement(both, "label_pronoun")
    assert pronoun >= PRONOUN_FLOORS[lang] and pronoun > noun + 0.1, (lang, noun, pronoun)
    # where a pronoun decided, it is one after the entity, and the reason says so
    decided = both.filter(pl.col("reason_pronoun") == "pronoun")
    assert decided.height > 0 and decided["label_pronoun"].is_in(["male", "female"]).all()
    # rows without a gendered pronoun after the entity keep the noun-phrase reading
    kept = both.filter(pl.col("reason_pronoun") != "pronoun")
    assert (kept["label_pronoun"] == kept["label"]).all()


def test_hebrew_annotators_read_the_noun(data_dir):
    """Hebrew annotators did not follow the pronoun: a masculine noun with a feminine pronoun after it
    was annotated male. The pronoun-following reading is an option, not the default."""
    both = labelled("he")
    assert agreement(both, "label_pronoun")[0] < agreement(both)[0] - 0.1


DOC = REPO / "docs" / "winomt-en-mt-gender.md"


def test_every_disagreement_is_classified_and_the_docs_publish_the_table(data_dir):
    classified = {lang: classify(labelled(lang), lang) for lang in sorted(ANNOTATIONS)}
    for lang, frame in classified.items():
        assert (frame["class"] == "unchecked").sum() == 0, frame.filter(pl.col("class") == "unchecked")
    counts = {r["language"]: r for r in class_counts(classified).iter_rows(named=True)}
    # German: most of the disagreements are translations whose pronoun contradicts the noun
    assert counts["de"]["pronoun-over-noun"] >= 20
    assert all(sum(r[c] for c in CLASSES) == r["total"] for r in counts.values())
    markdown = disagreements_markdown({lang: labelled(lang) for lang in classified}, classified)
    published = DOC.read_text(encoding="utf-8").splitlines()
    for lang in classified:
        row = next(line for line in markdown.splitlines() if line.startswith(f"| {lang} |"))
        assert row in published, f"{DOC.name} does not hold the row the command prints for {lang}: {row}"


def test_the_command_prints_the_table_and_the_items(data_dir):
    result = CliRunner().invoke(main, ["winomt", "disagreements", "--lang", "uk", "--items"])
    assert result.exit_code == 0, result.output
    classified = {"uk": classify(labelled("uk"), "uk")}
    assert result.output == disagreements_markdown({"uk": labelled("uk")}, classified, items=True)
    assert "### uk" in result.output
    bad = CliRunner().invoke(main, ["winomt", "disagreements", "--lang", "xx"])
    assert bad.exit_code == 2 and "no annotations for xx" in bad.output
