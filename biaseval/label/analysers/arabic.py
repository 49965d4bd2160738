"""Arabic: the gender of an entity from the morphology of its head noun, with the Arramooz lexicon.

Arabic person nouns mark the feminine with tāʾ marbūṭa (ة): مدير / مديرة, ممرض / ممرضة, كاتب /
كاتبة (the feminine of an agent noun), ميكانيكي / ميكانيكية. The ending alone is not enough: some
nouns in ة are masculine (علامة, خليفة) and many broken plurals of masculine nouns end in ة
(أساتذة, صيادلة, كتبة, قضاة), while a few feminine nouns have no ة (أم, بنت). So the ending is
read against a lexicon.

The lexicon
-----------
Arramooz (PyPI ``arramooz-pysqlite``: an SQLite dictionary of about 30,000 Arabic nouns and 14,000
verbs, read offline from the installed package) gives, per unvocalized noun, its gender (مذكر,
مؤنث), its number (مفرد singular, جمع تكسير broken plural) and its broken plurals; for verbs, the
past-tense third person masculine singular form (قال, أراد). Words are compared without diacritics
and tatweel; a word not found is looked up again with its hamzated alif (أ إ آ) written ا, as MT
output often drops the hamza. ``biaseval/data/entity_gender/ar.yaml`` lists what the lexicon gets
wrong or lacks, with reasons.

Clitics
-------
A token may carry the conjunctions و/ف, a preposition ب/ل/ك, the article ال (ل + ال is written
لل), and at the end a pronoun (ه, ها, هم, ...; before it ة is written ت: مديرته). The *stem* of a
token is the first of its readings with those stripped, in that order, that the lexicon knows;
failing any, the token with its prefixes stripped (for the ending rules). A final tanwīn alif
(شخصا) is dropped too.

Rules, for one row (span non-empty, checked by ``base.GenderAnalyser.analyse``)
--------------------------------------------------------------------------------

1. Indefinite: a span token whose stem is listed under ``indefinite`` (أحدهم, أحد), or شخص followed
   by ما (either word aligned) -> ``neutral`` (``indefinite``).
2. Head: among the span tokens not listed under ``not_heads`` (prepositions, pronouns, ...) with
   Arabic letters, the first of the highest rank: a word that can name a person (a listed word, a
   lexicon noun that is not only a verbal noun, a broken plural, the feminine in ة of a masculine
   noun the lexicon lacks: مديرة); then a verbal noun in ة that is also the feminine of an agent
   noun (مصاحبة "accompanying" or "attendant (f)"); then a word the lexicon does not know; then a
   bare word (no article, preposition or suffix) that is both such a noun and a past-tense verb
   (جادل "argued", to Arramooz also a noun; ساعد "helped" or "forearm"; عامل "treated" or
   "worker") where a clause starts (the sentence's first word, after punctuation, or with the
   conjunction و/ف), the place of the verb in Arabic's verb-subject order; then the rest (verbs, a
   past-tense verb with the feminine ت, verbal nouns). Aligners often link the verb before the
   subject too ("قام النجار": قام is passed over; "جادل المطور": the noun is read, not جادل;
   "قام عامل البناء": عامل, not at a clause's start, is the noun "worker"). Arabic noun phrases
   start with their head: "موظفة الاستقبال" (receptionist), "مدبرة المنزل" (housekeeper), "الطبيب
   النفسي" (psychologist); when the chosen
   token cannot name a person itself and is a definite noun, and the word right before it, outside
   the span, is an indefinite noun that can (a construct head), that word is the head ("لموظفة
   الاستقبال" aligned to الاستقبال alone). No candidate -> unknown ``not-in-lexicon``.
3. A head that is a verb or a verbal noun only (الطبخ "cooking" for "the cook", النظافة
   "cleanliness" for "the cleaner") -> unknown ``not-in-lexicon``: the translation has no person
   there to read.
4. The head's stem listed under ``generic`` (شخص, إنسان) -> ``neutral`` (``noun``); under
   ``female`` / ``male`` (the lexicon's gaps and errors) -> that gender (``noun``).
5. *Agreement*, for a stem listed under ``epicene`` (one form for both sexes: شيف, عمدة) or a word
   without ة the lexicon does not know (a loanword): the first of these that exists decides
   (``agreement``): the past-tense verb right before the head when the head is its subject (no
   preposition on it and no ``not_heads`` word before it: "قالت الشيف"), a feminine adjective right
   after the head with the same definiteness (ة on an adjective the lexicon knows: "الشيف الجديدة";
   a masculine adjective has no mark that tells it from a following noun, so it is not read), or a
   past-tense verb right after it ("الشيف قالت"). A verb is feminine when it is a lexicon verb plus
   ت (قالت), masculine when it is a lexicon verb as is. No agreement for a listed epicene noun ->
   unknown ``epicene-no-article``.
6. A broken plural (the stem is a listed broken plural of a masculine noun, or a lexicon entry
   marked as one) -> ``male`` (``noun``): a masculine plural, read as male as in the other
   languages.
7. A stem ending in ة: ``male`` when every lexicon entry of it is a masculine singular (علامة);
   ``female`` otherwise (``noun``): the feminine of a known masculine noun or adjective (مديرة,
   ممرضة, ميكانيكية), a feminine noun of the lexicon, or a word the lexicon does not know (a
   feminine loan form: سكرتيرة).
8. Sound plurals: ات after a known masculine singular (الممرضات) -> ``female``; ون/ين after one
   (المحاسبون) -> ``male`` (``noun``).
9. A word without ة the lexicon does not know, made of three or more Arabic letters -> ``male``
   (``noun``): Arabic's unmarked, masculine form (السباك: the lexicon lacks سباك); with other
   characters (a Latin word left untranslated) -> unknown ``not-in-lexicon``.
10. Any other stem the lexicon knows as masculine (مدير, طبيب, مزارع) -> ``male`` (``noun``): the
    masculine form is what names a man when a feminine form exists.

Not handled: present-tense verb agreement (تقول / يقول), pronouns referring back (لأنها), and a span
that covers two noun phrases ("فحصت الممرضة النجار", both aligned to "carpenter"): the first is
read. A conjugated verb the lexicon does not know (يصاحب) can be taken for an unknown masculine
noun (rule 9).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import ClassVar

from biaseval.errors import ConfigError
from biaseval.label.analysers.base import (
    GenderAnalyser,
    MissingAnalyser,
    Reading,
    WordLists,
)

_HINT = "pip install arramooz-pysqlite (or 'biaseval[winomt]')"
_DIACRITICS = re.compile("[\u064b-\u0652\u0670\u0640]")  # harakat, tanwin, shadda, sukun, dagger alif, tatweel
_HAMZA_ALIF = str.maketrans("أإآ", "ااا")
_ARABIC = re.compile("[\u0621-\u064a]+")
_CONJUNCTIONS = ("و", "ف")
_PREPOSITIONS = ("ب", "ل", "ك")
_SUFFIXES = ("هما", "هم", "هن", "ها", "كم", "ه", "ك", "ي")
_MASCULINE, _FEMININE, _SINGULAR, _BROKEN = "مذكر", "مؤنث", "مفرد", "جمع تكسير"
_LABEL = {"m": "male", "f": "female"}
_AGENT_KINDS = ("فاعل", "مفعول", "مبالغة", "صفة", "منسوب")  # Arramooz word types of agent-like nouns
# how likely a token is to be the entity's head noun (rule 2)
_PERSON, _DERIVED, _UNKNOWN, _VERB_OR_NOUN, _OTHER = 4, 3, 2, 1, 0


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

    def noun(self, word: str) -> tuple[_Entry, ...]:
        return self.nouns.get(word) or self.nouns.get(word.translate(_HAMZA_ALIF), ())

    def knows(self, word: str) -> bool:
        return bool(self.noun(word)) or self.is_broken_plural(word) or self.verb(word)

    def is_broken_plural(self, word: str) -> bool:
        return word in self.broken_plurals or word.translate(_HAMZA_ALIF) in self.broken_plurals

    def verb(self, word: str) -> bool:
        return word in self.verbs or word.translate(_HAMZA_ALIF) in self.verbs

    def masculine_singular(self, word: str) -> bool:
        return any(e.gender == "m" and not e.broken_plural for e in self.noun(word))

    def masculine_agent(self, word: str) -> bool:
        return any(e.gender == "m" and not e.broken_plural and e.agent for e in self.noun(word))


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
    """Arramooz's nouns and past-tense verbs, read once per process (read-only)."""
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
                broken.update(p for p in (normalize(p).strip() for p in plurals.split(";"))
                              if _ARABIC.fullmatch(p))
        verbs = frozenset(normalize(v) for (v,) in db.execute("select unvocalized from verbs") if v)
    finally:
        db.close()
    return Lexicon({w: tuple(e) for w, e in nouns.items()}, frozenset(broken), verbs)


@dataclass(frozen=True)
class _Data:
    indefinite: frozenset[str]
    generic: frozenset[str]
    female: frozenset[str]
    male: frozenset[str]
    epicene: frozenset[str]
    not_heads: frozenset[str]


@cache
def _data() -> _Data:
    lists = WordLists("ar.yaml")
    where = lists.where

    def words(key: str) -> frozenset[str]:
        return frozenset(lists.words(key, _ARABIC.fullmatch, "a list of Arabic words without diacritics"))

    data = _Data(*(words(k) for k in ("indefinite", "generic", "female", "male", "epicene", "not_heads")))
    if data.female & data.male:
        raise ConfigError(f"{where}: listed as female and as male: {', '.join(sorted(data.female & data.male))}")
    return data


def _without_prefixes(word: str) -> list[tuple[str, bool]]:
    """(form, whether a preposition was stripped) for ``word`` with its proclitics stripped step by
    step: the word itself first."""
    forms = [(word, False)]
    rest = word
    if rest[:1] in _CONJUNCTIONS and len(rest) > 3:
        rest = rest[1:]
        forms.append((rest, False))
    preposition = False
    if rest.startswith("لل") and len(rest) > 3:  # ل + ال
        return forms + [(rest[2:], True)]
    if rest[:1] in _PREPOSITIONS and len(rest) > 3:
        rest, preposition = rest[1:], True
        forms.append((rest, True))
    if rest.startswith("ال") and len(rest) > 3:
        forms.append((rest[2:], preposition))
    return forms


class Arabic(GenderAnalyser):
    """Arabic (Arramooz lexicon and rules in the module docstring)."""

    lang: ClassVar[str] = "ar"
    version: ClassVar[int] = 3  # 2: plurals of women listed as female (ar.yaml); 3: a past-tense verb starting a clause is not the head noun

    def __init__(self) -> None:
        self.lexicon = lexicon(arramooz_path())
        self.data = _data()
        data = self.data
        self._listed = data.indefinite | data.generic | data.female | data.male | data.epicene
        self._stems: dict[str, tuple[str, bool]] = {}  # word -> stem (and rank), worked out once per word
        self._ranks: dict[str, int] = {}

    def read_aligned(self, sentences: list[list[str]], spans: list[list[int]]) -> list[Reading]:
        normalized: dict[str, str] = {}
        return [self._read([normalized[t] if t in normalized else normalized.setdefault(t, normalize(t))
                            for t in tokens], tokens, span) for tokens, span in zip(sentences, spans)]

    def stem(self, word: str) -> tuple[str, bool]:
        """(stem, whether it carried a preposition): see "Clitics" in the module docstring."""
        found = self._stems.get(word)
        if found is None:
            found = self._stems[word] = self._find_stem(word)
        return found

    def _find_stem(self, word: str) -> tuple[str, bool]:
        forms = _without_prefixes(word)
        lex, listed = self.lexicon, self._listed

        def known(candidate: str | None) -> bool:
            return bool(candidate) and (candidate in listed or lex.knows(candidate) or (
                candidate.endswith("ة") and lex.masculine_singular(candidate[:-1])))

        for form, prep in forms:
            for candidate in (form, form[:-1] if form.endswith("ا") and len(form) > 3 else None):
                if known(candidate):
                    return candidate, prep
        for form, prep in forms:
            for suffix in _SUFFIXES:
                if form.endswith(suffix) and len(form) - len(suffix) >= 3:
                    base = form[:-len(suffix)]
                    for candidate in (base[:-1] + "ة" if base.endswith("ت") else None, base):
                        if known(candidate):
                            return candidate, prep
        return forms[-1]

    def _read(self, words: list[str], tokens: list[str], span: list[int]) -> Reading:
        data, lex = self.data, self.lexicon
        for i in span:
            stem = self.stem(words[i])[0]
            if stem in data.indefinite or (stem == "شخص" and i + 1 < len(words) and words[i + 1] == "ما"):
                return Reading("neutral", "indefinite", tokens[i])
            if words[i] == "ما" and i > 0 and self.stem(words[i - 1])[0] == "شخص":  # only ما aligned
                return Reading("neutral", "indefinite", f"{tokens[i - 1]} {tokens[i]}")
        head = self._head(words, span)
        if head is None:
            return Reading("unknown", "not-in-lexicon", " ".join(tokens[i] for i in span))
        stem, preposition = self.stem(words[head])
        word = tokens[head]
        if self._rank(words[head]) == _OTHER:  # a verb or a verbal noun (الطبخ "cooking"): no person
            return Reading("unknown", "not-in-lexicon", word)
        if stem in data.generic:
            return Reading("neutral", "noun", word)
        for gender, listed in (("f", data.female), ("m", data.male)):
            if stem in listed:
                return Reading(_LABEL[gender], "noun", word)
        if stem in data.epicene or not lex.knows(stem) and not stem.endswith("ة"):
            agreeing = self._agreement(words, head, preposition)
            if agreeing is not None:
                gender, k = agreeing
                return Reading(_LABEL[gender], "agreement", " ".join(tokens[j] for j in sorted((head, k))))
            if stem in data.epicene:
                return Reading("unknown", "epicene-no-article", word)
        entries = lex.noun(stem)
        if lex.is_broken_plural(stem) or (entries and all(e.broken_plural for e in entries)):
            return Reading("male", "noun", word)
        if stem.endswith("ة"):
            masculine = entries and all(e.gender == "m" and not e.broken_plural for e in entries)
            return Reading("male" if masculine else "female", "noun", word)
        if len(stem) > 4 and stem.endswith("ات") and lex.masculine_singular(stem[:-2]):
            return Reading("female", "noun", word)
        if len(stem) > 4 and stem.endswith(("ون", "ين")) and lex.masculine_singular(stem[:-2]):
            return Reading("male", "noun", word)
        if not lex.knows(stem):
            if len(stem) >= 3 and _ARABIC.fullmatch(stem):
                return Reading("male", "noun", word)  # no ة: Arabic's unmarked, masculine form
            return Reading("unknown", "not-in-lexicon", word)
        if any(e.gender == "m" for e in entries):
            return Reading("male", "noun", word)
        return Reading("unknown", "not-in-lexicon", word)

    def _rank(self, word: str) -> int:
        found = self._ranks.get(word)
        if found is None:
            found = self._ranks[word] = self._find_rank(word)
        return found

    def _find_rank(self, word: str) -> int:
        """How likely the token is to name a person (rule 2): _PERSON (a listed word, a noun that is
        not only a verbal noun, a broken plural, the feminine in ة of a masculine noun the lexicon
        lacks: مديرة), _DERIVED (a verbal noun in ة that is also the feminine of an agent noun:
        مصاحبة "accompanying" / "attendant (f)"), _UNKNOWN (the lexicon does not know it),
        _VERB_OR_NOUN (a bare token that is such a noun and also a past-tense verb: جادل), _OTHER (a
        verb or a verbal noun)."""
        stem, _ = self.stem(word)
        lex = self.lexicon
        if stem in self._listed:
            return _PERSON
        entries = lex.noun(stem)
        # the token itself (a conjunction aside) is a past-tense verb: "جادل", "وحذر", "ساعدت"
        verb = stem in (word, word[1:]) and self._verb_gender(word) is not None
        if any(not e.masdar for e in entries) or lex.is_broken_plural(stem):
            return _VERB_OR_NOUN if verb else _PERSON
        if stem.endswith("ة") and lex.masculine_singular(stem[:-1]):
            if not entries:
                return _PERSON
            if lex.masculine_agent(stem[:-1]):
                return _DERIVED
        return _OTHER if lex.knows(stem) or verb else _UNKNOWN

    def _head(self, words: list[str], span: list[int]) -> int | None:
        """Rule 2: the span's first person-like token (else its first unknown word, else its first
        word); a definite noun whose construct head stands right before it, outside the span, gives
        way to that head ("لموظفة الاستقبال" aligned to الاستقبال only)."""
        candidates = [i for i in span if words[i] not in self.data.not_heads and _ARABIC.search(words[i])]
        if not candidates:
            return None
        scores = {i: self._rank(words[i]) for i in candidates}
        for i in candidates:  # a noun that is also a verb is taken for the verb only where a clause starts
            if scores[i] == _VERB_OR_NOUN and not (i == 0 or self.stem(words[i])[0] != words[i]
                                                   or not _ARABIC.search(words[i - 1])):
                scores[i] = _PERSON
        head = max(candidates, key=lambda i: (scores[i], -i))
        before = head - 1
        if (scores[head] < _DERIVED and before >= 0 and before not in span and self.stem(words[head])[0] != words[head]
                and "ال" in words[head][:4] and words[before] not in self.data.not_heads
                and "ال" not in words[before][:4] and self._verb_gender(words[before]) is None
                and self._rank(words[before]) == _PERSON):
            return before
        return head

    def _verb_gender(self, word: str) -> str | None:
        form = word[1:] if word[:1] in _CONJUNCTIONS and len(word) > 3 else word
        for candidate in (form, word):
            if self.lexicon.verb(candidate):
                return "m"
            if candidate.endswith("ت") and self.lexicon.verb(candidate[:-1]):
                return "f"
        return None

    def _agreement(self, words: list[str], head: int, preposition: bool) -> tuple[str, int] | None:
        """(gender, index) of the word that agrees with the head (rule 5)."""
        before = head - 1
        if not preposition and before >= 0 and words[before] not in self.data.not_heads:
            if gender := self._verb_gender(words[before]):
                return gender, before
        after = head + 1
        if after < len(words):
            definite = "ال" in words[head][:4]
            if ("ال" in words[after][:4]) == definite and words[after].endswith("ة"):
                base = self.stem(words[after])[0]
                if base.endswith("ة") and self.lexicon.masculine_singular(base[:-1]):
                    return "f", after
            if gender := self._verb_gender(words[after]):
                return gender, after
        return None


__all__ = ["Arabic", "Lexicon", "lexicon", "normalize"]
