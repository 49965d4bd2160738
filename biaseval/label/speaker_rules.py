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
person. So a clause is also the speaker's when one of the *alone* words stands within ``NEAR`` words of a
verb in the first person singular present, told by its ending (cs -ám, -ím, -uji, -uju; sk -ám, -am, -ím,
-im, -em; the data file's ``present_first`` lists those that end otherwise: čtu, jdu, chci), never a word of
its ``not_present`` (nám, tím, problém): "Má ráda kočky" (she likes cats) stays unread.

A capitalised word inside a sentence (a name) is never a cue.
"""

from __future__ import annotations

import re

from biaseval.label.speaker_gender import NOTHING, Form, SpeakerReader

_PAST = re.compile(r"^[^\W\d_]+(?:[aeiouyáéíóúýěôäů]|[hkszdtbpr])l(a?)$")
_AGENT = re.compile(r"tel$")  # cs agent nouns (přítel, učitel, živitel); verbs have -těl (chtěl)
# the first person singular present (module docstring)
_PRESENT = {"cs": re.compile(r"^[^\W\d_]+(?:ám|ím|uj[iu])$"), "sk": re.compile(r"^[^\W\d_]+(?:[aáiíe]m)$")}
NEAR = 2  # words between "rád"/"sám" and its verb ("Rád se dívám", "Dělám to rád")


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

    def _first_person(self, clause, forms) -> bool:
        if super()._first_person(clause, forms):
            return True
        words = [w.lower() for w in clause]
        return any(self._present_first(other) for i, word in enumerate(words) if word in self.data.alone
                   for other in words[max(0, i - NEAR - 1):i] + words[i + 1:i + NEAR + 2])

    def _present_first(self, word: str) -> bool:
        """A verb in the first person singular present (module docstring)."""
        if word in self.data.present_first:
            return True
        listed = self.data.alone.keys() | self.data.not_present | self.data.third
        return bool(_PRESENT[self.lang].match(word)) and word not in listed

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
