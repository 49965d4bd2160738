"""Whole-word matching of the rule-set detectors on texts nobody wrote them for: every rule word next
to letters, digits, underscores, marks and punctuation from many scripts, in several cases.

The detectors match a word group with character classes rather than ``\\b`` (label/rules.py,
faster); these tests hold it to the ``\\b`` pattern it replaced (so scores do not move) and to the
plain-Python reference ``label_text``."""

from __future__ import annotations

import random
import re
from functools import cache

import polars as pl
import pytest

from biaseval.label.rules import (
    RuleSet,
    _group_pattern,
    builtin,
    LABEL_ENUM,
    label_expr,
    label_series,
    label_text,
)

RULE_SETS = [rs for _, rs in builtin().items() if isinstance(rs, RuleSet)]
# Characters on either side of a word. Python's \w and the regex engine's \w agree on these:
# letters of several scripts, digits of two scripts, the underscore, and non-word characters
# (spaces of several kinds, punctuation, a symbol).
AGREED = ["", " ", "a", "Z", "é", "É", "ß", "ı", "λ", "ж", "א", "ب", "中", "1", "٣", "_",
          "\u00a0", "\n", "\t", "'", "\u2019", "-", ".", ",", "!", "?", "(", "\"", "€", "😀"]
# Where they differ, only the ``\b`` pattern is the reference: combining marks and joiners (word
# characters to the regex engine, not to Python's \w); ſ and the Kelvin sign, which the engine's
# case-insensitive matching folds to s and k (Python's lower() keeps them); and İ, which Python's
# lower() turns into i and a combining dot (a mark, so a word break to Python's \w).
ENGINE_ONLY = ["\u0301", "\u0308", "\u200d", "\u0651", "\u05b8", "ſ", "\u212a", "İ"]


def _cases(word: str) -> list[str]:
    return sorted({word, word.upper(), word.title(), word[:-1] + word[-1].upper()})


@cache
def texts(neighbours: tuple[str, ...]) -> list[str | None]:
    words = sorted({w for rs in RULE_SETS for rule in rs.rules for group in rule.words for w in group})
    out: list[str | None] = [None, "", " ", "\n"]
    for word in words:
        for form in _cases(word):
            for n in neighbours:
                out += [f"{n}{form}", f"{form}{n}", f"{n}{form}{n}", f"x {n}{form} y", f"x {form}{n} y"]
    rnd = random.Random(17)  # sentences of rule words, other words and neighbours, glued or spaced
    pieces = words + ["the", "they", "other", "hero", "shell", "mango", *neighbours]
    out += ["".join(rnd.choice(pieces) + rnd.choice(["", " ", " ", "."]) for _ in range(rnd.randint(1, 8)))
            for _ in range(5_000)]
    return out


def _hits(pattern: str, values: list[str | None]) -> list[bool | None]:
    return pl.Series(values, dtype=pl.String).str.contains(pattern).to_list()


@pytest.mark.parametrize("rule_set", RULE_SETS, ids=lambda rs: rs.name)
def test_word_groups_match_where_the_word_boundary_pattern_does(rule_set):
    values = texts(tuple(AGREED + ENGINE_ONLY))
    groups = {tuple(sorted(g)) for rule in rule_set.rules for g in rule.words}
    for group in sorted(groups):
        boundary = r"(?i)\b(?:" + "|".join(re.escape(w) for w in group) + r")\b"
        fast, reference = _hits(_group_pattern(group), values), _hits(boundary, values)
        wrong = [(v, f, r) for v, f, r in zip(values, fast, reference) if f != r]
        assert wrong == [], f"{rule_set.name} {group}: {len(wrong)} texts differ, e.g. {wrong[:3]}"
        assert any(reference) and not all(h for h in reference if h is not None)  # both outcomes occur


@pytest.mark.parametrize("rule_set", RULE_SETS, ids=lambda rs: rs.name)
def test_labels_match_the_python_reference(rule_set):
    values = texts(tuple(AGREED))
    fast = pl.DataFrame({"t": values}, schema={"t": pl.String}).select(label_expr(rule_set, "t")).to_series()
    slow = [label_text(rule_set, v) for v in values]
    wrong = [(v, f, s) for v, f, s in zip(values, fast.to_list(), slow) if f != s]
    assert wrong == [], f"{rule_set.name}: {len(wrong)} texts differ, e.g. {wrong[:3]}"
    assert len(set(slow)) > 2  # the texts reach more than one rule


@pytest.mark.parametrize("rule_set", RULE_SETS, ids=lambda rs: rs.name)
def test_label_series_and_codes_give_the_expression_labels(rule_set):
    """Scoring labels a Series directly, as codes: the same labels as the expression, nulls included."""
    values = texts(tuple(AGREED + ENGINE_ONLY))
    series = pl.Series("t", values, dtype=pl.String)
    expected = pl.DataFrame({"t": series}).select(label_expr(rule_set, "t")).to_series().to_list()
    assert label_series(rule_set, series).to_list() == expected
    codes = label_series(rule_set, series, LABEL_ENUM)
    assert codes.dtype == LABEL_ENUM and codes.cast(pl.String).to_list() == expected
    assert None in expected and len(set(expected)) > 2
