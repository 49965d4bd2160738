"""The prompts an LLM backend sends, and what a request is expected to cost in tokens.

A prompt is two templates, a system message and a user message, with these placeholders:
``{src_lang}`` and ``{tgt_lang}`` (English language names: ``Spanish``), ``{src_code}`` and
``{tgt_code}`` (the ISO codes the run uses: ``es``) and ``{text}`` (the text to translate; only in
the single-text user template). The batch templates (several texts per request) take ``{count}`` and
``{texts}`` (a JSON array of ``{"id": n, "text": ...}``) instead of ``{text}``. A literal brace is
written twice (``{{``). ``check_template`` refuses an unknown placeholder, or a user template without
its text, when the config is validated.

Token estimates (``estimate_tokens``) are made before sending, from the text alone, with one
documented rule: a text costs ``ceil(UTF-8 bytes / 3)`` tokens (about 1.3 times what English takes
with current tokenizers, and about one token per character of Devanagari, Hebrew or Cyrillic, where
tokenizers spend more), each message 4 more, and the reply's priming 3.
"""

from __future__ import annotations

import hashlib
import json
import math
import string
from typing import Iterable, Mapping

# English names of the languages a run is likely to translate into (ISO 639-1, a few 639-3);
# options.language_names adds or overrides.
LANGUAGE_NAMES = {
    "ar": "Arabic", "be": "Belarusian", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan", "cs": "Czech", "da": "Danish",
    "de": "German", "el": "Greek", "en": "English", "es": "Spanish", "et": "Estonian", "fa": "Persian",
    "fi": "Finnish", "fr": "French", "ga": "Irish", "gu": "Gujarati", "he": "Hebrew", "hi": "Hindi",
    "hr": "Croatian", "hu": "Hungarian", "id": "Indonesian", "it": "Italian", "ja": "Japanese",
    "kn": "Kannada", "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "ml": "Malayalam", "mr": "Marathi",
    "nb": "Norwegian Bokmål", "nl": "Dutch", "no": "Norwegian", "pa": "Punjabi", "pl": "Polish",
    "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak", "sl": "Slovenian", "sr": "Serbian",
    "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "th": "Thai", "tr": "Turkish",
    "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese",
}

SYSTEM_PROMPT = (
    "You are a professional translator. Translate the user's text from {src_lang} ({src_code}) into "
    "{tgt_lang} ({tgt_code}). Reply with the translation only, as a single text: no quotes, labels, notes, "
    "explanations or alternatives. Translate faithfully and completely, keeping the meaning, tone and "
    "punctuation; add nothing."
)
USER_PROMPT = "{text}"
BATCH_SYSTEM_PROMPT = (
    "You are a professional translator. The user sends {count} numbered texts in {src_lang} ({src_code}) as a "
    "JSON array of objects with an id and a text. Translate each text into {tgt_lang} ({tgt_code}), "
    "faithfully and completely, keeping its meaning, tone and punctuation. Reply with a JSON array only: one "
    "object per text, in the same order, each with the text's id and its translation (fields id and "
    "translation). No notes, explanations or alternatives."
)
BATCH_USER_PROMPT = "{texts}"

LANGUAGE_FIELDS = frozenset({"src_lang", "tgt_lang", "src_code", "tgt_code"})
SINGLE_FIELDS = LANGUAGE_FIELDS | {"text"}
BATCH_FIELDS = LANGUAGE_FIELDS | {"count", "texts"}
MESSAGE_TOKENS = 4  # per message: role and separators
REPLY_PRIMING_TOKENS = 3


def fields_of(template: str) -> set[str]:
    """The placeholders of a template (ValueError on a malformed one: a lone brace)."""
    names = set()
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise ValueError(f"placeholder {{{name}{'!' + conversion if conversion else ''}"
                             f"{':' + spec if spec else ''}}} is not one of the plain names allowed")
        names.add(name)
    return names


def check_template(template: str, allowed: Iterable[str], required: Iterable[str] = ()) -> str:
    """``template`` if its placeholders are among ``allowed`` and include ``required``, else ValueError."""
    found = fields_of(template)
    unknown = sorted(found - set(allowed))
    if unknown:
        raise ValueError(f"unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; allowed: "
                         f"{', '.join('{' + a + '}' for a in sorted(allowed))} (write a literal brace twice)")
    missing = sorted(set(required) - found)
    if missing:
        raise ValueError(f"needs {', '.join('{' + m + '}' for m in missing)}: where the text goes")
    return template


def language_name(code: str, names: Mapping[str, str] | None = None) -> str | None:
    """The English name of a language code (``pt-BR`` falls back to ``pt``), or None if unknown."""
    names = {**LANGUAGE_NAMES, **(names or {})}
    return names.get(code) or names.get(code.split("-")[0].split("_")[0].lower())


def render(template: str, src: str, tgt: str, names: Mapping[str, str] | None = None, **values: object) -> str:
    """``template`` filled for the language pair (an unknown language is named by its code)."""
    return template.format(src_lang=language_name(src, names) or src, tgt_lang=language_name(tgt, names) or tgt,
                           src_code=src, tgt_code=tgt, **values)


def batch_payload(texts: list[str]) -> str:
    """The texts of a batch as the ``{texts}`` of the batch user template: a numbered JSON array."""
    return json.dumps([{"id": i, "text": t} for i, t in enumerate(texts, 1)], ensure_ascii=False)


def prompt_hash(*templates: str) -> str:
    """SHA-256 of the templates (in order), recorded on every row they carried and in the identity."""
    digest = hashlib.sha256()
    for template in templates:
        digest.update(template.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


def estimate_tokens(text: str) -> int:
    """Tokens a text is taken to cost before it is sent: ceil(UTF-8 bytes / 3) (see the module docstring)."""
    return math.ceil(len(text.encode("utf-8")) / 3)


def messages_tokens(messages: Iterable[str]) -> int:
    """The prompt tokens of a chat request with these message contents."""
    return sum(estimate_tokens(m) + MESSAGE_TOKENS for m in messages) + REPLY_PRIMING_TOKENS


def max_output_tokens(texts: Iterable[str], ratio: float, base: int, batched: bool) -> int:
    """A request's max_tokens: for each text ``base + ratio × estimate_tokens(text)``, plus, in a
    batch, the JSON around each translation (about 12 tokens per text)."""
    texts = list(texts)
    bound = sum(base + math.ceil(ratio * estimate_tokens(t)) for t in texts)
    return bound + (12 * len(texts) + 2 if batched else 0)
