"""What a target-language gender analyser is, and the registry of them.

An analyser gets, per row, the target sentence as tokens (``biaseval.align.tokenize``) and the
indices of the tokens aligned to the source entity (its determiner included; possibly empty), and
returns a ``Reading``: the gender the translation gives that entity, and why. ``unknown`` is a
label, not a guess: every unknown has a reason, so a report can say what was missing.

Analysers work on a whole corpus at once (``analyse``) so that those backed by an external program
(Apertium's ``lt-proc``, ``hspell``) start it once per corpus, never once per sentence.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import ClassVar, Literal, Sequence

from biaseval.errors import ConfigError
from biaseval.registry import Registry

GenderLabel = Literal["male", "female", "neutral", "unknown"]

# Why a reading came out as it did. Decisive evidence:
#   article      a gendered article/determiner/possessive of the entity decided
#   noun         the noun's own gender (morphological analyser or lexicon) decided
#   agreement    an agreeing word (adjective, participle, verb) decided (languages that need it)
#   indefinite   the entity was rendered as an indefinite pronoun ("alguien", "qualcuno"): neutral
# Reasons for unknown:
#   no-alignment          no target token is aligned to the entity
#   not-in-lexicon        no aligned token is a noun the analyser knows
#   epicene-no-article    the noun has one form for both genders and nothing marks the gender
#   conflict              the evidence disagrees (e.g. a masculine article before a feminine noun)
REASONS = ("article", "noun", "agreement", "indefinite",
           "no-alignment", "not-in-lexicon", "epicene-no-article", "conflict")


@dataclass(frozen=True)
class Reading:
    label: GenderLabel
    reason: str  # one of REASONS
    evidence: str = ""  # the target words that decided, space-separated (for reports)

    def __post_init__(self):
        if self.reason not in REASONS:
            raise ValueError(f"unknown reason {self.reason!r}; known: {', '.join(REASONS)}")


NO_ALIGNMENT = Reading("unknown", "no-alignment")


class MissingAnalyser(ConfigError):
    """The program or package a language's analyser needs is not installed."""


class GenderAnalyser(ABC):
    """Reads the gender of an aligned entity in one target language."""

    lang: ClassVar[str]
    version: ClassVar[int] = 1  # bump when the rules or the data change what labels come out

    @abstractmethod
    def analyse(self, sentences: Sequence[Sequence[str]], spans: Sequence[Sequence[int]]) -> list[Reading]:
        """One reading per row: ``sentences[i]`` the target tokens, ``spans[i]`` the sorted indices of
        the tokens aligned to the entity (empty: ``NO_ALIGNMENT``)."""

    @property
    def signature(self) -> str:
        """Name and version, stamped on metrics rows (changes whenever labels could change)."""
        return f"entity-gender-{self.lang}@{self.version}"


ANALYSERS: Registry[str] = Registry("gender analyser")  # language -> "module:Class", imported on use


def analyser_for(lang: str) -> GenderAnalyser:
    """The analyser for ``lang``, constructed once per process (raises MissingAnalyser naming what to
    install when its program or package is missing)."""
    return _build(lang)


@cache
def _build(lang: str) -> GenderAnalyser:
    module, _, name = ANALYSERS.get(lang).partition(":")
    return getattr(import_module(module), name)()
