"""The closed-class words of Spanish, French and Italian for the Romance gender analysers:
articles and other determiners with their gender, the stressed-a and before-vowel exceptions,
indefinite pronouns, gender-neutral nouns, and the clitics and copulas of a predicate. They are
read from ``biaseval/data/entity_gender/<lang>.yaml`` (``word_data``) and validated
(``load_word_data``: a ConfigError names the file, line and entry). ``normalise`` is how a token
is compared with them: NFC, lower case, typographic apostrophes read as ``'``.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Mapping

from pydantic import BaseModel, ConfigDict

from biaseval.data.yamlio import read_yaml

_APOSTROPHES = dict.fromkeys(map(ord, "\u2019\u02bc\u2018`\u00b4"), "'")


def normalise(token: str) -> str:
    """A token as looked up: NFC, lower case, typographic apostrophes as '."""
    return unicodedata.normalize("NFC", token).translate(_APOSTROPHES).lower()


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    m: list[str] = []
    f: list[str] = []
    unmarked: list[str] = []


class _StressedA(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    articles: list[str]
    nouns: list[str]


class _Predicate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    before: list[str] = []
    copulas: list[str]


class _DataFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: int
    determiners: dict[str, _Group]
    stressed_a: _StressedA | None = None
    before_vowel_unmarked: list[str] = []
    indefinite: list[str] = []
    predicate: _Predicate | None = None
    neutral_nouns: list[str] = []


@dataclass(frozen=True)
class WordData:
    """The closed-class words of one language."""

    version: int
    determiners: Mapping[str, str | None]  # word -> "m", "f" or None (unmarked)
    stressed_a_articles: frozenset[str]
    stressed_a_nouns: frozenset[str]
    before_vowel_unmarked: frozenset[str]
    indefinite: tuple[tuple[str, ...], ...]  # token sequences
    neutral_nouns: frozenset[str]
    predicate_before: frozenset[str] = frozenset()
    copulas: tuple[tuple[str, ...], ...] = ()  # token sequences, longest first


def data_path(lang: str) -> str:
    return f"data/entity_gender/{lang}.yaml"


@cache
def word_data(lang: str) -> WordData:
    """The word data of ``lang``, from the package's data file."""
    with resources.as_file(resources.files("biaseval").joinpath(data_path(lang))) as path:
        return load_word_data(path)


def load_word_data(path: str | Path) -> WordData:
    """A word-data file, validated (ConfigError naming the file, line and entry when invalid)."""
    doc = read_yaml(path, "gender word data")
    parsed = doc.validate(_DataFile)

    def word(field: tuple, value: str) -> str:
        if not value or value != normalise(value).strip() or " " in value:
            raise doc.fail(field, f"{value!r} is not a lower-case single token with a plain apostrophe")
        return value

    determiners: dict[str, str | None] = {}
    where: dict[str, str] = {}
    for kind, group in parsed.determiners.items():
        for gender, values in (("m", group.m), ("f", group.f), ("unmarked", group.unmarked)):
            for k, value in enumerate(values):
                field = ("determiners", kind, gender, k)
                value = word(field, value)
                if value in determiners:
                    raise doc.fail(field, f"{value!r} is also listed under {where[value]}")
                determiners[value] = None if gender == "unmarked" else gender
                where[value] = f"{kind}.{gender}"
    for k, value in enumerate(parsed.before_vowel_unmarked):
        if determiners.get(word(("before_vowel_unmarked", k), value)) != "m":
            raise doc.fail(("before_vowel_unmarked", k), f"{value!r} is not a masculine determiner")
    stressed = parsed.stressed_a or _StressedA(articles=[], nouns=[])
    for k, value in enumerate(stressed.articles):
        if determiners.get(word(("stressed_a", "articles", k), value)) != "m":
            raise doc.fail(("stressed_a", "articles", k), f"{value!r} is not a masculine determiner")

    def sequences(field: tuple, values: list[str]) -> tuple[tuple[str, ...], ...]:
        out = []
        for k, value in enumerate(values):
            tokens = tuple(word(field + (k,), t) for t in value.split())
            if not tokens:
                raise doc.fail(field + (k,), "empty entry")
            out.append(tokens)
        return tuple(sorted(out, key=len, reverse=True))

    predicate = parsed.predicate or _Predicate(copulas=[])
    return WordData(
        version=parsed.version,
        determiners=determiners,
        stressed_a_articles=frozenset(stressed.articles),
        stressed_a_nouns=frozenset(word(("stressed_a", "nouns", k), v) for k, v in enumerate(stressed.nouns)),
        before_vowel_unmarked=frozenset(parsed.before_vowel_unmarked),
        indefinite=sequences(("indefinite",), parsed.indefinite),
        neutral_nouns=frozenset(word(("neutral_nouns", k), v) for k, v in enumerate(parsed.neutral_nouns)),
        predicate_before=frozenset(word(("predicate", "before", k), v) for k, v in enumerate(predicate.before)),
        copulas=sequences(("predicate", "copulas"), predicate.copulas),
    )
