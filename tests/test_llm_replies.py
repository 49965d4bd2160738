"""Reading an LLM's reply strictly (biaseval/translate/backends/llm_replies.py), the prompt templates
and token estimates (llm_prompts.py), and the offline language check of one reply (language_guess)."""

from __future__ import annotations

import json

import pytest

from biaseval.translate.backends.language_guess import reply_reads_as
from biaseval.translate.backends.llm_prompts import (
    BATCH_FIELDS,
    SINGLE_FIELDS,
    batch_payload,
    check_template,
    estimate_tokens,
    language_name,
    max_output_tokens,
    messages_tokens,
    prompt_hash,
    render,
)
from biaseval.translate.backends.llm_replies import read_batch, read_reply, strip_wrappers
from biaseval.translate.base import SplitBatch

SOURCE = "I've known her for a long time, my friend works as a nurse."
ES = "La conozco desde hace mucho tiempo, mi amiga trabaja como enfermera."
DE = "Ich kenne sie schon lange, meine Freundin arbeitet als Krankenschwester."


def read(reply, source=SOURCE, tgt="es", **kw):
    return read_reply(reply, source, "en", tgt, **kw)


@pytest.mark.parametrize("reply", [
    ES, f"  {ES}\n", f'"{ES}"', f"“{ES}”", f"«{ES}»", f"„{ES}“", f"'{ES}'",
    f"Translation: {ES}", f"Spanish translation: {ES}", f"**Translation:** {ES}", f"Spanish: {ES}",
    f"Traducción: {ES}", f"```\n{ES}\n```", f"```text\n{ES}\n```", f"Translation:\n```\n{ES}\n```",
    f"<translation>{ES}</translation>", f'Translation: "{ES}"',
])
def test_wrappers_are_stripped(reply):
    assert read(reply).translation == ES


def test_quotes_of_the_source_are_kept():
    quoted = '"Hello," she said.'
    assert strip_wrappers('"Hola", dijo ella.', quoted, "es") == '"Hola", dijo ella.'
    assert strip_wrappers('"Hola"', '"Hello"', "es") == '"Hola"'  # the source was quoted: so is its translation
    # quotes inside are not a wrapper
    assert strip_wrappers('"Sí" y "no"', "Yes and no", "es") == '"Sí" y "no"'


@pytest.mark.parametrize("reply", [
    "I'm sorry, but I can't help with that request.",
    "I cannot translate this text.",
    "As an AI language model, I must decline to translate content like this.",
    "Sorry, I can't assist with translating this.",
    "Lo siento, no puedo ayudar con esa solicitud.",
    "Je suis désolé, je ne peux pas traduire ce texte.",
    "Mi dispiace, non posso tradurre questo testo.",
    "Es tut mir leid, ich kann diesen Text nicht übersetzen.",
])
def test_refusals(reply):
    reading = read(reply)
    assert reading.translation is None and reading.rejected == "refusal" and reading.raw == reply


def test_an_apology_that_is_the_translation_is_not_a_refusal():
    # no word of translating, helping or requests: the source said sorry, and so does its translation
    assert read("I'm sorry I was late.", source="Lo siento, llegué tarde.", tgt="en").translation == \
        "I'm sorry I was late."


@pytest.mark.parametrize("reply", [
    f"Sure! Here is the translation:\n\n{ES}",
    f"Here's the Spanish translation: {ES}",
    f"The translation is: {ES}",
    f"{ES}\n\nNote: \"amiga\" assumes the friend is female.",
    f"{ES} (Note: the gender follows the pronoun.)",
    f"{ES}\nAlternatively: Hace mucho que la conozco.",
    f"Aquí está la traducción: {ES}",
    ES + " " + ES + " " + ES + " " + ES,
])
def test_explanations(reply):
    assert read(reply).rejected == "explanation"


def test_a_source_of_several_lines_may_have_a_translation_of_as_many():
    source = "First line.\nSecond line."
    assert read("Primera línea.\nSegunda línea.", source=source).translation == "Primera línea.\nSegunda línea."
    assert read("Primera línea.\nSegunda línea.\nTercera.", source=source).rejected == "explanation"


def test_empty_and_flagged_replies():
    assert read("").rejected == "empty" and read(None).rejected == "empty"
    assert read('""').rejected == "empty" and read("```\n```").rejected == "empty"
    flagged = read(None, refused=True)
    assert flagged.rejected == "refusal"
    assert read("I can't do that.", refused=True).raw == "I can't do that."


def test_wrong_language():
    assert read(SOURCE).rejected == "wrong-language"  # the source back, untranslated
    assert read(DE).rejected == "wrong-language"  # German where Spanish was asked for
    assert read(ES).translation == ES
    assert read(DE, tgt="de").translation == DE
    assert read("Hola.", source="Hello.").translation == "Hola."  # too short to judge
    assert read(SOURCE, tgt="xx").translation == SOURCE  # no word list for the target: not judged
    # the check can be turned off
    assert read(SOURCE, checks=("refusal", "explanation")).translation == SOURCE


def test_reply_reads_as():
    assert reply_reads_as(SOURCE, "es") == "en"
    assert reply_reads_as(SOURCE, "hi") == "en"  # English where Devanagari was asked for
    assert reply_reads_as("मैं उसे बहुत समय से जानता हूँ, मेरी दोस्त नर्स है।", "hi") is None
    assert reply_reads_as("La conosco da molto tempo, la mia amica lavora come infermiera.", "es") == "it"
    assert reply_reads_as(ES, "es") is None
    assert reply_reads_as("[es] .esrun a sa skrow dneirf ym", "es") is None
    # two of another language's words are not enough in a short reply
    assert reply_reads_as("Mi amiga trabaja as my", "es") is None


def test_batch_replies():
    sources = ["one", "two", "three"]
    reply = json.dumps([{"id": 1, "translation": "uno"}, {"id": 2, "translation": "Translation: dos"},
                        {"id": 3, "translation": "I'm sorry, I can't translate this request."}])
    readings = read_batch(reply, sources, "en", "es")
    assert [r.translation for r in readings] == ["uno", "dos", None]
    assert readings[2].rejected == "refusal"
    fenced = "```json\n" + json.dumps({"translations": [{"id": 1, "translation": "a"}]}) + "\n```"
    assert [r.translation for r in read_batch(fenced, ["x"], "en", "es")] == ["a"]


@pytest.mark.parametrize("reply, why", [
    ('[{"id": 1, "translation": "uno"}, {"id": 2, "translation": "dos"}]', "2 translations for 3 texts"),
    ('[{"id": 2, "translation": "dos"}, {"id": 1, "translation": "uno"}, {"id": 3, "translation": "tres"}]',
     "in order"),
    ('["uno", "dos", "tres"]', "is not"),
    ("uno\ndos\ntres", "not a JSON array"),
    ('{"a": 1}', "not a JSON array"),
    (None, "not a JSON array"),
])
def test_batch_replies_that_do_not_match_split_the_batch(reply, why):
    with pytest.raises(SplitBatch, match=why):
        read_batch(reply, ["one", "two", "three"], "en", "es")


def test_templates_are_checked():
    assert check_template("Translate {src_lang} into {tgt_lang}: {text}", SINGLE_FIELDS, ("text",))
    with pytest.raises(ValueError, match=r"unknown placeholder\(s\) \{target\}"):
        check_template("into {target}: {text}", SINGLE_FIELDS)
    with pytest.raises(ValueError, match=r"needs \{text\}"):
        check_template("Translate this.", SINGLE_FIELDS, ("text",))
    with pytest.raises(ValueError, match=r"needs \{texts\}"):
        check_template("{text}", BATCH_FIELDS | {"text"}, ("texts",))
    with pytest.raises(ValueError):
        check_template("a lone { brace {text}", SINGLE_FIELDS)
    with pytest.raises(ValueError, match="plain names"):
        check_template("{text!r}", SINGLE_FIELDS)
    assert check_template("JSON like {{\"id\": 1}} then {text}", SINGLE_FIELDS, ("text",))


def test_rendering_and_language_names():
    assert render("{src_lang} ({src_code}) -> {tgt_lang} ({tgt_code}): {text}", "en", "pt-BR", text="hi") == \
        "English (en) -> Portuguese (pt-BR): hi"
    assert render("{tgt_lang}", "en", "pt-BR", {"pt-BR": "Brazilian Portuguese"}) == "Brazilian Portuguese"
    assert language_name("xx") is None and render("{tgt_lang}", "en", "xx") == "xx"
    payload = json.loads(batch_payload(["a", "ñ \"b\""]))
    assert payload == [{"id": 1, "text": "a"}, {"id": 2, "text": "ñ \"b\""}]
    assert prompt_hash("a", "b") != prompt_hash("ab", "") != prompt_hash("b", "a")


def test_token_estimates_follow_the_documented_rule():
    assert estimate_tokens("abcdef") == 2 and estimate_tokens("abcdefg") == 3  # ceil(bytes / 3)
    assert estimate_tokens("नर्स") == 4  # 12 bytes of Devanagari
    assert messages_tokens(["abc", "abcdef"]) == (1 + 4) + (2 + 4) + 3
    assert max_output_tokens(["abc"], 4.0, 32, batched=False) == 32 + 4
    assert max_output_tokens(["abc", "abcdef"], 4.0, 32, batched=True) == (32 + 4) + (32 + 8) + 12 * 2 + 2
