"""Dutch: the gender of an entity only where the word itself names a woman or a man.

Dutch grammar does not mark a person's sex on most profession nouns. "de" and "het" tell common
from neuter gender, not male from female; the old masculine/feminine split of common nouns
(Apertium lists "arts" as masculine, "verpleegster" as feminine) is a property of the word, and
"de arts", "de leraar", "de ontwikkelaar" are said of women as well as men. What does name a woman
is a feminine derivation (-ster, -es, -e, -euse, -trice, -in: verpleegster, lerares, advocate,
kokkin) or a compound on -vrouw; what names a man is a compound on -man or a word such as "heer".
So this analyser reads only those, from word lists in ``biaseval/data/entity_gender/nl.yaml``,
and says ``unknown`` for the rest instead of guessing that an unmarked noun is male. That makes
Dutch accuracy low by construction (most male-gold entities come out unknown): the Dutch numbers
measure how often a system chose a feminine or masculine form, not a full gender reading.

No morphological analyser is used: none offline covers the profession nouns (Apertium's Dutch
analyser lacks kapper, kassier, ontwerper, ...), and one would add nothing but the noun/not-noun
distinction, since its gender tags are not the referent's sex.

Rules, for one row (span non-empty, checked by ``base.GenderAnalyser.analyse``)
--------------------------------------------------------------------------------

1. A span token listed under ``indefinite`` (iemand) -> ``neutral`` (``indefinite``).
2. *Head*: the first span token with letters that is not listed under ``not_heads`` (articles,
   determiners, pronouns, prepositions); Dutch compounds are one word and a noun phrase's noun comes
   before its complements ("het hoofd van de afdeling"). No head -> unknown ``not-in-lexicon``.
3. The head (lower case) equal to, or a compound ending in, a word listed under ``generic``
   (persoon, vertrouwenspersoon, mens) -> ``neutral`` (``noun``).
4. The head equal to, or a compound ending in, a word listed under ``female`` (lerares,
   hoofdverpleegster, schoonmaakster, zakenvrouw) -> ``female`` (``noun``); the same with ``male``
   (zakenman, heer) -> ``male`` (``noun``). A compound must keep at least two letters before the
   listed word ("meester" does not end in a listed "ster").
5. Otherwise unknown ``epicene-no-article``: the word has no form the lists mark (arts, leraar,
   kapper: said of women and men alike). The evidence shows the word, so a report can tell a
   misaligned one.

Not handled: pronouns referring back ("omdat ze ..."), which the aligned entity does not include;
feminine forms missing from the list (they come out unknown, never male).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import ClassVar

from biaseval.errors import ConfigError
from biaseval.label.analysers.base import GenderAnalyser, Reading, WordLists

_MIN_PREFIX = 2  # letters a compound keeps before a listed word


@dataclass(frozen=True)
class _Data:
    indefinite: frozenset[str]
    generic: tuple[str, ...]
    female: tuple[str, ...]
    male: tuple[str, ...]
    not_heads: frozenset[str]


@cache
def _data() -> _Data:
    lists = WordLists("nl.yaml")
    where = lists.where

    def words(key: str) -> list[str]:
        return lists.words(key, lambda w: w.isalpha() and w == w.lower(), "a list of lower-case words")

    female, male = words("female"), words("male")
    both = set(female) & set(male)
    if both:
        raise ConfigError(f"{where}: listed as female and as male: {', '.join(sorted(both))}")
    # longest first, so that a compound is read by the longest listed word it ends in
    return _Data(frozenset(words("indefinite")), tuple(words("generic")),
                 tuple(sorted(female, key=len, reverse=True)), tuple(sorted(male, key=len, reverse=True)),
                 frozenset(words("not_heads")))


def _ends_in(word: str, listed: tuple[str, ...]) -> str | None:
    return next((w for w in listed if word == w or (word.endswith(w) and len(word) - len(w) >= _MIN_PREFIX)), None)


class Dutch(GenderAnalyser):
    """Dutch (feminine and masculine word forms only; see the module docstring)."""

    lang: ClassVar[str] = "nl"
    version: ClassVar[int] = 1

    def __init__(self) -> None:
        self.data = _data()

    def read_aligned(self, sentences: list[list[str]], spans: list[list[int]]) -> list[Reading]:
        return [self._read(tokens, span) for tokens, span in zip(sentences, spans)]

    def _read(self, tokens: list[str], span: list[int]) -> Reading:
        data = self.data
        words = [t.lower() for t in tokens]
        for i in span:
            if words[i] in data.indefinite:
                return Reading("neutral", "indefinite", tokens[i])
        head = next((i for i in span if words[i] not in data.not_heads and any(c.isalpha() for c in words[i])), None)
        if head is None:
            return Reading("unknown", "not-in-lexicon", " ".join(tokens[i] for i in span))
        word = words[head]
        if _ends_in(word, data.generic):
            return Reading("neutral", "noun", tokens[head])
        if _ends_in(word, data.female):
            return Reading("female", "noun", tokens[head])
        if _ends_in(word, data.male):
            return Reading("male", "noun", tokens[head])
        return Reading("unknown", "epicene-no-article", tokens[head])


__all__ = ["Dutch"]
