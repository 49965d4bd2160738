"""What a target-language gender analyser is, and the registry of them.

An analyser gets, per row, the target sentence as tokens (``biaseval.align.tokenize``) and the
indices of the tokens aligned to the source entity (its determiner included; possibly empty), and
returns a ``Reading``: the gender the translation gives that entity, and why. ``unknown`` is a
label, not a guess: every unknown has a reason, so a report can say what was missing.

Analysers work on a whole corpus at once (``analyse``) so that those backed by an external program
(Apertium's ``lt-proc``, ``hspell``) start it once per corpus, never once per sentence.

The span contract, the same for every language (``GenderAnalyser.analyse`` checks it, in one place,
before a language's rules see any row):

- one span per sentence, else ValueError;
- a span is a set of token indices: order and repeats do not matter;
- an empty span reads as ``NO_ALIGNMENT`` (unknown ``no-alignment``): the aligner linked no target
  word to the entity, which happens in real translations and is reported as such;
- an index outside the sentence's tokens (negative, or past its last token) is a ``SpanError``
  naming the rows, raised before any row is read. Such a span cannot come from a translation: the
  alignment was computed on other tokens, or the entity index is wrong. That is a bug upstream,
  and the rows whose indices happen to fall inside their sentences are then likely wrong too, so
  the whole corpus is refused rather than scored: dropping the bad indices (or labelling the row
  unknown) would publish accuracy figures that quietly include the error. The error counts the
  rows and shows the first few, so one run tells how far the problem goes; the translations stay
  stored, and scoring again after the fix costs no translation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import Callable, ClassVar, Literal, Sequence

from biaseval.data.yamlio import package_yaml
from biaseval.errors import ConfigError
from biaseval.system_packages import MissingPackages
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
# Arabic's only (arabic.py), where the span has no noun that can name a person and a word in it marks
# the person's gender itself:
#   verb-agreement   a verb's person ending (قالت, تقول: she; قالوا: they, m)
#   pronoun-suffix   a bound pronoun (لها "to her", كونها "her being", أسلوبها "her style", أعطاها "gave her")
MARK_REASONS = ("verb-agreement", "pronoun-suffix")
# Not an analyser's: the pronoun-following reading (detector entity-alignment-pronoun,
# biaseval/label/pronouns.py) gives reason "pronoun" when a gendered pronoun after the entity decided.
READING_REASONS = REASONS + MARK_REASONS + ("pronoun",)


@dataclass(frozen=True)
class Reading:
    label: GenderLabel
    reason: str  # one of READING_REASONS
    evidence: str = ""  # the target words that decided, space-separated (for reports)

    def __post_init__(self):
        if self.reason not in READING_REASONS:
            raise ValueError(f"unknown reason {self.reason!r}; known: {', '.join(READING_REASONS)}")


NO_ALIGNMENT = Reading("unknown", "no-alignment")


class MissingAnalyser(ConfigError):
    """The program or package a language's analyser needs is not installed."""


class MissingAnalyserPackages(MissingPackages, MissingAnalyser):
    """The Debian packages a language's analyser runs are not installed (the message is
    ``system_packages.missing_message``'s, the same wherever a package is missing)."""


class SpanError(ValueError):
    """Entity spans point outside their sentences' tokens (see the module docstring); ``rows``
    holds the indices of the rows at fault, in input order."""

    def __init__(self, message: str, rows: Sequence[int]):
        super().__init__(message)
        self.rows = list(rows)

    def __reduce__(self):  # raised in a worker process, it is pickled back whole
        return type(self), (str(self), self.rows)


_SHOWN = 3  # rows described in a SpanError


def checked_spans(sentences: Sequence[Sequence[str]], spans: Sequence[Sequence[int]]) -> list[list[int]]:
    """Each span as sorted unique indices, once every index is known to be inside its sentence
    (ValueError when the counts differ, SpanError naming the rows when an index is outside)."""
    if len(sentences) != len(spans):
        raise ValueError(f"{len(sentences)} sentences but {len(spans)} spans")
    out = [sorted(set(span)) for span in spans]
    bad = [k for k, (tokens, span) in enumerate(zip(sentences, out))
           if span and (span[0] < 0 or span[-1] >= len(tokens))]
    if bad:
        shown = "; ".join(f"row {k}: span {out[k]}, {len(sentences[k])} tokens ({_excerpt(sentences[k])})"
                          for k in bad[:_SHOWN])
        more = f"; and {len(bad) - _SHOWN} more" if len(bad) > _SHOWN else ""
        raise SpanError(f"{len(bad)} of {len(spans)} rows have an entity span outside their translation's "
                        f"tokens (the alignment or the entity index is wrong): {shown}{more}", bad)
    return out


def _excerpt(tokens: Sequence[str], width: int = 60) -> str:
    text = " ".join(tokens)
    return repr(text if len(text) <= width else text[:width - 3] + "...")


class GenderAnalyser(ABC):
    """Reads the gender of an aligned entity in one target language."""

    lang: ClassVar[str]
    version: ClassVar[int] = 1  # bump when the rules or the data change what labels come out

    def analyse(self, sentences: Sequence[Sequence[str]], spans: Sequence[Sequence[int]]) -> list[Reading]:
        """One reading per row: ``sentences[i]`` the target tokens, ``spans[i]`` the indices of the
        tokens aligned to the entity. The spans are checked first (the contract of the module
        docstring); rows with an empty span read as ``NO_ALIGNMENT``, the others go to ``read_aligned``
        all together."""
        checked = checked_spans(sentences, spans)
        aligned = [k for k, span in enumerate(checked) if span]
        readings = self.read_aligned([list(sentences[k]) for k in aligned], [checked[k] for k in aligned])
        if len(readings) != len(aligned):
            raise RuntimeError(f"{type(self).__name__} read {len(readings)} rows of {len(aligned)}")
        out = [NO_ALIGNMENT] * len(checked)
        for k, reading in zip(aligned, readings):
            out[k] = reading
        return out

    @abstractmethod
    def read_aligned(self, sentences: list[list[str]], spans: list[list[int]]) -> list[Reading]:
        """One reading per row, for rows ``analyse`` has checked: every span non-empty, sorted,
        without repeats and inside its sentence's tokens."""

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


class WordLists:
    """An analyser's word lists, read from the package's ``data/entity_gender/<file>``; each list is
    checked as it is asked for, and a bad one is named with its file and key."""

    def __init__(self, file: str):
        self.where = f"biaseval/data/entity_gender/{file}"
        raw = package_yaml(f"data/entity_gender/{file}")
        self.raw = raw if isinstance(raw, dict) else {}

    def words(self, key: str, ok: Callable[[str], bool], expected: str) -> list[str]:
        value = self.raw.get(key)
        if not isinstance(value, list) or not all(isinstance(w, str) and ok(w) for w in value):
            raise ConfigError(f"{self.where}: {key}: expected {expected}")
        return value
