"""Which language a file of translations is in, roughly: enough to catch a file given for the wrong
target language (an Italian file where the Spanish outputs belong), never to judge a translation.

Each known language has a few dozen of its most frequent function words, or letters no other
language here uses (Hebrew, Arabic, Devanagari script; Ukrainian і ї є ґ, Russian ы э ъ ё). A word
listed for two of the languages compared counts for neither. ``reads_as`` says which language a
text is in only when the evidence is overwhelming: at least ``MIN_HITS`` tokens, ``MARGIN`` times
more than for the claimed language. Short texts, single words and languages without a list get no
verdict (None), so a real file of the right language is never refused.
"""

from __future__ import annotations

import re
from typing import Iterable

WORDS = {
    "en": "the and of is was are were my have has for with works as he she his her him they this that "
          "who which been would from at it its our their not",
    "es": "el los las del al y que es está mi mis una por con para se su lo le de en dos muy trabaja como "
          "desde hace mucho tiempo pero cuando fue era también conozco ella él yo",
    "it": "il lo le gli della delle degli dello del al che di e è sono ho mio mia suo sua con su se ma lavora "
          "come da molto tempo per una non anche quando era lei lui io conosco nel nella alla",
    "fr": "le les et est des du de en je une pour mon ma mes avec qui travaille depuis longtemps comme sur "
          "pas mais se lui eu y non était elle il au aux dans ce cette connais",
    "de": "der die das und ist ich nicht ein eine mein meine mit sie er als seit arbeitet kenne schon lange "
          "lang dem den des zu auf auch war wurde sich es was um",
    "pt": "o os as e é um uma do da dos das de meu minha não com em para que se seu sua por mais está "
          "quando desde conheço há muito tempo trabalha como ele ela eu foi",
    "nl": "de het een van en is zijn mijn werkt als ik niet met hij zij ze haar hem lang ken bij op "
          "voor dat die",
}
LETTERS = {
    "he": re.compile(r"[\u0590-\u05ff]"),
    "ar": re.compile(r"[\u0600-\u06ff]"),
    "hi": re.compile(r"[\u0900-\u097f]"),
    "ru": re.compile(r"[ыэъё]"),
    "uk": re.compile(r"[іїєґ]"),
}
KNOWN = frozenset(WORDS) | frozenset(LETTERS)
MIN_HITS = 20
MARGIN = 3
_TOKEN = re.compile(r"\w+")


def hits(lines: Iterable[str], languages: Iterable[str]) -> dict[str, int]:
    """Per language, the tokens of ``lines`` that only it, of ``languages``, would use."""
    langs = sorted(lang for lang in set(languages) if lang in KNOWN)
    owner: dict[str, str | None] = {}  # word -> the one language listing it (None: several do)
    for lang in langs:
        for word in WORDS.get(lang, "").split():
            owner[word] = lang if owner.get(word, lang) == lang else None
    scripts = [(lang, LETTERS[lang]) for lang in langs if lang in LETTERS]
    counts = dict.fromkeys(langs, 0)
    for line in lines:
        for token in _TOKEN.findall(line.lower()):
            lang = owner.get(token)
            if lang is not None:
                counts[lang] += 1
            elif not token.isascii():
                for lang, letters in scripts:
                    if letters.search(token):
                        counts[lang] += 1
    return counts


def reads_as(lines: Iterable[str], target: str, others: Iterable[str] = KNOWN) -> tuple[str, dict[str, int]] | None:
    """The language of ``others`` that ``lines`` are clearly in instead of ``target``, with the counts;
    None when they may well be in ``target`` (or ``target`` has no word list)."""
    if target not in KNOWN:
        return None
    counts = hits(lines, {target, *others})
    best = max(counts, key=counts.get)
    if best != target and counts[best] >= MIN_HITS and counts[best] >= MARGIN * counts[target]:
        return best, counts
    return None


def sample(lines: list[str], size: int = 2000) -> list[str]:
    """At most ``size`` lines spread over the file (a language check need not read a million)."""
    if len(lines) <= size:
        return lines
    step = len(lines) / size
    return [lines[int(k * step)] for k in range(size)]


REPLY_MIN_HITS = 3


def reply_reads_as(text: str, target: str, others: Iterable[str] = KNOWN) -> str | None:
    """The language of ``others`` that one reply (an LLM's translation of a sentence) is clearly in
    instead of ``target``, else None. A sentence has few function words, so besides ``reads_as``'s rule
    a reply is placed in another language when it has at least ``REPLY_MIN_HITS`` words that only that
    language uses and none of the target's: an untranslated English sentence ("I have known my friend
    for a long time") is caught; a name, a short phrase or a target without a word list is not judged."""
    if target not in KNOWN:
        return None
    counts = hits([text], {target, *others})
    best = max(sorted(counts), key=counts.get)
    found, own = counts[best], counts[target]
    if best == target or found == 0:
        return None
    if (found >= MIN_HITS and found >= MARGIN * own) or (found >= REPLY_MIN_HITS and own == 0):
        return best
    return None
