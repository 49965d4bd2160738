"""Words that give a person's gender in a Spanish, French, Italian or Portuguese text, read with Apertium
(``person_gender`` decides from them). The text is any translation; nothing says where the person is,
so only words that can be about a person count ("cues"):

- *pronoun*: a third-person singular subject or stressed personal pronoun (él/ella, il/elle, lui/lei,
  egli/ella, ele/ela, dela): every analysis a tonic (``<tn>``) p3 singular pronoun of one gender.
  Clitics (lo/la, le) are not read: "la" is also the article. A pronoun starting an impersonal phrase
  of the data file ("il y a", "il faut") is not a cue.
- *noun*: a singular noun of one gender that names a person by that gender: Apertium's generator
  makes both a masculine and a feminine singular of its lemma (cirujano/cirujana,
  professeur/professeure, infermiere/infermiera, cirurgião/cirurgiã), or the data file lists it
  (padre, madre, marido, mujer: pairs from two lemmas). situación, problema or vena are not persons:
  their lemma has one gender.
- *article*: a noun with one form for both genders (periodista, journaliste, giornalista) right after
  a determiner of one gender (la periodista, un journaliste): the determiner's gender.
- *agreement*: an adjective or past participle of one gender, singular, that is a predicate: right
  after a form of the copula (ser/estar, être, essere/stare; its own participles "sido", "été" are not
  cues) with at most two adverbs between ("fue expulsado", "está muy cansada", "è stata nominata"), or
  opening a clause (after the text's start, "(", ",", ";", ":" or a full stop: "Nacida en ...",
  "(née le ...)"). Attributive adjectives ("la costa oeste", "una isla grande") are not read: they
  agree with things as often as with people.

Plural cues (son enfermeros, somos buenas deportistas) are kept apart: ``person_gender`` uses them
only for a text without a singular cue (a passage about a group), since a masculine plural is also
the generic form (sus abuelos, 500 hombres).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from typing import ClassVar, Mapping, Sequence

from biaseval.data.yamlio import package_yaml
from biaseval.label.analysers.base import MissingAnalyserPackages
from biaseval.label.analysers.lt_proc import (
    LT_PROC_TIMEOUT_S,
    Analysis,
    find_automorf,
    run_analyser,
)
from biaseval.label.analysers.romance_words import normalise, word_data
from biaseval.label.tokens import tokenize

CLAUSE_START = {"(", ",", ";", ":", ".", "!", "?", "«", '"', "“", "—", "–"}
COPULAS = {"es": {"ser", "estar"}, "pt": {"ser", "estar"}, "it": {"essere", "stare"}, "fr": {"être"}}
_ADVERBS = ("adv", "preadv")


@dataclass(frozen=True)
class Cue:
    word: str
    gender: str  # "m" or "f"
    kind: str  # pronoun, noun, article, agreement
    plural: bool = False


@dataclass(frozen=True)
class PersonWords:
    """A language's listed words: person nouns whose other gender has another lemma, impersonal phrases."""

    version: int
    nouns: Mapping[str, str]  # word -> m / f
    impersonal: tuple[tuple[str, ...], ...]
    not_persons: frozenset[str] = frozenset()  # lemmas the generator pairs that name no person (corso/corsa)


@cache
def person_words(lang: str) -> PersonWords:
    raw = package_yaml(f"data/person_gender/{lang}.yaml")
    where = f"biaseval/data/person_gender/{lang}.yaml"
    nouns = {}
    for gender in ("m", "f"):
        for word in raw.get("nouns", {}).get(gender, []):
            if not isinstance(word, str) or word != normalise(word) or word in nouns:
                raise ValueError(f"{where}: nouns.{gender}: {word!r} is not a new lower-case word")
            nouns[word] = gender
    impersonal = tuple(tuple(p.split()) for p in raw.get("impersonal", []))
    return PersonWords(int(raw["version"]), nouns, impersonal, frozenset(raw.get("not_persons", [])))


def generate(lt_proc: str, autogen, requests: Sequence[str]) -> dict[str, str | None]:
    """Apertium's generator on ``lemma<tags>`` requests: the form, or None where it makes none."""
    requests = list(dict.fromkeys(requests))
    if not requests:
        return {}
    text = "".join(f"^{r}$\n" for r in requests)
    done = subprocess.run([lt_proc, "-g", str(autogen)], input=text, capture_output=True, text=True,
                          encoding="utf-8", timeout=LT_PROC_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"lt-proc -g {autogen} exited with {done.returncode}: {done.stderr.strip()[:300]}")
    lines = done.stdout.split("\n")[:len(requests)]
    if len(lines) != len(requests):
        raise RuntimeError(f"lt-proc -g {autogen}: {len(lines)} forms for {len(requests)} requests")
    return {r: (None if (not line.strip() or line.strip()[0] in "#@*") else line.strip())
            for r, line in zip(requests, lines)}


class RomanceCues:
    """The cues of one Romance language (module docstring)."""

    lang: ClassVar[str]
    package: ClassVar[str]
    automorf_name: ClassVar[str]
    autogen_name: ClassVar[str]
    version: ClassVar[int] = 1

    def __init__(self) -> None:
        self.lt_proc = shutil.which("lt-proc")
        self.automorf, places = find_automorf(self.package, self.automorf_name, self.lt_proc)
        self.autogen, more = find_automorf(self.package, self.autogen_name, self.lt_proc)
        if self.lt_proc is None or self.automorf is None or self.autogen is None:
            raise MissingAnalyserPackages(
                (["lttoolbox"] if self.lt_proc is None else []) + [self.package],
                f"{self.lang} person reader (needs lt-proc, {self.automorf_name} and {self.autogen_name}; "
                f"looked in {', '.join(map(str, places + more))})")
        self.determiners = word_data(self.lang).determiners
        self.words = person_words(self.lang)
        self.copulas = COPULAS[self.lang]

    @property
    def signature(self) -> str:
        return f"person-{self.lang}@{self.version}.{self.words.version}"

    def cues(self, texts: Sequence[str]) -> list[list[Cue]]:
        raw = [tokenize(text, self.lang) for text in texts]
        tokens = [[_head(normalise(t)) for t in ts] for ts in raw]
        morph = run_analyser(self.lt_proc, self.automorf,
                             sorted({w for ts in tokens for w in ts if any(c.isalpha() for c in w)}))
        persons = self._persons(morph) - self.words.not_persons
        return [self._cues(ts, _names(r), morph, persons) for ts, r in zip(tokens, raw)]

    def _persons(self, morph: Mapping[str, tuple[Analysis, ...]]) -> set[str]:
        """Noun lemmas whose generator makes a masculine and a feminine singular (two forms)."""
        lemmas = {a.lemma for analyses in morph.values() for a in analyses
                  if a.pos == "n" and a.genders & {"m", "f"} and "mf" not in a.genders}
        forms = generate(self.lt_proc, self.autogen, [f"{lemma}<n><{g}><sg>" for lemma in lemmas for g in "mf"])
        return {lemma for lemma in lemmas if (m := forms.get(f"{lemma}<n><m><sg>")) and
                (f := forms.get(f"{lemma}<n><f><sg>")) and m != f}

    def _cues(self, words: list[str], names: set[int], morph, persons: set[str]) -> list[Cue]:
        found = []
        for i, word in enumerate(words):
            if i in names:
                continue
            analyses = morph.get(word) or ()
            cue = (self._pronoun(words, i, analyses) or self._noun(words, i, analyses, morph, persons)
                   or self._article(words, i, analyses, morph) or self._agreement(words, i, analyses, morph))
            if cue is not None:
                found.append(cue)
        return found

    def _pronoun(self, words, i, analyses) -> Cue | None:
        if not analyses or not all(a.pos == "prn" and "tn" in a.tags and "p3" in a.tags for a in analyses):
            return None
        if any(tuple(words[i:i + len(p)]) == p for p in self.words.impersonal):
            return None
        return _single(words[i], analyses, "pronoun")

    def _noun(self, words, i, analyses, morph, persons) -> Cue | None:
        word = words[i]
        if word in self.words.nouns:
            return Cue(word, self.words.nouns[word], "noun")
        nouns = [a for a in analyses if a.pos == "n"]
        if not nouns or any(a.lemma not in persons for a in nouns) or self._attributive(words, i, analyses, morph):
            return None
        cue = _single(word, nouns, "noun")
        det = self._determiner(words, i, morph)
        if cue is not None and det is not None and det[1] != cue.gender:
            # la médico, la presidente: a feminine article names a woman by a masculine noun; a masculine
            # article before a feminine form contradicts itself: no cue
            return Cue(f"{words[det[0]]} {word}", "f", "article", cue.plural) if det[1] == "f" else None
        return cue

    def _article(self, words, i, analyses, morph) -> Cue | None:
        """A noun of both genders (periodista, giornalista) after a gendered determiner, with at most two
        adjectives between (la maravillosa cantante)."""
        nouns = [a for a in analyses if a.pos == "n"] or [a for a in analyses if a.pos == "adj"]
        if not nouns or self.determiners.get(words[i]) is not None or self._attributive(words, i, analyses, morph):
            return None
        genders = set().union(*(a.genders for a in nouns))
        if not ("mf" in genders or {"m", "f"} <= genders):
            return None
        det = self._determiner(words, i, morph)
        if det is None:
            return None
        return Cue(f"{words[det[0]]} {words[i]}", det[1], "article", plural=not any(a.singular for a in nouns))

    def _determiner(self, words, i, morph) -> tuple[int, str] | None:
        """(index, gender) of the gendered determiner before word ``i`` (over at most two adjectives)."""
        j = i - 1
        while j >= 0 and i - j <= 3 and self.determiners.get(words[j]) is None and any(
                a.pos == "adj" for a in morph.get(words[j]) or ()):
            j -= 1
        if j < 0 or i - j > 3 or self.determiners.get(words[j]) is None:
            return None
        gender = self.determiners[words[j]]
        following = words[j + 1]
        data = word_data(self.lang)
        if gender == "m" and ((words[j] in data.before_vowel_unmarked and following[:1] in _VOWEL_OR_H)
                              or (words[j] in data.stressed_a_articles and following in data.stressed_a_nouns)):
            return None  # son infirmière, el ama: the article does not mark the gender here
        return j, gender

    def _attributive(self, words, i, analyses, morph) -> bool:
        """Whether the word can be an adjective here: after a noun (un vestito rosso, la Pizzeria Romana)
        or before one (la seconda spedizione). A nominalised adjective is a person only on its own."""
        if not any(a.pos in ("adj", "det", "num") or "pp" in a.tags for a in analyses):
            return False
        near = [morph.get(words[k]) or () for k in (i - 1, i + 1) if 0 <= k < len(words)]
        return any(any(a.pos == "n" for a in around) and not self.determiners.get(words[k]) is not None
                   for k, around in zip([k for k in (i - 1, i + 1) if 0 <= k < len(words)], near))

    def _agreement(self, words, i, analyses, morph) -> Cue | None:
        agreeing = [a for a in analyses if a.pos == "adj" or (a.pos.startswith("vb") and "pp" in a.tags)]
        if not agreeing or len(agreeing) < len(analyses) - sum(a.pos == "n" for a in analyses):
            return None  # a word that is also a finite verb or something else
        if any(a.lemma in self.copulas for a in agreeing) or self.determiners.get(words[i]) is not None:
            return None
        j = i - 1
        while j >= 0 and i - j <= 2 and _only(morph.get(words[j]), _ADVERBS):
            j -= 1
        opens = j < 0 or words[j] in CLAUSE_START
        after_copula = j >= 0 and any(a.pos.startswith("vb") and a.lemma in self.copulas
                                      for a in morph.get(words[j]) or ())
        if not (opens or after_copula):
            return None
        return _single(words[i], agreeing, "agreement")


def _names(tokens: list[str]) -> set[int]:
    """Indices of the capitalised words that do not open a sentence: parts of names (la Pizzeria Romana,
    Santa Bárbara, Flor de María), which the translation copies rather than chooses."""
    out = set()
    for i, token in enumerate(tokens):
        if i and token[:1].isupper() and tokens[i - 1] not in (".", "!", "?", "\n", '"', "«", "“", "(", ":", "—"):
            out.add(i)
    return out


def _head(word: str) -> str:
    """The part of a hyphenated word that is read: the first (editora-chefe, porte-parole), or the last
    after a prefix (vice-presidente, ex-ministra, co-fondatrice)."""
    if "-" not in word:
        return word
    parts = [p for p in word.split("-") if p]
    if not parts:
        return word
    return parts[-1] if parts[0] in _PREFIXES and len(parts) > 1 else parts[0]


_PREFIXES = {"vice", "ex", "co", "sub", "pro", "pré", "pre", "pós", "post", "anti", "auto", "semi", "micro",
             "mini", "super", "multi", "neo", "pseudo", "proto", "arqui", "archi", "arci", "contra", "contre",
             "sous", "vize", "sotto", "capo"}
_VOWEL_OR_H = set("aeiouyhàâäáéèêëíìîïóòôöúùûüœæ")


def _only(analyses, kinds) -> bool:
    return bool(analyses) and all(a.pos in kinds for a in analyses)


def _single(word: str, analyses, kind: str) -> Cue | None:
    """A cue when the analyses give one gender (m or f); singular unless every analysis is plural."""
    genders = set().union(*(a.genders for a in analyses))
    if len(genders) != 1 or not genders <= {"m", "f"}:
        return None
    return Cue(word, genders.pop(), kind, plural=not any(a.singular for a in analyses))


class Spanish(RomanceCues):
    lang, package, automorf_name, autogen_name = "es", "apertium-eng-spa", "spa-eng.automorf.bin", "eng-spa.autogen.bin"


class French(RomanceCues):
    lang, package, automorf_name, autogen_name = "fr", "apertium-fra-cat", "fra-cat.automorf.bin", "cat-fra.autogen.bin"


class Italian(RomanceCues):
    lang, package, automorf_name, autogen_name = "it", "apertium-spa-ita", "ita-spa.automorf.bin", "spa-ita.autogen.bin"


class Portuguese(RomanceCues):
    lang, package, automorf_name, autogen_name = "pt", "apertium-por-cat", "por-cat.automorf.bin", "cat-por.autogen.bin"
