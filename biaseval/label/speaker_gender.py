"""GEST: the gender a translation gives its speaker, read from the words that agree with a first-person
singular subject (detector ``gest-speaker``; docs/gest.md).

A language's morphology (``speaker_forms``: pymorphy3 for ru and uk, Morfeusz 2 for pl, Apertium's
analysers for hr, sr, sl and be, rules for cs and sk) says of each word whether it is

- a *first-person marker*: the pronoun "I" in the nominative (я, ja, jaz, já), a first-person singular
  auxiliary or copula (cs jsem, bych; sk som; hbs sam, bih; sl sem; pl -(e)m, jestem), or any verb in
  the first person singular (чувствую);
- a *cue*: a singular form of one gender that agrees with its subject: a past tense or l-participle
  (был/была, dělal/dělala, zrobił-em/zrobił-am, bio/bila), a short adjective or participle (рад/рада,
  готов/готова), "alone"/"myself" (сам/сама, sám/sama, один/одна), or a long adjective in the
  nominative standing as a predicate (within ``WINDOW`` words after a marker or a form of "to be",
  not before a noun), or, in Russian and Ukrainian, in the instrumental as a predicate: right after a
  link verb or "себя" (быть, стать, чувствовать себя: "хочу быть красивой") or, where it can be nothing
  but an instrumental, after a verb in the first person (финиширую первым), adverbs between them
  allowed, and not before a noun;
- a *third-person marker*: a third-person pronoun in the nominative or a third-person auxiliary
  (он, она, on, ona, je).

A text is split into clauses at punctuation and at the subordinating words of its language's data
file (``biaseval/data/speaker_gender/<lang>.yaml``: "že", "что", "da", ...). Cues count only inside a
clause with a first-person marker (or, in Czech and Slovak, "rád"/"sám" beside a verb in the first person
present: ``speaker_rules``) and no third-person one: "Žena povedala: „Som šťastná“" reads the
speaker's "šťastná", never "povedala"; "Myslím, že odišla" reads nothing.

The decision: cues of one gender -> that gender (reason ``cues``); of both -> ``ambiguous`` (``mixed``:
a translation that gives its speaker both genders, "Nisam mogao ..., ali osjećala sam se ..."); none ->
``unknown`` (``no-cue``); a language without a reader -> ``unknown`` (``no-reader``). ``evidence`` lists
the cues, as ``word:m`` / ``word:f``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache
from importlib import import_module
from typing import Sequence

import polars as pl

from biaseval.data.yamlio import package_yaml

OUTPUT = {"label": pl.String, "reason": pl.String, "evidence": pl.String}
# language -> "module:Class" of its morphology (imported on first use)
READERS = {
    "be": "biaseval.label.speaker_forms:Belarusian",
    "cs": "biaseval.label.speaker_rules:Czech",
    "hr": "biaseval.label.speaker_forms:Croatian",
    "pl": "biaseval.label.speaker_forms:Polish",
    "ru": "biaseval.label.speaker_forms:Russian",
    "sk": "biaseval.label.speaker_rules:Slovak",
    "sl": "biaseval.label.speaker_forms:Slovenian",
    "sr": "biaseval.label.speaker_forms:Serbian",
    "uk": "biaseval.label.speaker_forms:Ukrainian",
}
LABEL = {"m": "male", "f": "female"}
INSTRUMENTAL = ("instr", "instr-link")
NEAR = 2  # words between "rád"/"sám" and its verb in the first person present ("Rád se dívám", "Dělám to rád")
WINDOW = 3  # words after a marker or a form of "to be" where a long adjective is a predicate
_TOKEN = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*|\S", re.UNICODE)
_BREAKS = set(",;:.!?…\"„“”«»()[]–—/-")  # a hyphen alone is a dash (within a word it is no token)
_EVIDENCE = 8


@dataclass(frozen=True)
class Form:
    """What a word can say about the speaker (module docstring). ``gender`` is m or f for a cue."""

    gender: str | None = None
    # past, short, alone; adj (a long adjective in the nominative) and instr, instr-link (in the instrumental;
    # after a link only): cues only as predicates; past-or-noun (be, sl: a past the dictionary also reads as
    # a noun): a cue only beside a first-person marker
    kind: str | None = None
    first: bool = False  # a first-person singular marker
    third: bool = False  # a third-person subject or auxiliary
    copula: bool = False  # a form of "to be" (or a link verb) after which an adjective is a predicate
    noun: bool = False  # a noun (an adjective before one is attributive)
    link: bool = False  # a word after which an instrumental adjective is a predicate (быть, стать, себя)
    adverb: bool = False  # an adverb or particle, which may stand between a link and its predicate


NOTHING = Form()


@dataclass(frozen=True)
class LanguageData:
    version: int
    subordinators: frozenset[str]
    first: frozenset[str]
    third: frozenset[str]
    copulas: frozenset[str]
    alone: dict[str, str]  # word -> m / f ("sám", "sama")
    not_cues: frozenset[str]
    function_words: frozenset[str]  # cs, sk: the words that are surely not a noun (speaker_rules)
    links: frozenset[str]  # ru, uk: lemmas after which an instrumental adjective is a predicate
    present_ending: re.Pattern | None  # cs, sk, sl: the ending of a verb in the first person singular present
    present_first: frozenset[str]  # cs, sk, sl: such verbs that end otherwise (čtu, chci)
    not_present: frozenset[str]  # cs, sk, sl: words with such an ending that are no such verb (nám, problém)


@cache
def language_data(lang: str) -> LanguageData:
    raw = package_yaml(f"data/speaker_gender/{lang}.yaml")

    def words(key: str) -> frozenset[str]:
        return frozenset(w.lower() for w in raw.get(key, []) or [])

    alone = {w.lower(): g for g, ws in (raw.get("alone") or {}).items() for w in ws}
    ending = raw.get("present_first_ending")
    return LanguageData(int(raw["version"]), words("subordinators"), words("first_person"),
                        words("third_person"), words("copulas"), alone, words("not_cues"),
                        words("function_words"), words("links"), ending and re.compile(ending),
                        words("present_first"), words("not_present"))


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def clauses(words: list[str], data: LanguageData) -> list[list[str]]:
    """The clauses of a tokenized text: split at punctuation and before a subordinating word."""
    out: list[list[str]] = [[]]
    for word in words:
        if word in _BREAKS:
            out.append([])
            continue
        if word.lower() in data.subordinators and out[-1]:
            out.append([])
        out[-1].append(word)
    return [c for c in out if c]


class SpeakerReader:
    """A language's reader: ``form`` (one word, lower-cased) from its morphology; the clause rules here."""

    lang: str
    version: int = 1

    def __init__(self) -> None:
        self.data = language_data(self.lang)
        self._forms: dict[str, Form] = {}

    @property
    def signature(self) -> str:
        return f"speaker-{self.lang}@{self.version}.{self.data.version}"

    def forms(self, words: Sequence[str]) -> dict[str, Form]:
        """Forms of many lower-cased words at once (a reader backed by a program overrides this)."""
        return {w: self.form(w) for w in words}

    def form(self, word: str) -> Form:
        raise NotImplementedError

    def _lookup(self, words: set[str]) -> None:
        todo = [w for w in words if w not in self._forms]
        if todo:
            found = self.forms(todo)
            for word in todo:
                form = found.get(word, NOTHING)
                if word in self.data.alone:
                    form = replace(form, gender=self.data.alone[word], kind="alone")
                if word in self.data.first:  # hbs "sam" is also "alone": as a marker it is no cue
                    form = replace(form, gender=None, kind=None, first=True, third=False, copula=True)
                if word in self.data.third:
                    form = replace(form, gender=None, kind=None, first=False, third=True)
                if word in self.data.copulas:
                    form = replace(form, copula=True)
                if word in self.data.not_cues:
                    form = replace(form, gender=None, kind=None)
                self._forms[word] = form

    def cues(self, texts: Sequence[str]) -> list[list[tuple[str, str]]]:
        """Per text, its cues (word, m/f) in order."""
        split = [clauses(tokens(t), self.data) for t in texts]
        self._lookup({w.lower() for cs in split for c in cs for w in c})
        return [[cue for clause in cs for cue in self._clause_cues(clause)] for cs in split]

    def _clause_cues(self, clause: list[str]) -> list[tuple[str, str]]:
        forms = [self._forms[w.lower()] for w in clause]
        if not self._first_person(clause, forms) or any(f.third for f in forms):
            return []
        found, homographs = [], []
        for i, form in enumerate(forms):
            if form.gender is None:
                continue
            if form.kind == "adj" and not self._predicate(forms, i):
                continue
            if form.kind in INSTRUMENTAL and not self._instrumental_predicate(forms, i):
                continue
            if form.kind == "past-or-noun":  # only where nothing surer is found
                if self._beside_marker(forms, i):
                    homographs.append((clause[i], form.gender))
                continue
            found.append((clause[i], form.gender))
        return found or homographs

    def _first_person(self, clause: list[str], forms: list[Form]) -> bool:
        """Whether a clause's subject is the speaker: it holds a first-person marker, or (cs, sk, sl) one of
        the *alone* words (rád, sama) within ``NEAR`` words of a verb in the first person singular present,
        told by its ending where the morphology does not say ("Rád riskuji", "Mám rada kvety"; never a word
        of ``not_present``: nám, problém): "Má ráda kočky" (she likes cats) stays unread."""
        if any(f.first for f in forms):
            return True
        if self.data.present_ending is None:
            return False
        words = [w.lower() for w in clause]
        return any(self._present_first(other) for i, word in enumerate(words) if word in self.data.alone
                   for other in words[max(0, i - NEAR - 1):i] + words[i + 1:i + NEAR + 2])

    def _present_first(self, word: str) -> bool:
        if word in self.data.present_first:
            return True
        listed = self.data.alone.keys() | self.data.not_present | self.data.third
        return bool(self.data.present_ending.search(word)) and word not in listed

    @staticmethod
    def _predicate(forms: list[Form], i: int) -> bool:
        """A long adjective is a predicate: a marker or "to be" shortly before it (or right after it:
        "Šťastná som"), and no noun right after it."""
        if i + 1 < len(forms) and forms[i + 1].noun:
            return False
        before = forms[max(0, i - WINDOW):i]
        return any(f.copula or f.first or f.kind == "past" for f in before) or (
            i + 1 < len(forms) and (forms[i + 1].copula or forms[i + 1].first))

    @staticmethod
    def _beside_marker(forms: list[Form], i: int) -> bool:
        """A word right before a first-person marker ("Moral sem"), or after one with only adverbs and
        unstressed pronouns between ("sem jim moral", "Я ніколі не сказаў")."""
        if i + 1 < len(forms) and forms[i + 1].first:
            return True
        for form in reversed(forms[:i]):
            if form.first:
                return True
            if not form.adverb:
                return False
        return False

    @staticmethod
    def _instrumental_predicate(forms: list[Form], i: int) -> bool:
        """An instrumental adjective is a predicate: not before a noun, and after a link ("быть красивой",
        "чувствую себя виноватой") or, if it can be nothing else (``instr``), a first-person verb
        ("финиширую первым"), with only adverbs or other instrumental adjectives between ("буду более
        дружелюбным", "быть самым сильным")."""
        if i + 1 < len(forms) and forms[i + 1].noun:
            return False
        for form in reversed(forms[:i]):
            if form.link or (form.first and forms[i].kind == "instr"):
                return True
            if not (form.adverb or form.kind in INSTRUMENTAL):
                return False
        return False


@cache
def reader_for(lang: str) -> SpeakerReader | None:
    where = READERS.get(lang)
    if where is None:
        return None
    module, _, name = where.partition(":")
    return getattr(import_module(module), name)()


def decide(cues: Sequence[tuple[str, str]]) -> tuple[str, str, str | None]:
    """(label, reason, evidence) from a text's cues (module docstring)."""
    if not cues:
        return "unknown", "no-cue", None
    evidence = " ".join(f"{w}:{g}" for w, g in cues[:_EVIDENCE]) + (" ..." if len(cues) > _EVIDENCE else "")
    genders = {g for _, g in cues}
    if len(genders) > 1:
        return "ambiguous", "mixed", evidence
    return LABEL[genders.pop()], "cues", evidence


def read_texts(lang: str, texts: Sequence[str]) -> list[tuple[str, str, str | None]]:
    """(label, reason, evidence) of each text in ``lang``."""
    reader = reader_for(lang)
    if reader is None:
        return [("unknown", "no-reader", None)] * len(texts)
    return [decide(c) for c in reader.cues(list(texts))]


@dataclass(frozen=True)
class SpeakerGender:
    """Detector: the gender a translation gives its first-person speaker (module docstring)."""

    name: str
    version: int
    language: str = "*"
    doc: str = ""
    labels: tuple[str, ...] = ("male", "female", "ambiguous", "unknown")

    @property
    def signature(self) -> str:
        return f"{self.name}@{self.version}"

    def signature_for(self, lang: str) -> str:
        reader = reader_for(lang)
        return f"{self.signature}+{reader.signature if reader is not None else 'no-reader'}"

    def expr(self, column: str = "translation"):
        raise TypeError(f"detector {self.name!r} labels a whole corpus (label_frame), not one text at a time")

    def check(self, lang: str) -> None:
        """Raise MissingAnalyser (naming what to install) when ``lang``'s reader cannot run here."""
        reader_for(lang)

    def label_frame(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame`` (one target language; columns tgt_lang, translation) with label, reason and evidence;
        null for rows without a translation."""
        langs = frame["tgt_lang"].unique().to_list()
        if len(langs) > 1:
            raise ValueError(f"{self.name}: label one target language at a time, not {langs}")
        texts = frame.filter(pl.col("translation").is_not_null())["translation"].unique(maintain_order=True)
        decided = read_texts(langs[0], texts.to_list()) if langs else []
        table = pl.DataFrame({"translation": texts, "label": [d[0] for d in decided],
                              "reason": [d[1] for d in decided], "evidence": [d[2] for d in decided]},
                             schema={"translation": pl.String, **OUTPUT})
        return frame.drop([c for c in OUTPUT if c in frame.columns]).join(
            table, on="translation", how="left", maintain_order="left")


DETECTORS = (
    SpeakerGender("gest-speaker", 1,
                  doc="GEST: the gender a translation gives its first-person speaker, from the words that agree "
                      "with a first-person singular subject (past tenses and l-participles, short and predicative "
                      "adjectives, 'alone'/'myself') inside clauses with a first-person marker; ru, uk through "
                      "pymorphy3, pl through Morfeusz 2, hr, sr, sl, be through Apertium, cs, sk by rules "
                      "(biaseval/label/speaker_gender.py, docs/gest.md)."),
)
