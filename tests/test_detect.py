"""Detectors: table-driven cases per rule set, and parity of the polars version with plain Python."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import QUICK
from pydantic import ValidationError

from biaseval.label.rules import RuleSet, builtin, label_expr, label_text


def labels(rule_set: str, texts: list[str | None]) -> list[str | None]:
    rs = builtin().get(rule_set)
    return pl.DataFrame({"translation": texts}, schema={"translation": pl.String}).select(
        label_expr(rs, "translation")
    ).to_series().to_list()


CASES = [
    # rule set, sentence, label
    ("tgbi-paper", "She is a doctor.", "female"),
    ("tgbi-paper", "He is a doctor.", "male"),
    ("tgbi-paper", "They are a doctor.", "neutral"),
    ("tgbi-paper", "He gave her a book.", "female"),  # female cues win: no ambiguous in the paper's rule
    ("tgbi-paper", "HE is a MAN.", "male"),  # case-insensitive
    ("tgbi-paper", "The shell is heavy; there is a hero.", "neutral"),  # whole words only
    ("tgbi-paper", "He's a good guy", "male"),
    ("tgbi-paper", "This is his book.", "neutral"),  # "his" is not a cue in the paper's TGBI rule
    ("tgbi-paper-his", "This is his book.", "male"),
    ("otsc-paper", "I have known her for a long time, my friend works as a nurse.", "female"),
    ("otsc-paper", "I have known him for a long time, my friend works as a nurse.", "male"),
    ("otsc-paper", "I have known them for a long time, my friend is a nurse.", "neutral"),
    ("otsc-paper", "She said I have known him.", "male"),  # only the object pronoun counts
    ("winomt-hi-paper", "The developer argued with the designer because he did not like it.", "male"),
    ("winomt-hi-paper", "The nurse helped because she was kind.", "female"),
    ("winomt-hi-paper", "He told her that she was right.", "ambiguous"),
    ("winomt-hi-paper", "The clerk gave his report to her.", "ambiguous"),
    ("winomt-hi-paper", "The clerk gave him a present.", "male"),
    ("winomt-hi-paper", "It was her birthday.", "female"),
    ("winomt-hi-paper", "The chief thanked the writer.", "neutral"),
    ("en-pronouns", "The mother thanked the boy.", "ambiguous"),
    ("en-pronouns", "Herself, she decided.", "female"),
    ("en-pronouns", "Nobody knows.", "neutral"),
]


@pytest.mark.parametrize("rule_set, text, expected", CASES)
def test_cases(rule_set, text, expected):
    assert labels(rule_set, [text]) == [expected]
    assert label_text(builtin().get(rule_set), text) == expected


def test_null_translation_has_null_label():
    assert labels("tgbi-paper", [None, "she"]) == [None, "female"]


def test_every_builtin_rule_set_is_documented_and_versioned():
    for name, rs in builtin().items():
        assert rs.doc and rs.version >= 1 and rs.signature == f"{name}@{rs.version}"


@pytest.mark.parametrize("bad", [
    {"rules": []},
    {"rules": [{"label": "boy", "words": [["he"]]}]},
    {"rules": [{"label": "male", "words": [[]]}]},
    {"rules": [{"label": "male", "words": [["two words"]]}]},
    {"rules": [{"label": "male", "words": [["he"]], "extra": 1}]},
])
def test_invalid_rule_sets_are_rejected(bad):
    with pytest.raises(ValidationError):
        RuleSet(name="x", **bad)


def test_polars_matches_python_on_every_recorded_output(hindi):
    """Parity of the vectorised detector with the per-line reference on all recorded English outputs
    (every tenth of them in the quick tier)."""
    outputs = ["amazontranslate", "corpus_indictrans", "microsofttranslate", "translation-google-results", "watson"]
    files = [p for d in outputs for p in (hindi / "TGBI and Simple Context Evaluation/corpus" / d).glob("*.txt")]
    files += list((hindi / "WinoMT-Hindi").glob("stereo_*/*.txt"))
    texts = [line for path in sorted(files) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(texts) > 150_000
    texts = texts[::10] if QUICK else texts
    for name, rs in builtin().items():
        if not isinstance(rs, RuleSet):  # taggers (code, not word rules) have their own tests
            continue
        fast = labels(name, texts)
        slow = [label_text(rs, t) for t in texts]
        mismatches = [(t, a, b) for t, a, b in zip(texts, fast, slow) if a != b]
        assert mismatches == [], f"{name}: {mismatches[:3]}"
