"""Gender detection on translations: named rule sets (biaseval/data/detectors.yaml), vectorised in polars.

``label_expr(rule_set, "translation")`` is a polars expression giving one of LABELS per row
(null where the translation is null). ``label_text`` applies the same rules to one string in
plain Python; it exists for parity tests and the benchmark baseline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Callable, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator

from biaseval.data.yamlio import package_yaml
from biaseval.registry import Registry

# neutral: no gender cued; ambiguous: both cued; unknown: what the rules look for is not there
# (e.g. the friend of the OTSC template left out of a translation) — a label, not a guess.
LABELS = ("male", "female", "neutral", "ambiguous", "unknown")
LABEL_ENUM = pl.Enum(LABELS)
Label = Literal["male", "female", "neutral", "ambiguous", "unknown"]
_WORD = re.compile(r"^[^\W\d_]+$")  # letters only: one regex word, one Python token


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    label: Label
    words: tuple[tuple[str, ...], ...] = Field(min_length=1)

    @field_validator("words")
    @classmethod
    def _words(cls, groups: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
        out = []
        for group in groups:
            if not group:
                raise ValueError("a word group is empty")
            for word in group:
                if not _WORD.match(word):
                    raise ValueError(f"{word!r} is not a single word")
            out.append(tuple(w.lower() for w in group))
        return tuple(out)


class RuleSet(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    version: int = 1
    language: str = "en"
    doc: str = ""
    rules: tuple[Rule, ...] = Field(min_length=1)
    default: Label = "neutral"  # the label when no rule fires

    @property
    def signature(self) -> str:
        return f"{self.name}@{self.version}"

    def expr(self, column: str = "translation", dtype: pl.DataType = pl.String) -> pl.Expr:
        return label_expr(self, column, dtype)


@dataclass(frozen=True)
class Tagger:
    """A detector that is code, not word rules: a function from texts to labels (e.g. the Italian
    grammatical gender of a translated word: masculine, feminine, both, unknown)."""

    name: str
    version: int
    language: str
    doc: str
    labels: tuple[str, ...]
    tag: Callable[[list[str | None]], list[str]]

    @property
    def signature(self) -> str:
        return f"{self.name}@{self.version}"

    def expr(self, column: str = "translation") -> pl.Expr:
        def run(series: pl.Series) -> pl.Series:
            return pl.Series(series.name, self.tag(series.to_list()), dtype=pl.String)

        text = pl.col(column)
        return pl.when(text.is_null()).then(pl.lit(None, dtype=pl.String)).otherwise(
            text.map_batches(run, return_dtype=pl.String))


Detector = RuleSet | Tagger  # and entities.EntityAlignment, reference_words.ReferenceWords: they label a whole corpus


def _group_pattern(group: tuple[str, ...]) -> str:
    """Any word of ``group`` as a whole word, in any case. Rule words are letters, so "a whole word" is:
    not preceded or followed by a word character — what ``\\b...\\b`` says, written with character
    classes. The regex engine runs this as one automaton over each text; a Unicode ``\\b`` needs a
    slower engine to confirm each candidate, which costs most where candidates are frequent ("he" in
    "the"): 2.5x the time for TGBI's male words on the recorded outputs. (A lone rare word such as
    "him" was faster with ``\\b``, found by a literal search first; over the paper's suites labelling
    takes a third less time.)"""
    return r"(?i)(?:^|\W)(?:" + "|".join(re.escape(w) for w in sorted(group)) + r")(?:\W|$)"


def label_expr(rule_set: RuleSet, column: str = "translation", dtype: pl.DataType = pl.String) -> pl.Expr:
    """Polars expression labelling ``column`` with ``rule_set``; one regex pass per distinct word group.
    ``dtype``: String, or ``LABEL_ENUM`` (the labels as small integer codes: cheaper to count and write)."""
    text = pl.col(column)
    hits = {key: text.str.contains(_group_pattern(key)) for key in _word_groups(rule_set)}
    return _choose(rule_set, text, hits, dtype)


def label_series(rule_set: RuleSet, texts: pl.Series, dtype: pl.DataType = pl.String) -> pl.Series:
    """``label_expr`` applied to a Series, each word group's regex run on it directly: one core each,
    where the expression engine would run them side by side — in threads that already keep every core
    busy (scoring), the same labels for about a tenth less CPU."""
    hits = {key: pl.lit(texts.str.contains(_group_pattern(key))) for key in _word_groups(rule_set)}
    return pl.select(_choose(rule_set, pl.lit(texts), hits, dtype)).to_series().alias(texts.name)


def _word_groups(rule_set: RuleSet) -> list[tuple[str, ...]]:
    """The rule set's distinct word groups (each group's words sorted)."""
    return list(dict.fromkeys(tuple(sorted(group)) for rule in rule_set.rules for group in rule.words))


def _choose(rule_set: RuleSet, text: pl.Expr, hits: dict[tuple[str, ...], pl.Expr], dtype: pl.DataType) -> pl.Expr:
    """The first rule whose every word group is hit, else the default; null where the text is."""
    chain = None
    for rule in rule_set.rules:
        cond = pl.all_horizontal([hits[tuple(sorted(g))] for g in rule.words])
        value = pl.lit(rule.label, dtype=dtype)
        chain = pl.when(cond).then(value) if chain is None else chain.when(cond).then(value)
    return pl.when(text.is_null()).then(pl.lit(None, dtype=dtype)).otherwise(
        chain.otherwise(pl.lit(rule_set.default, dtype=dtype)))


def label_text(rule_set: RuleSet, text: str | None) -> str | None:
    """The same rules on one string, in plain Python (reference implementation)."""
    if text is None:
        return None
    words = set(re.findall(r"\w+", text.lower()))
    for rule in rule_set.rules:
        if all(any(w in words for w in group) for group in rule.words):
            return rule.label
    return rule_set.default


def rule_cues(rule_set: RuleSet, text: str | None) -> list[str]:
    """The rule set's words a text holds, in their order in the text, each once: the words that decided
    its label (tokenised as ``label_text`` does). For showing an output with its cues marked."""
    if text is None:
        return []
    wanted = {w for rule in rule_set.rules for group in rule.words for w in group}
    return list(dict.fromkeys(w for w in re.findall(r"\w+", text.lower()) if w in wanted))


def _italian(texts: list[str | None]) -> list[str]:
    from biaseval.label.italian import italian_genders

    return italian_genders(texts)


TAGGERS = (
    Tagger("it-grammatical-gender", 1, "it",
           "The grammatical gender of an Italian word or short phrase (biaseval/label/italian.py): articles and "
           "determiners, then a lexicon, then noun endings with their exceptions; unknown rather than a guess.",
           ("masculine", "feminine", "both", "unknown"), _italian),
)


@cache
def builtin() -> Registry[Detector]:
    reg: Registry[Detector] = Registry("detector")
    for name, entry in package_yaml("data/detectors.yaml").items():
        reg.add(name, RuleSet(name=name, **entry))
    from biaseval.label.person_gender import DETECTORS as PERSON_DETECTORS
    from biaseval.label.speaker_gender import DETECTORS as SPEAKER_DETECTORS

    for tagger in (*TAGGERS, *PERSON_DETECTORS, *SPEAKER_DETECTORS):
        reg.add(tagger.name, tagger)
    from biaseval.label.entities import DETECTORS as CORPUS_DETECTORS
    from biaseval.label.reference_words import DETECTORS as REFERENCE_DETECTORS

    for detector in (*CORPUS_DETECTORS, *REFERENCE_DETECTORS):
        reg.add(detector.name, detector)
    return reg
