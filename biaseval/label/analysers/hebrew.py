"""Hebrew: the gender of an entity from hspell's morphological analyses.

Hebrew nouns for people mostly have distinct masculine and feminine forms (רופא / רופאה, מנהל /
מנהלת, פקיד / פקידה), so the noun's own gender usually decides. A few are written alike for both
in unvocalized text (מורה: מוֹרֶה / מוֹרָה); for those, a verb or adjective that agrees with the
noun can decide ("המורה הלכה": the verb is feminine). Word lists are in
``biaseval/data/entity_gender/he.yaml``.

hspell
------
Every distinct Hebrew word of the corpus goes, one per line, to a single ``hspell -l`` process
per ``analyse`` call (words the same analyser has seen before are not sent again); hspell reads
and writes ISO-8859-8. Niqqud is stripped and gershayim/geresh (״ ׳) read as " and ' first;
tokens with other characters (Latin letters, digits) get no analysis. hspell splits prefixes (ה ו
ב כ ל מ ש and their combinations) itself: "המורה" comes back as ה+מורה with the analyses of
מורה, e.g. ``מורה(ע,ז,יחיד)`` (noun, masculine, singular) and ``מורה(ע,נ,יחיד)``. An analysis
is read as: part of speech (ע noun, פ verb, ת adjective, x other), gender (ז, נ, or both),
number, person, tense (עבר past, הווה present, ...), proper name (פרטי), and a pronoun suffix
(כינוי/..., whose own gender is not the word's). Words hspell does not know get none.

Rules, in order
---------------
1. An empty span -> unknown ``no-alignment`` (spans are checked by ``base.GenderAnalyser.analyse``).
2. A span token whose prefix-less form is listed under ``indefinite`` (מישהו, also as למישהו)
   -> ``neutral`` (``indefinite``); one listed under ``feminine_indefinite`` (מישהי, the feminine
   "someone") -> ``female`` (``noun``): a translation that uses it has said the person is a woman.
3. *Head*: the first span token (not listed under ``not_heads``: את, של, עם, ...) that can name
   a person. Hebrew noun phrases start with their head ("פקידת הקבלה", "עובד הניקיון", "רואה
   החשבון"), and a word joined by a hyphen or maqaf is read by its first part ("עורך-הדין").
   What counts: its noun analyses that are not proper names; failing those, its adjective and
   present-participle analyses (hspell lists many agent nouns only so: מנקה, מעצב, סופר, שף,
   פסיכולוג); failing any analysis at all (a word hspell does not know, mostly transliterations),
   an ending listed under ``unknown_word_endings`` (-ית feminine, -אי masculine). Analyses with a
   pronoun suffix are dropped when the word has others (רופאה is "doctor (f)", and also "her
   doctor" with a masculine noun). No head -> unknown ``not-in-lexicon``. When the span starts
   with the definite form of a word listed under ``construct_complements`` and the word right before
   it (outside the span) has a construct-state analysis, the aligner has linked only the complement
   of a profession's construct phrase ("לסוכנת הבית", "איש המכירות", "פקיד הקבלה" aligned as הבית
   "the house", המכירות "the sales", הקבלה "the reception"): that word joins the span, in front,
   and is the head. (Not any construct before any definite noun: in "עזרת הנהג", the driver's help,
   הנהג is the entity.)
4. A head whose lemma is listed under ``generic`` (אדם) -> ``neutral`` (``noun``).
5. *The head's gender*: a construct-state analysis needs a noun after it, so when the next word
   has no (common) noun analysis, the head's construct analyses are dropped ("השרת נתן" is ה+שרת,
   the janitor (m), not the construct form of השרה (f)). If all remaining analyses have one
   gender, it decides (``noun``).
6. *Agreement*, when both genders occur (מורה, אופה, מנקה, רואה of רואה חשבון): the head must be
   a subject, so it carries no prefix other than ה/ו (not "למורה", "במורה") and no
   ``oblique_before`` word (את, של, עם, ...) stands right before it. Then the first word after the
   head is read that is not one of the entity's span tokens, not a ``skip`` word (לא, כבר, גם,
   ...), and not the definite complement of a head that has a construct reading ("רואה החשבון
   פנתה": החשבון is passed over even when the aligner left it out of the span); a span token on
   the way that can agree counts too (aligners sometimes link the verb to the entity). Of that
   word, the analyses without a prefix or with ה only (an attributive adjective: "המורה החדשה";
   a word with ו or ש belongs to another clause or to a relative clause: "ושאלה", "שהלכה") that
   are a singular adjective, a singular present-tense verb, or a third-person singular past-tense
   verb are read; if there are some and they all have one gender, it decides (``agreement``):
   "המורה הלכה", "המורה אומרת", "המורה החדשה". Nothing before the head is read (a verb before an
   indefinite noun may have it as its object: "ראתה מורה"). The construct forms רואה, מורה are
   masculine in the standard language (the feminine is רואת, מורת), but translations use them
   for women too ("רואה החשבון פנתה"); as with Russian "врач пришла", the agreeing verb decides.
7. Otherwise unknown: ``epicene-no-article`` when the two genders are readings of one lemma
   (מורה), ``conflict`` when they come from different words (הלקוחות: the plural of לקוח and
   of לקוחה).

Not handled: agreement further away or across clauses, pronouns referring back ("היא", "אותה"),
construct chains whose head is not the first span token, transliterations without a telling
ending ("אודיטור"), and whether a noun names a person at all.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import ClassVar, Iterable

from biaseval.errors import ConfigError
from biaseval.label.analysers.base import (
    GenderAnalyser,
    MissingAnalyserPackages,
    Reading,
    WordLists,
)

_ENCODING = "iso-8859-8"
_NIQQUD = re.compile("[\u0591-\u05c7]")
_HEBREW_WORD = re.compile("[\u05d0-\u05ea]+(?:[\"'][\u05d0-\u05ea]+)*[\"']?")
_ERRORS_HEADER = "שגיאות כתיב שנמצאו"
_POS = {"ע": "noun", "פ": "verb", "ת": "adj", "x": "other"}
_GENDERS = {"ז": "m", "נ": "f"}
_LABEL = {"m": "male", "f": "female"}
_SUBJECT_PREFIXES = frozenset({"", "ה", "ו", "וה"})  # a head with another prefix is oblique (ל, ב, מ, ...)
_AGREEING_PREFIXES = frozenset({"", "ה"})


@dataclass(frozen=True, slots=True)
class _Analysis:
    prefix: str  # the prefixes hspell split off ("" for none)
    base: str  # the word without them
    lemma: str
    pos: str  # noun, verb, adj, other
    genders: frozenset[str]  # m, f (both for nouns hspell lists as common gender)
    number: str | None  # sg, pl
    person: str | None
    tense: str | None  # past, present, future, imperative, infinitive
    proper: bool
    construct: bool  # סמיכות: the construct state, followed by its complement ("פקידת הקבלה")
    suffix: bool  # a possessive or object pronoun suffix


@dataclass(frozen=True)
class _Data:
    indefinite: frozenset[str]
    feminine_indefinite: frozenset[str]
    generic: frozenset[str]
    not_heads: frozenset[str]
    oblique_before: frozenset[str]
    skip: frozenset[str]
    feminine_endings: frozenset[str]
    masculine_endings: frozenset[str]
    construct_complements: frozenset[str]


@cache
def _data() -> _Data:
    lists = WordLists("he.yaml")
    raw = lists.raw

    def words(key: str) -> frozenset[str]:
        return frozenset(lists.words(key, _HEBREW_WORD.fullmatch, "a list of Hebrew words"))

    endings = raw.get("unknown_word_endings")
    if not isinstance(endings, dict) or set(endings) != {"female", "male"}:
        raise ConfigError("biaseval/data/entity_gender/he.yaml: unknown_word_endings: expected female: and male: lists")
    lists.raw = {**raw, "feminine_endings": endings["female"], "masculine_endings": endings["male"]}
    return _Data(*(words(k) for k in ("indefinite", "feminine_indefinite", "generic", "not_heads",
                                      "oblique_before", "skip", "feminine_endings", "masculine_endings",
                                      "construct_complements")))


def normalize(token: str) -> str:
    """The form hspell is asked about: no niqqud, ASCII quote marks for gershayim and geresh."""
    return _NIQQUD.sub("", token).replace("\u05f4", '"').replace("\u05f3", "'")


@lru_cache(maxsize=1 << 16)  # a corpus asks for the same few thousand words again and again
def _key(token: str) -> str:
    """The word looked up for a token: a word joined by a hyphen or maqaf is read by its first part,
    the head of a Hebrew compound ("עורך-הדין" -> עורך)."""
    return re.split("[-\u05be]", normalize(token), maxsplit=1)[0]


def hspell_path() -> str:
    path = shutil.which("hspell")
    if path is None:
        raise MissingAnalyserPackages(["hspell"], "the he gender analyser")
    return path


def run_hspell(words: Iterable[str], program: str | None = None) -> dict[str, list[_Analysis]]:
    """hspell's analyses of each word (normalized Hebrew words only), from one ``hspell -l`` run."""
    words = sorted({w for w in words if _HEBREW_WORD.fullmatch(w)})
    found: dict[str, list[_Analysis]] = {w: [] for w in words}
    if not words:
        return found
    text = "\n".join(words) + "\n"
    try:
        done = subprocess.run([program or hspell_path(), "-l"], input=text.encode(_ENCODING),
                              capture_output=True, timeout=300)
    except FileNotFoundError:
        raise MissingAnalyserPackages(["hspell"], "the he gender analyser") from None
    if done.returncode != 0:
        raise RuntimeError(f"hspell -l failed ({done.returncode}): {done.stderr.decode(_ENCODING, 'replace')[:500]}")
    current: tuple[str, str] | None = None
    for line in done.stdout.decode(_ENCODING, "replace").split("\n"):
        if line.startswith("\t"):
            if current is not None and current[0] + current[1] in found:
                analysis = _parse_analysis(line.strip(), *current)
                if analysis is not None:
                    found[current[0] + current[1]].append(analysis)
        elif line.startswith(_ERRORS_HEADER):
            break  # the misspelled words follow: they have no analyses
        elif ": " in line:
            combined = line.split(": ", 1)[1].strip()
            prefix, plus, base = combined.partition("+")
            current = (prefix, base) if plus else ("", combined)
    return found


_ANALYSIS = re.compile(r"^(.*)\(([^()]*)\)$")


def _parse_analysis(text: str, prefix: str, base: str) -> _Analysis | None:
    match = _ANALYSIS.match(text)
    if match is None:
        return None
    lemma, tags = match.group(1), match.group(2).split(",")
    main = tags
    suffix = False
    for i, tag in enumerate(tags):
        if tag.startswith("כינוי"):
            main, suffix = tags[:i], True
            break
    number = "sg" if "יחיד" in main else "pl" if ("רבים" in main or "זוגי" in main) else None
    person = next((t for t in main if t in ("1", "2", "3")), None)
    tense = next(({"עבר": "past", "הווה": "present", "עתיד": "future", "ציווי": "imperative",
                   "מקור": "infinitive"}[t] for t in main if t in ("עבר", "הווה", "עתיד", "ציווי", "מקור")), None)
    return _Analysis(
        prefix=prefix, base=base, lemma=lemma,
        pos=_POS.get(main[0], "other") if main else "other",
        genders=frozenset(_GENDERS[t] for t in main if t in _GENDERS),
        number=number, person=person, tense=tense,
        proper="פרטי" in main,
        construct="סמיכות" in main,
        suffix=suffix,
    )


class Hebrew(GenderAnalyser):
    """Hebrew (hspell's morphological analyses)."""

    lang: ClassVar[str] = "he"
    version: ClassVar[int] = 2  # 2: the construct head before an aligned complement (rule 3)

    def __init__(self) -> None:
        self._program = hspell_path()
        self._data = _data()
        self._analyses: dict[str, list[_Analysis]] = {}

    def read_aligned(self, sentences: list[list[str]], spans: list[list[int]]) -> list[Reading]:
        needed = {_key(t) for t in {t for tokens in sentences for t in tokens}}
        needed -= self._analyses.keys()
        if needed:
            self._analyses.update(run_hspell(needed, self._program))
        return [self._read(tokens, span) for tokens, span in zip(sentences, spans)]

    def _of(self, token: str) -> list[_Analysis]:
        return self._analyses.get(_key(token), [])

    def _read(self, tokens: list[str], span: list[int]) -> Reading:
        data = self._data
        for i in span:
            bases = {normalize(tokens[i])} | {a.base for a in self._of(tokens[i])}
            if bases & data.indefinite:
                return Reading("neutral", "indefinite", tokens[i])
            if bases & data.feminine_indefinite:
                return Reading("female", "noun", tokens[i])
        head = self._head(tokens, self._with_construct_head(tokens, span))
        if head is None:
            return Reading("unknown", "not-in-lexicon", " ".join(tokens[i] for i in span))
        index, nouns = head
        word = tokens[index]
        if any(a.construct for a in nouns) and not self._complement_follows(tokens, index, any_noun=True):
            # a construct form needs a noun after it: "השרת נתן" is ה+שרת (m), not the construct
            # of השרה (f)
            nouns = [a for a in nouns if not a.construct] or nouns
        if any(a.lemma in data.generic for a in nouns):
            return Reading("neutral", "noun", word)
        genders = frozenset().union(*(a.genders for a in nouns))
        if len(genders) == 1:
            return Reading(_LABEL[next(iter(genders))], "noun", word)
        if not genders:
            return Reading("unknown", "not-in-lexicon", word)
        agreeing = self._agreement(tokens, span, index, nouns)
        if agreeing is not None:
            gender, k = agreeing
            return Reading(_LABEL[gender], "agreement", f"{word} {tokens[k]}")
        one_lemma = len({a.lemma for a in nouns}) == 1 or any(len(a.genders) == 2 for a in nouns)
        return Reading("unknown", "epicene-no-article" if one_lemma else "conflict", word)

    def _with_construct_head(self, tokens: list[str], span: list[int]) -> list[int]:
        """The span, with the word right before it in front when the span starts with a profession's
        construct complement (ה + a ``construct_complements`` word) and that word has a construct-state
        analysis (rule 3: only the complement was aligned)."""
        first = span[0]
        if first == 0 or not any(a.prefix == "ה" and a.base in self._data.construct_complements
                                 for a in self._of(tokens[first])):
            return span
        return [first - 1, *span] if any(a.construct for a in self._of(tokens[first - 1])) else span

    def _head(self, tokens: list[str], span: list[int]) -> tuple[int, list[_Analysis]] | None:
        """The first span token that can be a person noun: (index, the analyses that say so)."""
        for i in span:
            if normalize(tokens[i]) in self._data.not_heads:
                continue
            analyses = self._of(tokens[i])
            nouns = [a for a in analyses if a.pos == "noun" and not a.proper]
            if not nouns:
                # hspell lists many agent nouns only as present participles (מנקה, מעצב, סופר,
                # רואה of רואה חשבון) or adjectives (פסיכולוג, שף, כימאי)
                nouns = [a for a in analyses if a.pos == "adj" or (a.pos == "verb" and a.tense == "present")]
            nouns = [a for a in nouns if not a.suffix] or nouns
            if nouns:
                return i, nouns
            if not analyses:
                guess = self._guess(tokens[i])
                if guess:
                    return i, guess
        return None

    def _guess(self, token: str) -> list[_Analysis]:
        """For a word hspell does not know: the gender its ending shows (``unknown_word_endings``)."""
        word = normalize(token)
        if not _HEBREW_WORD.fullmatch(word):
            return []
        for gender, endings in (("f", self._data.feminine_endings), ("m", self._data.masculine_endings)):
            if any(word.endswith(e) and len(word) > len(e) + 1 for e in endings):
                return [_Analysis("", word, word, "noun", frozenset({gender}), None, None, None,
                                  False, False, False)]
        return []

    def _agreement(self, tokens: list[str], span: list[int], head: int,
                   nouns: list[_Analysis]) -> tuple[str, int] | None:
        """(gender, index) of the word after the head that agrees with it, or None."""
        data = self._data
        if not any(a.prefix in _SUBJECT_PREFIXES for a in nouns):
            return None  # למורה, במורה: the head is a complement
        if head > 0 and normalize(tokens[head - 1]) in data.oblique_before:
            return None  # את המורה: the head is an object
        members = set(span)
        if any(a.construct for a in nouns) and self._complement_follows(tokens, head):
            members.add(head + 1)  # "רואה החשבון פנתה": the definite complement is part of the entity
        for k in range(head + 1, len(tokens)):
            gender = self._agreeing(tokens[k])
            if gender:
                return gender, k
            if k not in members and normalize(tokens[k]) not in data.skip:
                return None
        return None

    def _complement_follows(self, tokens: list[str], head: int, any_noun: bool = False) -> bool:
        """Whether the word after the head can be a construct complement: a definite noun (ה+noun;
        with ``any_noun``, any noun)."""
        if head + 1 >= len(tokens):
            return False
        return any(a.pos == "noun" and not a.proper and (any_noun or a.prefix == "ה")
                   for a in self._of(tokens[head + 1]))

    def _agreeing(self, token: str) -> str | None:
        """The gender of a word that can agree with a subject noun, when all its readings that can
        do so (without a prefix or with ה only) have one gender; else None."""
        genders = set()
        for a in self._of(token):
            if a.prefix not in _AGREEING_PREFIXES or a.number != "sg":
                continue
            finite = a.tense == "present" or (a.tense == "past" and a.person == "3")
            if a.pos == "adj" or (a.pos == "verb" and finite):
                genders |= a.genders
        return next(iter(genders)) if len(genders) == 1 else None
