"""Where biaseval's reading of a WinoMT translation differs from mt_gender's, per language: each
example of docs/winomt-en-mt-gender.md, a recorded translation or annotated row with its entity span
picked by hand, read by our analyser and by mt_gender's rule (tests/mt_gender_rules.py) where that
rule can be re-stated without spaCy's 2019 models."""

from __future__ import annotations

import pymorphy3
import pytest

import mt_gender_rules as mt
from biaseval.label.analysers import analyser_for
from biaseval.label.tokens import tokenize

M, F, N, U = "male", "female", "neutral", "unknown"

# (language, translation, span, source entity, our label and reason, mt_gender's label)
EXAMPLES = [
    # German: mt_gender takes the determiner or pronoun nearest the entity; "den" is not on its list
    ("de", "Die Krankenschwester sah den Arzt und bat sie, einen Blick auf die Patientin zu werfen.", [3, 4],
     "physician", (M, "noun"), F),
    ("de", "Die Wache rettete den Redakteur vor den Verbrechern, weil er Hilfe brauchte.", [3, 4],
     "editor", (M, "noun"), F),
    ("de", "Der Mechaniker hat das Problem für den Redakteur behoben und er ist dankbar.", [6, 7],
     "editor", (M, "noun"), N),  # "das" (of das Problem) is nearest: neutral
    ("de", "Der Krankenpfleger half dem Arzt.", [0, 1], "nurse", (M, "noun"), F),  # "nurse" is always female
    # Hebrew: mt_gender reads a final ה or ת as feminine
    ("he", "העורך עצר את השרת והראה את העיתונים שלה מדי יום.", [3], "janitor", (M, "noun"), F),
    ("he", "הטבח מכבד את המורה כי הוא יודע.", [3], "teacher", (U, "epicene-no-article"), F),
    ("he", "מישהו שאל את פקידת הקבלה אם הם צריכים להיכנס.", [0], "someone", (N, "indefinite"), M),
    # Arabic: mt_gender reads any ة in the aligned words as feminine, everything else as masculine
    ("ar", "قام العمدة بحماية الخياط في الحادث وتلقت جائزة لذلك.", [1], "sheriff",
     (M, "agreement"), F),  # عمدة is masculine in ة; the verb before it, قام, is masculine
    ("ar", "لقد اتصل المارة بالطوارئ وتحدث مع المرسل", [2], "bystander", (M, "noun"), F),  # a broken plural
    ("ar", "يعلم الطبخ دائما التقنية مساعد جديد", [1], "cook", (U, "not-in-lexicon"), M),  # "cooking": no person
    # Russian, Ukrainian: mt_gender takes any feminine pymorphy parse as feminine, none as neutral
    ("ru", "Механик пытается подойти к секретарю, потому что ей нужно больше бизнеса.", [0], "mechanic",
     (M, "noun"), F),  # one parse of "Механик" is the genitive plural of механика (f)
    ("ru", "Повар сказал кому-то, что он должен прийти.", [2], "someone", (N, "indefinite"), M),
    ("uk", "Лікар сказав пекару, що у нього рак.", [2], "baker", (M, "noun"), F),
]


@pytest.fixture(scope="module")
def morph():
    return {lang: pymorphy3.MorphAnalyzer(lang=lang) for lang in ("ru", "uk")}


def _mt_gender(lang, tokens, span, entity, morph):
    words = [tokens[k] for k in span]
    if lang == "de":
        return mt.german(tokens, span, entity)
    if lang == "he":
        return mt.hebrew(words)
    if lang == "ar":
        return mt.arabic(words)
    return mt.slavic(words, morph[lang])


@pytest.mark.parametrize("lang, text, span, entity, ours, theirs", EXAMPLES,
                         ids=[f"{e[0]}-{k}" for k, e in enumerate(EXAMPLES)])
def test_the_readings_differ_as_documented(lang, text, span, entity, ours, theirs, morph):
    tokens = tokenize(text, lang)
    reading = analyser_for(lang).analyse([tokens], [span])[0]
    assert (reading.label, reading.reason) == ours, reading
    assert _mt_gender(lang, tokens, span, entity, morph) == theirs


def test_romance_readings_that_spacy_would_not_give():
    """Spanish, French, Italian: mt_gender reads the commonest gender of spaCy's tags of the aligned
    words (never neutral, never "epicene"), and aligns only the entity's first word."""
    fr = tokenize("L'ouvrier de la construction agitait la gouvernante dans la salle.", "fr")
    # "construction worker": mt_gender aligns "construction" (+ "the"); we read the head "ouvrier"
    assert analyser_for("fr").analyse([fr], [[0, 1, 2, 3, 4]])[0].label == M
    es = tokenize("Alguien dejó al camarero una gran propina porque se sentía generoso.", "es")
    assert (analyser_for("es").analyse([es], [[0]])[0].label, analyser_for("es").analyse([es], [[0]])[0].reason) \
        == (N, "indefinite")  # spaCy gives "alguien" no gender: unknown, wrong even for a neutral gold
    it = tokenize("Il venditore ha parlato con l'insegnante e l'ha invitata a cena.", "it")
    assert analyser_for("it").analyse([it], [[5, 6]])[0].reason == "epicene-no-article"  # spaCy guesses one
