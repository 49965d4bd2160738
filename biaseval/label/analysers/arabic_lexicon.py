"""The Arramooz lexicon and the word lists of ``ar.yaml``, as the Arabic analyser (``arabic.py``) reads them.

Arramooz (PyPI ``arramooz-pysqlite``: an SQLite dictionary of about 30,000 Arabic nouns and 14,000
verbs, read offline from the installed package) gives, per unvocalized noun, its gender (مذكر,
مؤنث), its number (مفرد singular, جمع تكسير broken plural), its broken plurals and its word type
(verbal noun, agent noun, adjective, ...); for verbs, the past-tense third person masculine singular
form (قال, أراد) and the vowel of its imperfect, from which ``arabic_forms.imperfect_stems`` builds
the imperfect's stems. Words are compared without diacritics and tatweel; a word not found is looked
up again with its hamzated alif (أ إ آ) written ا, as MT output often drops the hamza.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path

from biaseval.errors import ConfigError
from biaseval.label.analysers.arabic_forms import imperfect_stems
from biaseval.label.analysers.base import MissingAnalyser, WordLists

_HINT = "pip install arramooz-pysqlite (or 'biaseval[winomt]')"
_DIACRITICS = re.compile("[\u064b-\u0652\u0670\u0640]")  # harakat, tanwin, shadda, sukun, dagger alif, tatweel
HAMZA_ALIF = str.maketrans("أإآ", "ااا")
ARABIC = re.compile("[\u0621-\u064a]+")
_MASCULINE, _FEMININE, _SINGULAR, _BROKEN = "مذكر", "مؤنث", "مفرد", "جمع تكسير"
_AGENT_KINDS = ("فاعل", "مفعول", "مبالغة", "صفة", "منسوب")  # Arramooz word types of agent-like nouns


def normalize(token: str) -> str:
    """A token without diacritics and tatweel."""
    return _DIACRITICS.sub("", token)


@dataclass(frozen=True)
class _Entry:
    gender: str  # m, f, or "" (not given)
    broken_plural: bool
    masdar: bool  # a verbal noun (زيارة "visit"): never names a person
    agent: bool  # an agent or patient noun, or an adjective (مصاحب, مدير, مسؤول, ميكانيكي)


@dataclass(frozen=True)
class Lexicon:
    nouns: dict[str, tuple[_Entry, ...]]  # unvocalized noun -> its entries
    broken_plurals: frozenset[str]  # broken plurals of masculine nouns
    verbs: frozenset[str]  # past tense, 3rd person masculine singular
    imperfect: frozenset[str] = frozenset()  # the verbs' imperfect stems (arabic_forms.imperfect_stems)

    def noun(self, word: str) -> tuple[_Entry, ...]:
        return self.nouns.get(word) or self.nouns.get(word.translate(HAMZA_ALIF), ())

    def knows(self, word: str) -> bool:
        return bool(self.noun(word)) or self.is_broken_plural(word) or self.verb(word)

    def is_broken_plural(self, word: str) -> bool:
        return word in self.broken_plurals or word.translate(HAMZA_ALIF) in self.broken_plurals

    def verb(self, word: str) -> bool:
        return word in self.verbs or word.translate(HAMZA_ALIF) in self.verbs

    def masculine_singular(self, word: str) -> bool:
        return any(e.gender == "m" and not e.broken_plural for e in self.noun(word))

    def masculine_agent(self, word: str) -> bool:
        return any(e.gender == "m" and not e.broken_plural and e.agent for e in self.noun(word))

    def agent(self, word: str) -> bool:
        """An agent or patient noun, or an adjective, in one of its singular entries (مدير, خباز; also
        منصب and مكتب, which unvocalized are also participles, and are read as such); for a word the
        lexicon lacks, the feminine in ة or the sound plural of one (مديرة, ممرضات). A word with
        entries of its own is read by them alone: دراسة is "study", not the feminine of دراس."""
        entries = self.noun(word)
        if entries:
            return any(e.agent and not e.broken_plural for e in entries)
        return (word.endswith("ة") and self.agent(word[:-1])
                or len(word) > 4 and word.endswith(("ات", "ون", "ين")) and self.agent(word[:-2]))


def arramooz_path() -> Path:
    spec = find_spec("arramooz")
    if spec is None or not spec.submodule_search_locations:
        raise MissingAnalyser(f"the ar gender analyser needs the Arramooz lexicon: {_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "arabicdictionary.sqlite"
    if not path.is_file():
        raise MissingAnalyser(f"the ar gender analyser needs {path} (Arramooz lexicon): {_HINT}")
    return path


@cache
def lexicon(path: Path | None = None) -> Lexicon:
    """Arramooz's nouns and past-tense verbs (with their imperfect stems), read once per process
    (read-only)."""
    db = sqlite3.connect(f"file:{path or arramooz_path()}?mode=ro", uri=True)
    try:
        nouns: dict[str, list[_Entry]] = {}
        broken: set[str] = set()
        for word, gender, number, plurals, kind in db.execute(
                "select unvocalized, gender, number, broken_plural, wordtype from nouns"):
            word = normalize(word or "")
            g = "m" if gender == _MASCULINE else "f" if gender == _FEMININE else ""
            kind = kind or ""
            nouns.setdefault(word, []).append(_Entry(g, number == _BROKEN, "مصدر" in kind,
                                                     any(k in kind for k in _AGENT_KINDS)))
            if g == "m" and number == _SINGULAR and plurals:
                broken.update(p for p in (normalize(p).strip() for p in plurals.split(";")) if ARABIC.fullmatch(p))
        verbs, imperfect = set(), set()
        for past, vowel, triliteral in db.execute("select unvocalized, future_type, triliteral from verbs"):
            if past:
                verbs.add(normalize(past))
                imperfect |= imperfect_stems(normalize(past), vowel, bool(triliteral))
    finally:
        db.close()
    return Lexicon({w: tuple(e) for w, e in nouns.items()}, frozenset(broken), frozenset(verbs),
                   frozenset(imperfect | {s.translate(HAMZA_ALIF) for s in imperfect}))


@dataclass(frozen=True)
class WordData:
    """The word lists of ``ar.yaml`` (what each is for: that file's comments)."""

    indefinite: frozenset[str]
    generic: frozenset[str]
    female: frozenset[str]
    male: frozenset[str]
    epicene: frozenset[str]
    not_heads: frozenset[str]
    persons: frozenset[str]  # nouns that name people, which the lexicon does not class as agents
    pronoun_hosts: frozenset[str]  # particles that carry a bound pronoun (لكن: لكنها)
    before_imperfect: frozenset[str]  # particles and auxiliaries that an imperfect follows (لم تكن)
    verbs: dict[str, tuple[str, ...]]  # past-tense verbs the lexicon lacks -> their imperfect stems
    verb_forms: dict[str, str]  # conjugated forms the rules do not make -> their subject's gender (كن: f)


@cache
def word_data() -> WordData:
    lists = WordLists("ar.yaml")
    where = lists.where

    def words(key: str) -> frozenset[str]:
        return frozenset(lists.words(key, ARABIC.fullmatch, "a list of Arabic words without diacritics"))

    verbs = lists.raw.get("verbs")
    if not isinstance(verbs, dict) or not all(
            isinstance(k, str) and ARABIC.fullmatch(k) and isinstance(v, list) and v
            and all(isinstance(x, str) and ARABIC.fullmatch(x) for x in v) for k, v in verbs.items()):
        raise ConfigError(f"{where}: verbs: expected a mapping of Arabic past-tense verbs to lists of imperfect stems")
    forms = lists.raw.get("verb_forms")
    if not isinstance(forms, dict) or not all(isinstance(k, str) and ARABIC.fullmatch(k) and v in ("m", "f")
                                              for k, v in forms.items()):
        raise ConfigError(f"{where}: verb_forms: expected a mapping of Arabic words to m or f")
    data = WordData(*(words(k) for k in ("indefinite", "generic", "female", "male", "epicene", "not_heads",
                                         "persons", "pronoun_hosts", "before_imperfect")),
                    {k: tuple(v) for k, v in verbs.items()}, dict(forms))
    if data.female & data.male:
        raise ConfigError(f"{where}: listed as female and as male: {', '.join(sorted(data.female & data.male))}")
    return data


__all__ = ["ARABIC", "HAMZA_ALIF", "Lexicon", "WordData", "arramooz_path", "lexicon", "normalize", "word_data"]
