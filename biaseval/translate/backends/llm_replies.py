"""Reading an LLM's reply: the translation, or why the reply is not one.

An LLM asked for a translation may answer with one wrapped in quotes, a label or a code fence; or
with something else: a refusal, nothing, a chatty answer around (or instead of) the translation, or a
text in another language. biaseval never scores such a reply as a translation, and never tries to dig
a translation out of a chatty one (which part is "the" translation is a guess). The rules, in order:

1. **refusal**: the API says so (``message.refusal``, or ``finish_reason`` ``content_filter``), or
   the reply opens with an apology or an inability ("I'm sorry", "I can't", "As an AI", "Lo siento",
   "Je ne peux pas", "Mi dispiace", "Es tut mir leid", ...) *and* speaks of translating, helping,
   requests or policies.
2. **empty**: nothing left once the wrappers below are stripped.
3. **explanation**: a preamble ("Sure! Here is the translation", "The translation is", "Aquí está la
   traducción"), a note ("Note:", "(Literally ...)", "Alternatively"), more lines than the source has,
   or more than three times the source's length plus 40 characters.
4. **wrong-language**: function words show the reply is clearly in another language than the target
   (``language_guess.reply_reads_as``; an untranslated source above all). Offline and conservative:
   short replies and targets without a word list are never judged.

Wrappers stripped first (each at most once, outermost first): a Markdown code fence, a
``<translation>`` tag, a leading label ("Translation:", "Spanish translation:", "Spanish:",
"Traducción:", bold or not), and one pair of quotes around the whole reply ("...", “...”, «...», „...“,
'...') unless the source itself is quoted. A reply cut at ``max_tokens`` (``finish_reason`` ``length``)
is not read at all: the backend records it as an error, to be sent again.

The checks are worded for English and the four OTSC target languages: a translation *into* English
of a source that itself apologises ("Lo siento, no puedo traducirlo") would read as a refusal. The
system's ``reply_checks`` option turns checks off; every rejected reply keeps its raw text (the
``raw`` column), so a rejection can always be audited.

Batches (several texts per request) are read by ``read_batch``: the reply must be a JSON array of
``{"id": n, "translation": "..."}``, one per text, ids 1..N in order; each translation is then read
like a single reply. Any other answer raises ``SplitBatch`` and the runner sends the texts again in
smaller requests.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Collection, Mapping

from biaseval.translate.backends.language_guess import reply_reads_as
from biaseval.translate.backends.llm_prompts import language_name
from biaseval.translate.base import SplitBatch

CHECKS = ("refusal", "explanation", "wrong-language")

_FENCE = re.compile(r"^```[\w+-]*[ \t]*\n?(.*?)\n?[ \t]*```$", re.DOTALL)
_TAG = re.compile(r"^<(translation|output|answer|text)>\s*(.*?)\s*</\1>$", re.DOTALL | re.IGNORECASE)
_QUOTES = [('"', '"'), ("“", "”"), ("„", "“"), ("«", "»"), ("‘", "’"), ("'", "'"), ("「", "」")]
_LOCAL_LABELS = "traducción|traduction|traduzione|übersetzung|tradução|vertaling|перевод|переклад|अनुवाद"

_REFUSAL_START = re.compile(
    r"^\W*(?:i'?m (?:so )?sorry|i am (?:so )?sorry|sorry\b|i apologi[sz]e|unfortunately\b|as an ai\b|"
    r"i (?:can ?not|can'?t|can’t|am unable|'m unable|am not able|won'?t|will not|must decline|cannot)|"
    r"lo siento|lamentablemente|no puedo|lo lamento|"
    r"je suis désolée?|désolée?|malheureusement|je ne peux pas|"
    r"mi dispiace|purtroppo|non posso|"
    r"es tut mir leid|leider|ich kann (?:das |diese[ns]? |den |die )?\w* ?nicht)",
    re.IGNORECASE)
_REFUSAL_TOPIC = re.compile(
    r"translat|assist|help with|comply|fulfil|request|provide|content polic|guideline|as an ai|language model|"
    r"traduc|ayudar|solicitud|petición|tradui|aider|demande|tradur|aiutar|richiesta|übersetz|helfen|anfrage",
    re.IGNORECASE)
_PREAMBLE = re.compile(
    r"^\W*(?:(?:sure|certainly|of course|okay|ok|absolutely|great)\b[\s,.!:-]*)?"
    r"(?:here(?:'s| is| are)\b|below is\b|the (?:\w+ )?translation (?:is|of|would be|reads)\b|"
    r"this (?:translates|means|would be)\b|translated(?: into \w+)?, (?:this|it)\b|"
    r"(?:aquí (?:está|tienes)|voici|ecco|hier ist)\s+(?:la |die |el )?(?:traduc|tradu|übersetz))",
    re.IGNORECASE)
_NOTE = re.compile(
    r"(?im)(?:^\W*(?:note|notes|explanation|alternatively|alternative(?: translation)?s?|literal(?:ly)?|"
    r"nota|remarque|anmerkung|hinweis)\b\s*[:(-]|\((?:note|literally|lit\.|or|alternatively)\b)")


@dataclass(frozen=True)
class Reading:
    """A reply read: its translation, or why it is not one (``rejected``)."""

    translation: str | None
    rejected: str | None = None
    raw: str | None = None  # the reply as received, when rejected


def strip_wrappers(reply: str, source: str, tgt: str, names: Mapping[str, str] | None = None) -> str:
    """The reply without the wrappers an LLM puts around a translation (see the module docstring)."""
    text = reply.strip()
    text = _unfence(text)
    language = re.escape(language_name(tgt, names) or tgt)
    label = re.compile(
        rf"^\W{{0,3}}(?:(?:the )?(?:{language} )?translation(?: (?:in|into|to) {language})?|translated text|"
        rf"{language}|{_LOCAL_LABELS})\W{{0,3}}\s*[:：]\s*(?:\*\*|__)?\s*", re.IGNORECASE)
    match = label.match(text)
    if match:
        text = _unfence(text[match.end():].strip())
    return _unquote(text, source.strip())


def _unfence(text: str) -> str:
    for pattern, group in ((_FENCE, 1), (_TAG, 2)):
        match = pattern.match(text)
        if match:
            text = match.group(group).strip()
    return text


def _unquote(text: str, source: str) -> str:
    for opening, closing in _QUOTES:
        if (len(text) >= 2 and text.startswith(opening) and text.endswith(closing)
                and not source.startswith(opening) and closing not in text[len(opening):-len(closing)]):
            return text[len(opening):-len(closing)].strip()
    return text


def is_refusal(text: str) -> bool:
    return bool(_REFUSAL_START.match(text)) and bool(_REFUSAL_TOPIC.search(text))


def is_explanation(text: str, source: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    source_lines = [line for line in source.splitlines() if line.strip()]
    return (bool(_PREAMBLE.match(text)) or bool(_NOTE.search(text)) or len(lines) > max(1, len(source_lines))
            or len(text) > 3 * len(source) + 40)


def read_reply(reply: str | None, source: str, src: str, tgt: str, *, checks: Collection[str] = CHECKS,
               names: Mapping[str, str] | None = None, refused: bool = False) -> Reading:
    """One reply to one text; ``refused``: the API itself flagged it (refusal field, content filter)."""
    if refused:
        return Reading(None, "refusal", reply)
    text = strip_wrappers(reply or "", source, tgt, names)
    if not text:
        return Reading(None, "empty", reply)
    if "refusal" in checks and is_refusal(text):
        return Reading(None, "refusal", reply)
    if "explanation" in checks and is_explanation(text, source):
        return Reading(None, "explanation", reply)
    if "wrong-language" in checks and src.split("-")[0] != tgt.split("-")[0] and reply_reads_as(text, tgt):
        return Reading(None, "wrong-language", reply)
    return Reading(text)


def read_batch(reply: str | None, sources: list[str], src: str, tgt: str, *, checks: Collection[str] = CHECKS,
               names: Mapping[str, str] | None = None) -> list[Reading]:
    """The replies to a batch, one per source in order; SplitBatch when the reply is not the numbered
    list asked for (anything else: not JSON, a text missing or added, ids out of order, a refusal of
    the whole batch)."""
    text = _unfence((reply or "").strip())
    try:
        items = json.loads(text)
    except ValueError:
        raise SplitBatch(f"the reply to {len(sources)} texts is not a JSON array") from None
    if isinstance(items, dict) and len(items) == 1 and isinstance(next(iter(items.values())), list):
        items = next(iter(items.values()))  # {"translations": [...]}
    if not isinstance(items, list):
        raise SplitBatch(f"the reply to {len(sources)} texts is not a JSON array")
    if len(items) != len(sources):
        raise SplitBatch(f"the reply has {len(items)} translations for {len(sources)} texts")
    out = []
    for n, (item, source) in enumerate(zip(items, sources), 1):
        if not isinstance(item, dict) or item.get("id") != n or not isinstance(item.get("translation"), (str, type(None))):
            raise SplitBatch(f"item {n} of the reply is not {{\"id\": {n}, \"translation\": ...}} "
                             f"(ids must come in order)")
        out.append(read_reply(item.get("translation"), source, src, tgt, checks=checks, names=names))
    return out
