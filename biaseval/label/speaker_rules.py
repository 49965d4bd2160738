"""Czech and Slovak: what a word says about a first-person speaker, by rules on its ending (no maintained
Czech or Slovak morphology installs here from PyPI or Debian; docs/gest.md).

Both languages form the first-person past and conditional with an auxiliary that carries the person
(cs "udělala jsem", "udělal bych"; sk "urobila som", "urobil by som") and the l-participle that carries
the gender; the present copula is the same auxiliary ("jsem šťastná", "som šťastná"). So, inside a clause
with such a marker (``speaker_gender``):

- *past*: a word ending in -l after a vowel, or in -hl, -kl, -sl, -zl, -dl, -tl, -bl, -pl, -rl (dělal,
  mohl, řekl, nesl, vedl; sk robil, mohol, išiel) is masculine; the same with -la (dělala, mohla,
  išla) feminine; the data file lists the words that end so and are not l-participles (škola, síla,
  cíl, stôl, ...);
- *adj*: a word ending in -ý is masculine, in -á feminine: a long adjective, counted only as a
  predicate (after the marker or a form of "to be": "jsem šťastná", "bola som unavená"), and only at the
  end of its clause or before a function word of the data file: without a lexicon any other word may be
  its noun ("hlavný prejav"), and -á is also the plural of neuter nouns (okná: listed);
- *alone*: the pairs of the data file (sám/sama, rád/ráda, nerad/nerada).

The present tense has no auxiliary: "Rád riskuji", "Mám rada kvety" say who likes it only by the verb's
person, told here by its ending (the data file's ``present_first_ending``: cs -ám, -ím, -uji, -uju; sk
-ám, -am, -ím, -im, -em): ``speaker_gender.SpeakerReader._first_person``.

A capitalised word inside a sentence (a name) is never a cue.
"""

from __future__ import annotations

import re

from biaseval.label.speaker_gender import NOTHING, Form, SpeakerReader

_PAST = re.compile(r"^[^\W\d_]+(?:[aeiouyáéíóúýěôäů]|[hkszdtbpr])l(a?)$")
_AGENT = re.compile(r"tel$")  # cs agent nouns (přítel, učitel, živitel); verbs have -těl (chtěl)


class _WestSlavic(SpeakerReader):
    def form(self, word: str) -> Form:
        if len(word) < 3:
            return NOTHING if word in self.data.function_words else Form(noun=True)
        match = _PAST.match(word)
        if match and not (self.lang == "cs" and _AGENT.search(word)):
            return Form("f" if match.group(1) else "m", "past")
        if len(word) > 3 and word.endswith("ý"):
            return Form("m", "adj")
        if len(word) > 3 and word.endswith("á"):
            return Form("f", "adj")
        # what cannot be told from a noun here counts as one: an adjective before it is attributive
        return NOTHING if word in self.data.function_words else Form(noun=True)

    def cues(self, texts):
        # a capitalised word inside a sentence is a name (Pavel, Karla): never a cue
        return [[(w, g) for w, g in found if not (w[:1].isupper() and w.lower() not in self.data.first)
                 or self._sentence_start(text, w)] for text, found in zip(texts, super().cues(texts))]

    @staticmethod
    def _sentence_start(text: str, word: str) -> bool:
        at = text.find(word)
        before = text[:at].rstrip()
        return not before or before[-1] in ".!?:\"„“«"


class Czech(_WestSlavic):
    lang = "cs"


class Slovak(_WestSlavic):
    lang = "sk"
