"""The Dutch entity-gender analyser (biaseval/label/analysers/dutch.py: only marked forms, unknown
otherwise) and the Portuguese one (romance.py with Apertium's por-cat analyser), on hand-written
sentences, and the span contract."""

from __future__ import annotations

import pytest

from biaseval.label.analysers import analyser_for
from biaseval.label.analysers.dutch import Dutch
from biaseval.label.analysers.romance import Portuguese

from gender_cases import F, M, N, U, check_span_contract, ids, label_reason, read


@pytest.fixture(scope="module")
def nl() -> Dutch:
    return Dutch()


@pytest.fixture(scope="module")
def pt() -> Portuguese:
    return Portuguese()


NL_CASES = [
    ("De verpleegster hielp hem", [0, 1], F, "noun"),
    ("de hoofdverpleegster", [1], F, "noun"),       # a compound ending in a listed form
    ("De lerares zei", [1], F, "noun"),
    ("de zakenvrouw", [1], F, "noun"),
    ("De timmerman bouwde", [0, 1], M, "noun"),      # a compound on -man
    ("de arts", [0, 1], U, "epicene-no-article"),    # unmarked: said of women and men alike
    ("de leraar", [1], U, "epicene-no-article"),     # not read as male although "lerares" exists
    ("de meester", [1], U, "epicene-no-article"),    # ends in "ster" but that is not listed
    ("het hoofd van de afdeling", [0, 1, 4], U, "epicene-no-article"),  # the first word is the head
    ("Hij vertelde iemand", [2], N, "indefinite"),
    ("de vertrouwenspersoon", [1], N, "noun"),
    ("de", [0], U, "not-in-lexicon"),
    ("de arts", [], U, "no-alignment"),
]

PT_CASES = [
    ("O médico chegou", [1], M, "article"),
    ("A médica chegou", [0, 1], F, "article"),
    ("à governanta", [1], F, "article"),            # a + a contracted
    ("ao funcionário", [1], M, "article"),          # a + o contracted
    ("a motorista chegou", [1], F, "article"),      # an epicene noun: the article decides
    ("motorista estava cansada", [0], F, "agreement"),
    ("enfermeira", [0], F, "noun"),
    ("jornalista", [0], U, "epicene-no-article"),
    ("alguém chegou", [0], N, "indefinite"),
    ("a pessoa", [1], N, "indefinite"),
    ("sua médica", [1], F, "article"),              # possessives agree with the noun in Portuguese
]


@pytest.mark.parametrize("text, span, label, reason", NL_CASES, ids=ids(NL_CASES))
def test_dutch_rules(nl, text, span, label, reason):
    assert label_reason(read(nl, text, span)) == (label, reason)


@pytest.mark.parametrize("text, span, label, reason", PT_CASES, ids=ids(PT_CASES))
def test_portuguese_rules(pt, text, span, label, reason):
    assert label_reason(read(pt, text, span)) == (label, reason)


def test_registered_and_span_contract(nl, pt):
    assert isinstance(analyser_for("nl"), Dutch) and isinstance(analyser_for("pt"), Portuguese)
    check_span_contract(nl, ["de", "verpleegster"], [1])
    check_span_contract(pt, ["a", "médica"], [1])
