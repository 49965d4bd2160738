"""Words that give a person's gender in a German text (``person_gender`` decides from them), read with the
WinoMT analyser's noun lexicon (german-nouns, ``analysers.german``):

- *noun*: a capitalised word whose lexicon readings have one gender and name a person: a feminine in -in
  from a masculine (Ärztin/Arzt), a masculine with such a feminine (Lehrer), a -mann or -frau compound
  (Geschäftsmann), or a noun of ``data/person_gender/de.yaml`` (Mutter, Tochter, Witwer). Nouns of
  both genders (die/der Angestellte) and neuter ones (das Kind) give nothing;
- *pronoun*: "er" and "ihn" (masculine; "ihm", "sein" are also neuter). "sie" and "ihr" are not read:
  they are also "they" and "their", and "Sie" is the polite "you".

German adjectives and participles in the predicate do not agree ("sie ist bekannt"), so a German text
about a woman that names her only by name and "sie" has no cue.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from biaseval.data.yamlio import package_yaml
from biaseval.label.analysers.german import German
from biaseval.label.person_romance import Cue
from biaseval.label.tokens import tokenize

PRONOUNS = {"er": "m", "ihn": "m"}
_PLAIN = str.maketrans("äöüÄÖÜ", "aouAOU")


class GermanCues:
    lang: ClassVar[str] = "de"
    version: ClassVar[int] = 1

    def __init__(self) -> None:
        self.analyser = German()
        raw = package_yaml("data/person_gender/de.yaml")
        self.data_version = int(raw["version"])
        self.nouns = {word: gender for gender in ("m", "f") for word in raw["nouns"][gender]}
        self._seen: dict[str, Cue | None] = {}

    @property
    def signature(self) -> str:
        return f"person-de@{self.version}.{self.data_version}+{self.analyser.signature}"

    def cues(self, texts: Sequence[str]) -> list[list[Cue]]:
        out = []
        for text in texts:
            found = []
            for token in tokenize(text, "de"):
                if token not in self._seen:
                    self._seen[token] = self._cue(token)
                if self._seen[token] is not None:
                    found.append(self._seen[token])
            out.append(found)
        return out

    def _cue(self, token: str) -> Cue | None:
        if token.lower() in PRONOUNS and (token.islower() or token.istitle()):
            return Cue(token, PRONOUNS[token.lower()], "pronoun")
        if not token[:1].isupper():
            return None
        readings, _ = self.analyser._noun(token)
        if not readings or any(r.adjectival for r in readings):
            return None
        genders = {r.gender for r in readings}
        if len(genders) != 1 or not genders <= {"m", "f"}:
            return None
        gender, lemma = genders.pop(), readings[0].lemma
        listed = self.nouns.get(lemma)
        if listed is None and not (self.analyser._names_person(readings) or self._person(lemma, gender)):
            return None
        return Cue(token, listed or gender, "noun", plural=all(r.number == "pl" for r in readings))

    def _person(self, lemma: str, gender: str) -> bool:
        """-mann / -frau compounds (Geschäftsmann, Putzfrau), and a feminine in -in whose masculine has
        an umlaut the feminine keeps (Ärztin/Arzt, Köchin/Koch)."""
        if lemma.endswith(("mann", "frau")) and len(lemma) > 5:
            return (gender == "m") == lemma.endswith("mann")
        if gender == "f" and lemma.endswith("in") and len(lemma) > 4:
            stem = lemma[:-2].translate(_PLAIN)
            return any(r.gender == "m" for r in self.analyser._lexicon.readings(stem))
        return False
