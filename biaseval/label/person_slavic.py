"""Words that give a person's gender in a Russian text, read with pymorphy3 (``person_gender`` decides from
them; the rules are those of ``person_romance`` where Russian allows):

- *pronoun*: a third-person pronoun of one gender in every parse: она and its cases (её, ей, ней) are
  feminine; only the nominative он is masculine (его, ему, него are also the neuter's, said of things);
- *agreement*: a past-tense verb or a short adjective or participle in the singular, of one gender in
  every parse: Russian marks the subject's gender on them ("родилась", "был назначен", "она известна",
  "я была"). The subject is not checked, so a thing's past tense ("книга вышла") also counts;
- *noun*: an animate feminine noun in the singular (учительница, актриса, мать, женщина); an animate
  masculine noun only when the data file lists it as naming men (отец, брат, муж): most masculine
  occupation nouns (врач, директор, профессор) are said of women too. Names, surnames and patronymics
  (pymorphy3's Name, Surn, Patr), capitalised words inside a sentence and the animals the data file
  lists are never cues. A plural noun keeps its gender (спортсменки, медбратья): a plural cue, read only
  where a text has no singular one.

Parses scoring under a fifth of a word's best parse are dropped, as in ``analysers.slavic``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import ClassVar, Sequence

from biaseval.data.yamlio import package_yaml
from biaseval.label.analysers.slavic import _morph_analyser
from biaseval.label.person_romance import Cue
from biaseval.label.tokens import tokenize

GENDER = {"masc": "m", "femn": "f"}
_SENTENCE = {".", "!", "?", "\n", '"', "«", "“", "(", ":", "—", "–"}
_NAMES = {"Name", "Surn", "Patr", "Geox", "Orgn", "Trad"}


@dataclass(frozen=True)
class SlavicWords:
    version: int
    male_nouns: frozenset[str]
    not_persons: frozenset[str]


@cache
def slavic_words(lang: str) -> SlavicWords:
    raw = package_yaml(f"data/person_gender/{lang}.yaml")
    return SlavicWords(int(raw["version"]), frozenset(raw.get("male_nouns", [])), frozenset(raw.get("not_persons", [])))


class SlavicCues:
    lang: ClassVar[str]
    version: ClassVar[int] = 1

    def __init__(self) -> None:
        self.morph = _morph_analyser(self.lang)
        self.words = slavic_words(self.lang)
        self._seen: dict[str, Cue | None] = {}

    @property
    def signature(self) -> str:
        return f"person-{self.lang}@{self.version}.{self.words.version}"

    def cues(self, texts: Sequence[str]) -> list[list[Cue]]:
        out = []
        for text in texts:
            tokens = tokenize(text, self.lang)
            found = []
            for i, token in enumerate(tokens):
                if i and token[:1].isupper() and tokens[i - 1] not in _SENTENCE:
                    continue  # part of a name
                word = token.lower().replace("ё", "е")
                if word not in self._seen:
                    self._seen[word] = self._cue(word)
                if self._seen[word] is not None:
                    found.append(self._seen[word])
            out.append(found)
        return out

    def _cue(self, word: str) -> Cue | None:
        parses = self.morph.parse(word)
        if not parses:
            return None
        best = max(p.score for p in parses)
        parses = [p for p in parses if p.score >= best / 5]
        if any(set(p.tag.grammemes) & _NAMES for p in parses):
            return None
        genders = {GENDER.get(p.tag.gender) for p in parses}
        if len(genders) != 1 or None in genders:
            return None
        gender = genders.pop()
        kinds = {self._kind(p) for p in parses}
        if len(kinds) != 1 or None in kinds:
            return None
        return Cue(word, gender, kinds.pop(), plural=all("plur" in p.tag for p in parses))


    def _kind(self, parse) -> str | None:
        tag = parse.tag
        if "plur" in tag and tag.POS != "NOUN":  # a plural noun keeps its gender (спортсменки); verbs do not
            return None
        if tag.POS == "NPRO" and "3per" in tag:
            return "pronoun" if (tag.gender == "femn" or (tag.gender == "masc" and tag.case == "nomn")) else None
        if (tag.POS == "VERB" and "past" in tag) or tag.POS in ("ADJS", "PRTS"):
            return "agreement"
        lemma = parse.normal_form
        if tag.POS == "NOUN" and "anim" in tag and lemma not in self.words.not_persons:
            if tag.gender == "femn" or lemma in self.words.male_nouns or self._has_feminine(lemma):
                return "noun"
        return None

    def _has_feminine(self, lemma: str) -> bool:
        """Whether a masculine noun has a feminine one beside it in the dictionary (певец/певица,
        учитель/учительница, сосед/соседка, актёр/актриса): then the masculine names a man."""
        stems = [lemma + "ка", lemma + "иня", lemma + "есса"]  # not -ша, -ница: colloquial (профессорша)
        if lemma.endswith("ец"):
            stems.append(lemma[:-2] + "ица")
        if lemma.endswith(("ер", "ёр")):
            stems.append(lemma[:-2] + "риса")
        if lemma.endswith("ь"):
            stems.append(lemma[:-1] + "ка")
        return any(self.morph.word_is_known(c) and any(
            p.tag.POS == "NOUN" and p.tag.gender == "femn" and "anim" in p.tag and p.normal_form == c
            for p in self.morph.parse(c)) for c in stems)


class Russian(SlavicCues):
    lang = "ru"
