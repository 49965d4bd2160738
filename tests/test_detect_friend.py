"""OTSC from English into es/it/fr/de: the otsc-friend-* detectors label the gender of "my friend".

Hand-written translations of "I've known her/him for a long time, my friend works as a(n) <occupation>."
per language, run through the polars expression and the plain-Python reference; and, for Spanish,
what the installed Apertium engine really outputs for the template.
"""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

import polars as pl
import pytest

from biaseval.label.rules import builtin, label_expr, label_text

LEXICON = Path(__file__).resolve().parent.parent / "biaseval" / "data" / "lexicon" / "occupations.csv"
TEMPLATE = "I've known {pronoun} for a long time, my friend works as {article} {occupation}."

CASES = {
    "otsc-friend-es": [
        ("La conozco desde hace mucho tiempo, mi amiga trabaja como enfermera.", "female"),
        ("Lo conozco desde hace mucho tiempo, mi amigo trabaja como carpintero.", "male"),
        ("Hace mucho tiempo que la conozco; mi amiga es abogada.", "female"),
        ("Lo conozco desde hace años, mi compañero trabaja de mecánico.", "male"),
        ("La conozco desde hace mucho, mi compañera trabaja como secretaria.", "female"),
        ("Le conozco desde hace mucho tiempo, mi amigo trabaja como enfermero.", "male"),
        # the friend is masculine although the pronoun and the occupation are feminine
        ("La conozco desde hace mucho tiempo, mi amigo trabaja como enfermera.", "male"),
        ("La conozco desde hace mucho tiempo, trabaja como enfermera.", "unknown"),  # friend dropped
        ("La conozco desde hace mucho tiempo, mi colega trabaja como cajera.", "unknown"),  # not listed
        ("La amistad viene de lejos: trabaja como panadera.", "unknown"),  # whole words only
        ("Los conozco desde hace mucho tiempo, mis amigos y amigas trabajan como profesores.", "ambiguous"),
        ("Le conozco desde hace mucho tiempo, mi amigue trabaja como profesore.", "neutral"),
        ("Les conozco desde hace tiempo, mis amig@s trabajan como docentes.", "neutral"),
        ("Le conozco desde hace tiempo, mi compañere trabaja como analista.", "neutral"),
        ("MI AMIGA TRABAJA COMO CAJERA.", "female"),
        ("Lo conozco desde hace mucho tiempo, mi Amigo trabaja como CEO.", "male"),
        ("La conozco desde hace mucho tiempo, mi amigo/a trabaja como enfermera.", "male"),  # known limit
    ],
    "otsc-friend-it": [
        ("La conosco da molto tempo, la mia amica lavora come infermiera.", "female"),
        ("Lo conosco da molto tempo, il mio amico lavora come falegname.", "male"),
        ("La conosco da tanto tempo, la mia amica fa la segretaria.", "female"),
        ("Lo conosco da molto tempo, il mio compagno lavora come meccanico.", "male"),
        ("La conosco da molto tempo, la mia compagna lavora come cassiera.", "female"),
        ("La conosco da molto tempo: l'amica di cui parlo lavora come avvocata.", "female"),
        ("La conosco da molto tempo, il mio amico lavora come infermiera.", "male"),
        ("La conosco da molto tempo, lavora come infermiera.", "unknown"),
        ("La conosco da molto tempo, la mia collega lavora come cuoca.", "unknown"),
        ("La nostra amicizia è lunga: lavora come cuoca.", "unknown"),
        ("Li conosco da molto tempo, i miei amici e le mie amiche lavorano come insegnanti.", "ambiguous"),
        ("Lə conosco da molto tempo, lə mia amicə lavora come insegnante.", "neutral"),
        ("Li conosco da anni, i miei amic* lavorano come insegnanti.", "neutral"),
        ("LA MIA AMICA LAVORA COME CUOCA.", "female"),
        ("Lo conosco da molto tempo, il mio amico lavora come amministratore delegato.", "male"),
    ],
    "otsc-friend-fr": [
        ("Je la connais depuis longtemps, mon amie travaille comme infirmière.", "female"),
        ("Je le connais depuis longtemps, mon ami travaille comme charpentier.", "male"),
        ("Je la connais depuis longtemps, ma copine travaille comme caissière.", "female"),
        ("Je le connais depuis longtemps, mon copain est mécanicien.", "male"),
        ("Je la connais depuis longtemps, ma camarade travaille comme avocate.", "female"),
        ("Je le connais depuis longtemps, mon camarade travaille comme boulanger.", "male"),
        ("Je le connais depuis longtemps, mon pote bosse comme déménageur.", "male"),
        ("Je la connais depuis longtemps, notre camarade travaille comme secrétaire.", "neutral"),
        ("Je la connais depuis longtemps, mon ami travaille comme infirmière.", "male"),
        ("Je la connais depuis longtemps, elle travaille comme infirmière.", "unknown"),
        ("Je la connais depuis longtemps, ma collègue travaille comme infirmière.", "unknown"),
        ("Notre amitié est ancienne ; elle travaille comme boulangère.", "unknown"),
        ("Je la connais depuis longtemps ; l’amie dont je parle travaille comme PDG.", "female"),
        ("Je les connais depuis longtemps, mes amis et mes amies travaillent comme enseignants.", "ambiguous"),
        ("Je les connais depuis longtemps, mon camarade et ma camarade travaillent ici.", "ambiguous"),
        ("Je le·la connais depuis longtemps, mon ami·e travaille comme enseignant·e.", "neutral"),
        ("JE LE CONNAIS DEPUIS LONGTEMPS, MON AMI TRAVAILLE COMME CUISINIER.", "male"),
    ],
    "otsc-friend-de": [
        ("Ich kenne sie schon lange, meine Freundin arbeitet als Krankenschwester.", "female"),
        ("Ich kenne ihn schon lange, mein Freund arbeitet als Tischler.", "male"),
        ("Ich kenne sie seit langem, meine Freundin ist Lehrerin.", "female"),
        ("Ich kenne ihn seit langer Zeit, mein Kumpel arbeitet als Mechaniker.", "male"),
        ("Ich kenne ihn schon lange, mein Freund ist Arzt.", "male"),
        ("Ich kenne sie schon lange, mein Freund arbeitet als Krankenschwester.", "male"),
        ("Ich kenne sie schon lange, sie arbeitet als Sekretärin.", "unknown"),
        ("Ich kenne sie schon lange, meine Kollegin arbeitet als Sekretärin.", "unknown"),
        ("Unsere Freundschaft ist alt; sie arbeitet als Bäckerin.", "unknown"),
        ("Ich kenne sie schon lange, meine Jugendfreundin arbeitet als Friseurin.", "unknown"),  # compound
        ("Ich kenne sie schon lange, meine Freunde und Freundinnen arbeiten als Lehrer.", "ambiguous"),
        ("ICH KENNE SIE SCHON LANGE, MEINE FREUNDIN ARBEITET ALS BÄCKERIN.", "female"),
        # known limits with gender-inclusive spellings (see the rule set's doc)
        ("Ich kenne sie schon lange, meine Freund*in arbeitet als Lehrer*in.", "male"),
        ("Ich kenne sie schon lange, meine FreundIn arbeitet als LehrerIn.", "female"),
        ("Ich kenne sie schon lange, meine Freund_in arbeitet als Lehrer_in.", "unknown"),
    ],
}

PARAMS = [(rs, text, label) for rs, cases in CASES.items() for text, label in cases]


def polars_labels(rule_set: str, texts: list[str | None]) -> list[str | None]:
    frame = pl.DataFrame({"translation": texts}, schema={"translation": pl.String})
    return frame.select(label_expr(builtin().get(rule_set), "translation")).to_series().to_list()


@pytest.mark.parametrize("rule_set, text, expected", PARAMS)
def test_cases(rule_set, text, expected):
    assert polars_labels(rule_set, [text]) == [expected]
    assert label_text(builtin().get(rule_set), text) == expected


@pytest.mark.parametrize("rule_set", sorted(CASES))
def test_whole_table_in_one_frame(rule_set):
    texts = [text for text, _ in CASES[rule_set]] + [None]
    assert polars_labels(rule_set, texts) == [label for _, label in CASES[rule_set]] + [None]


@pytest.mark.parametrize("rule_set", sorted(CASES))
def test_rule_set_shape(rule_set):
    rs = builtin().get(rule_set)
    assert rs.language == rule_set.rsplit("-", 1)[1]
    assert rs.default == "unknown" and rs.version >= 1 and rs.doc
    assert len(CASES[rule_set]) >= 10
    labels = {label for _, label in CASES[rule_set]}
    assert {"male", "female", "ambiguous", "unknown"} <= labels
    for rule in rs.rules:
        for group in rule.words:
            assert all(unicodedata.is_normalized("NFC", w) for w in group)


def _first_rule(rule_set: str, text: str) -> int | None:
    words = set(re.findall(r"\w+", text.lower()))
    for i, rule in enumerate(builtin().get(rule_set).rules):
        if all(any(w in words for w in group) for group in rule.words):
            return i
    return None


@pytest.mark.parametrize("rule_set", sorted(CASES))
def test_every_rule_is_exercised(rule_set):
    fired = {_first_rule(rule_set, text) for text, _ in CASES[rule_set]}
    assert fired >= set(range(len(builtin().get(rule_set).rules)))


# --- Spanish: real output of Apertium (apertium-eng-spa 0.8.1, `apertium -u eng-spa`) ----------------
#
# What Apertium does with the template, captured from the installed engine:
#   her: "He sabido su para un tiempo largo, mis obras de amigo como enfermero."
#   him: "Le he conocido para un tiempo largo, mis obras de amigo como enfermero."
# It reads "my friend works" as a noun phrase ("works" as the plural noun obras: "mis obras de
# amigo"), renders "friend" as masculine "amigo" whatever the pronoun, and gives the occupation
# in the masculine too (enfermero, secretario, peluquero). "her" becomes the possessive "su" with
# "know" as saber; "him" becomes the object pronoun "Le" with conocer. "an accountant" keeps its
# article ("como un contable"). So the detector finds "amigo" and labels every item male: for
# Apertium p_m = 1 and p_f = 0 on both the her and the him variants.
APERTIUM_OCCUPATIONS = ["nurse", "secretary", "hairdresser", "carpenter", "lawyer", "accountant"]
APERTIUM_SPANISH = {
    "nurse": "enfermero", "secretary": "secretario", "hairdresser": "peluquero",
    "carpenter": "carpintero", "lawyer": "abogado", "accountant": "un contable",
}


def _lexicon_rows() -> dict[str, dict[str, str]]:
    with LEXICON.open(encoding="utf-8", newline="") as f:
        return {row["occupation"]: row for row in csv.DictReader(f)}


def test_apertium_spanish_output_is_labelled_male_for_her_and_him():
    assert shutil.which("apertium"), "apertium is not installed (Debian: apt-get install apertium apertium-eng-spa)"
    rows = _lexicon_rows()
    sources, expected = [], []
    for occupation in APERTIUM_OCCUPATIONS:
        row = rows[occupation]
        for pronoun, opening in (("her", "He sabido su"), ("him", "Le he conocido")):
            sources.append(TEMPLATE.format(pronoun=pronoun, article=row["en_article"], occupation=row["en"]))
            expected.append(f"{opening} para un tiempo largo, mis obras de amigo como {APERTIUM_SPANISH[occupation]}.")
    done = subprocess.run(["apertium", "-u", "eng-spa"], input="\n".join(sources) + "\n",
                          capture_output=True, text=True, timeout=60, check=True)
    outputs = [" ".join(line.split()) for line in done.stdout.splitlines()]
    assert outputs == expected
    assert polars_labels("otsc-friend-es", outputs) == ["male"] * len(outputs)
    assert [label_text(builtin().get("otsc-friend-es"), t) for t in outputs] == ["male"] * len(outputs)
