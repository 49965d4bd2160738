"""The pronoun-following reading of a WinoMT translation: the gender of the first gendered
third-person pronoun after the entity.

WinoMT's English sentences have one pronoun, and it refers to the entity. A translation can give the
entity a noun of one gender and that pronoun the other ("Die Krankenschwester sah den Arzt und bat
sie ...": a masculine noun, a feminine pronoun for it). biaseval's default reading is the noun phrase
(as WinoMT's is); mt_gender's human annotators of German, French and Hebrew mostly followed the
pronoun. ``later_pronoun`` finds that pronoun; ``follow_pronoun`` makes it decide, and is what the
detector ``entity-alignment-pronoun`` applies to every reading. The pronoun lists are
``biaseval/data/entity_gender/pronouns.yaml``.
"""

from __future__ import annotations

from functools import cache
from typing import Sequence

from biaseval.data.yamlio import package_yaml
from biaseval.label.analysers.base import Reading


@cache
def _lists() -> dict:
    return package_yaml("data/entity_gender/pronouns.yaml")


@cache
def pronouns(lang: str) -> dict[str, str]:
    """Lower-case pronoun -> "male"/"female" for ``lang`` (empty for a language without a list)."""
    entry = _lists().get(lang) or {}
    return {word.lower(): gender for gender in ("male", "female") for word in entry.get(gender, ())}


def _he_prefixes() -> list[str]:
    return sorted(_lists()["he_prefixes"], key=len, reverse=True)


def pronoun_gender(token: str, lang: str) -> str | None:
    """The gender a token says as a third-person pronoun of ``lang``, or None."""
    table = pronouns(lang)
    word = token.lower()
    if word in table:
        return table[word]
    if lang == "he":
        for prefix in _he_prefixes():
            if word.startswith(prefix) and word[len(prefix):] in table:
                return table[word[len(prefix):]]
    return None


def later_pronoun(tokens: Sequence[str], span: Sequence[int], lang: str) -> tuple[int, str] | None:
    """(index, gender) of the first gendered pronoun after the entity's last aligned token (after the
    start of the sentence when nothing is aligned), or None."""
    start = max(span) + 1 if span else 0
    for k in range(start, len(tokens)):
        gender = pronoun_gender(tokens[k], lang)
        if gender is not None:
            return k, gender
    return None


def follow_pronoun(reading: Reading, tokens: Sequence[str], span: Sequence[int], lang: str) -> Reading:
    """``reading`` unless a gendered pronoun follows the entity, which then decides (reason ``pronoun``)."""
    found = later_pronoun(tokens, span, lang)
    if found is None:
        return reading
    k, gender = found
    return Reading(gender, "pronoun", tokens[k])
