"""The word lists of the Italian gender tagger (``biaseval.label.italian``), from
``biaseval/data/gender_it.yaml``: determiners, prenominal adjectives and articulated prepositions
with their gender and number, prepositions and conjunctions, nouns by gender (the exceptions to
the ending rules), sex-specific nouns, words that are not nouns, and English words.
``parse_lexicon`` validates the file (a DataError names the entry); ``lexicon()`` is the
package's own, read once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from biaseval.data.yamlio import parse_yaml
from biaseval.errors import ConfigError, DataError

LABELS = ("masculine", "feminine", "both", "unknown")
M, F, BOTH, UNKNOWN = LABELS
_G = {"m": M, "f": F, "-": None}
LEXICON_FILE = "biaseval/data/gender_it.yaml"


@dataclass(frozen=True)
class Lexicon:
    determiners: dict[str, tuple[str | None, str | None]]  # word -> (label or None, "sg"/"pl"/None)
    adjectives: dict[str, tuple[str | None, str | None]]
    articulated: dict[str, tuple[str | None, str | None]]
    prepositions: frozenset[str]
    conjunctions: frozenset[str]
    nouns: dict[str, str]  # word -> masculine / feminine / both
    sex_specific: frozenset[str]
    not_nouns: frozenset[str]
    english: frozenset[str]
    version: int


def _fail(message: str) -> DataError:
    return DataError(f"{LEXICON_FILE}: {message}")


def _features(section: str, mapping) -> dict[str, tuple[str | None, str | None]]:
    if not isinstance(mapping, dict):
        raise _fail(f"{section}: expected a mapping of word: 'GENDER NUMBER'")
    out = {}
    for word, value in mapping.items():
        parts = str(value).split()
        if not isinstance(word, str) or len(parts) != 2 or parts[0] not in _G or parts[1] not in ("sg", "pl", "-"):
            raise _fail(f"{section}: {word!r}: {value!r} is not 'GENDER NUMBER' (m/f/- and sg/pl/-)")
        out[_check_word(section, word)] = (_G[parts[0]], None if parts[1] == "-" else parts[1])
    return out


def _check_word(section: str, word) -> str:
    if not isinstance(word, str) or not word or word != word.strip().lower() or " " in word:
        raise _fail(f"{section}: {word!r} is not a lower-case single word")
    return word


def _words(section: str, values) -> frozenset[str]:
    if not isinstance(values, list):
        raise _fail(f"{section}: expected a list of words")
    return frozenset(_check_word(section, w) for w in values)


def parse_lexicon(text: str) -> Lexicon:
    """The lexicon from the YAML text of gender_it.yaml, validated (DataError naming the entry)."""
    try:
        data, _ = parse_yaml(text, LEXICON_FILE)
    except ConfigError as exc:
        raise DataError(str(exc)) from None
    if not isinstance(data, dict):
        raise _fail("expected a mapping at the top level")
    known = {"version", "determiners", "prenominal_adjectives", "prepositions", "articulated_prepositions",
             "conjunctions", "nouns", "sex_specific", "not_nouns", "english"}
    extra = set(data) - known
    missing = known - set(data)
    if extra or missing:
        raise _fail(f"unknown keys {sorted(extra)}, missing keys {sorted(missing)}")
    nouns: dict[str, str] = {}
    sections = data["nouns"]
    if not isinstance(sections, dict) or set(sections) != {"masculine", "feminine", "both"}:
        raise _fail("nouns: expected exactly the sections masculine, feminine, both")
    for label in ("masculine", "feminine", "both"):
        for word in sections[label]:
            word = _check_word(f"nouns.{label}", word)
            if word in nouns:
                raise _fail(f"nouns: {word!r} is listed under {nouns[word]} and {label}")
            nouns[word] = label
    sex_specific = _words("sex_specific", data["sex_specific"])
    for word in sex_specific:
        if nouns.get(word) not in (M, F):
            raise _fail(f"sex_specific: {word!r} is not a masculine or feminine noun of the lexicon")
    return Lexicon(
        determiners=_features("determiners", data["determiners"]),
        adjectives=_features("prenominal_adjectives", data["prenominal_adjectives"]),
        articulated=_features("articulated_prepositions", data["articulated_prepositions"]),
        prepositions=_words("prepositions", data["prepositions"]),
        conjunctions=_words("conjunctions", data["conjunctions"]),
        nouns=nouns,
        sex_specific=sex_specific,
        not_nouns=_words("not_nouns", data["not_nouns"]),
        english=_words("english", data["english"]),
        version=int(data["version"]),
    )


@cache
def lexicon() -> Lexicon:
    text = resources.files("biaseval").joinpath("data/gender_it.yaml").read_text(encoding="utf-8")
    return parse_lexicon(text)
