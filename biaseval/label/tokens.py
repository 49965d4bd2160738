"""Word tokens for alignment and gender analysis, the same on both sides of a sentence pair.

Words are runs of letters, digits, marks and inner hyphens; every other non-space character is a
token of its own. Hebrew points and Arabic diacritics (harakat, tanwīn, shadda) belong to their word:
"المدرّس" and "شخصاً" are one token each. An elided article or preposition keeps its apostrophe and
becomes its own token ("l'infermiera" -> "l'", "infermiera"; "dell'avvocata" -> "dell'",
"avvocata"), so the article can be aligned and read apart from its noun. English clitics stay whole
("didn't", "nurse's"), matching how WinoMT counts the entity's word index (whitespace-separated
words).
"""

from __future__ import annotations

import re

APOSTROPHES = "'\u2019\u02bc"
_WORD_CHARS = r"\w\u0590-\u05ff\u064b-\u065f\u0670"  # \w, the Hebrew block, Arabic diacritics
# Elided forms: letters + apostrophe directly followed by a letter, at the start of a word.
_TOKEN = re.compile(
    rf"(?:[^\W\d_]+[{APOSTROPHES}](?=[^\W\d_]))"  # elision: l' d' dell' un' qu' j' s'
    rf"|(?:[{_WORD_CHARS}]+(?:[-\u05be'\u2019\u05f3\u05f4\"][{_WORD_CHARS}]+)*)"  # word (inner - ' ״ ׳ allowed)
    r"|[^\w\s]",
    re.UNICODE,
)
_ELISION_LANGS = {"fr", "it", "ca", "oc", "pt"}


def tokenize(text: str, lang: str = "") -> list[str]:
    """Tokens of ``text``. For languages with elided articles (fr, it, ...) ``l'`` is split from its
    noun; elsewhere an apostrophe inside a word keeps the word whole."""
    return (_TOKEN if lang in _ELISION_LANGS else _WORD_ONLY).findall(text)


def token_spans(text: str, lang: str = "") -> list[tuple[int, int]]:
    """(start, end) character offsets of ``tokenize(text, lang)``'s tokens."""
    return [m.span() for m in (_TOKEN if lang in _ELISION_LANGS else _WORD_ONLY).finditer(text)]


_WORD_ONLY = re.compile(
    rf"(?:[{_WORD_CHARS}]+(?:[-\u05be'\u2019\u05f3\u05f4\"][{_WORD_CHARS}]+)*)|[^\w\s]", re.UNICODE)


def lower(tokens: list[str]) -> list[str]:
    return [t.lower() for t in tokens]
