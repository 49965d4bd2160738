"""The Italian grammatical-gender tagger (biaseval/label/italian.py) on a hand-checked table of words
and short phrases, plus properties: case and punctuation do not matter, batches match singles,
and the lexicon is consistent."""

from __future__ import annotations

from importlib import resources

import pytest

from biaseval.errors import DataError
from biaseval.label.italian import LABELS, italian_gender, italian_genders
from biaseval.label.italian_lexicon import lexicon, parse_lexicon

M, F, B, U = "masculine", "feminine", "both", "unknown"

TABLE: list[tuple[str | None, str]] = [
    # determiners + nouns: the determiner decides when it marks a gender
    ("il medico", M),
    ("la medico", F),            # a masculine-form profession naming a woman
    ("l'infermiera", F),
    ("l'infermiere", M),
    ("un'infermiera", F),
    ("un infermiere", M),
    ("le infermiere", F),
    ("gli infermieri", M),
    ("lo studente", M),
    ("la studentessa", F),
    ("gli studenti", M),
    ("le studentesse", F),
    ("i bambini", M),
    ("le bambine", F),
    ("l'attore", M),
    ("l'attrice", F),
    ("un amico", M),
    ("un'amica", F),
    ("uno zio", M),
    ("la zia", F),
    ("il cantante", M),
    ("la cantante", F),
    ("l'insegnante", B),         # l' marks no gender, insegnante is common gender
    ("un'insegnante", F),
    ("un insegnante", M),
    ("l'artista", B),
    ("un'artista", F),
    ("il pilota", M),
    ("la pilota", F),
    ("il collega", M),
    ("la collega", F),
    ("il manager", M),           # an English loan: the article decides
    ("la manager", F),
    ("il puma", M),              # -a noun, masculine by its article
    ("la radio", F),
    ("le mani", F),
    ("i problemi", M),
    ("questa infermiera", F),
    ("quest'attrice", F),
    ("quell'uomo", M),
    ("mio padre", M),
    ("mia madre", F),
    ("i miei genitori", M),
    ("nessuna", F),
    ("due infermiere", F),       # plural: the -e form is the plural of infermiera
    # elided forms and articulated prepositions
    ("dell'uomo", M),
    ("della dottoressa", F),
    ("all'infermiera", F),
    ("bell'uomo", M),
    ("buon'amica", F),
    # lexicon: nouns whose form does not tell, or misleads
    ("uomo", M),
    ("donna", F),
    ("uomini", M),
    ("donne", F),
    ("padre", M),
    ("madre", F),
    ("marito", M),
    ("moglie", F),
    ("mogli", F),
    ("re", M),
    ("regina", F),
    ("principe", M),
    ("papà", M),
    ("mamma", F),
    ("nipote", B),
    ("collega", B),
    ("giornalista", B),
    ("cantante", B),
    ("insegnante", B),
    ("dottoressa", F),
    ("ingegnere", M),
    ("infermiere", M),           # the bare word is read as the masculine singular
    ("cameriere", M),
    ("signore", M),
    ("signora", F),
    ("suora", F),
    ("prete", M),
    ("sacerdote", M),
    ("eroe", M),
    ("eroina", F),
    ("dea", F),
    ("duca", M),
    ("contessa", F),
    ("celibe", M),
    ("nubile", F),
    ("genero", M),
    ("nuora", F),
    ("falegname", M),
    ("giudice", B),
    ("vigile", B),
    ("preside", B),
    ("testimone", B),
    ("parente", B),
    ("cliente", B),
    ("paziente", B),
    ("giovane", B),
    ("persona", F),              # epicene nouns keep their grammatical gender
    ("vittima", F),
    ("sentinella", F),
    # -o feminine, -a masculine, and -ante/-ente/-ista nouns that are not people
    ("mano", F),
    ("radio", F),
    ("foto", F),
    ("moto", F),
    ("auto", F),
    ("dinamo", F),
    ("problema", M),
    ("sistema", M),
    ("tema", M),
    ("programma", M),
    ("clima", M),
    ("poeta", M),
    ("profeta", M),
    ("papa", M),
    ("pianeta", M),
    ("cinema", M),
    ("dente", M),
    ("mente", F),
    ("gente", F),
    ("ristorante", M),
    ("rivista", F),
    ("pesticida", M),
    ("studente", M),
    # suffixes
    ("scrittore", M),
    ("scrittrice", F),
    ("direttore", M),
    ("direttrice", F),
    ("pittrice", F),
    ("lavoratrice", F),
    ("imperatore", M),
    ("imperatrice", F),
    ("professore", M),
    ("professoressa", F),
    ("stazione", F),
    ("nazione", F),
    ("televisione", F),
    ("ragione", F),
    ("città", F),
    ("virtù", F),
    ("università", F),
    ("dentista", B),
    ("farmacista", B),
    ("autista", B),
    ("barista", B),
    ("pediatra", B),
    ("psichiatra", B),
    ("omicida", B),
    ("rappresentante", B),
    ("commerciante", B),
    ("dirigente", B),
    ("docente", B),
    ("assistente", B),
    ("presidente", B),
    # -o / -a
    ("avvocato", M),
    ("architetto", M),
    ("poliziotto", M),
    ("poliziotta", F),
    ("maestro", M),
    ("maestra", F),
    ("cuoco", M),
    ("cuoca", F),
    ("psicologo", M),
    ("psicologa", F),
    ("segretario", M),
    ("segretaria", F),
    ("ballerino", M),
    ("ballerina", F),
    ("casalinga", F),
    ("operaio", M),
    ("ragazza", F),
    # plurals
    ("medici", M),
    ("chirurghi", M),
    ("cuochi", M),
    ("colleghi", M),
    ("colleghe", F),
    ("giornalisti", M),
    ("giornaliste", F),
    ("ragazze", F),
    ("amiche", F),
    ("madri", F),
    ("padri", M),
    ("figli", M),
    ("zii", M),
    ("eroi", M),
    ("cantanti", B),
    ("insegnanti", B),
    ("nipoti", B),
    ("dottori", M),
    ("attori", M),
    ("attrici", F),
    ("professoresse", F),
    ("stazioni", F),
    ("sistemi", M),
    ("persone", F),
    # multi-word phrases: the head noun (the first noun), complements ignored
    ("donna poliziotto", F),
    ("giornalista sportivo", M),
    ("giornalista sportiva", F),
    ("giudice donna", F),
    ("vigile del fuoco", B),
    ("assistente di volo", B),
    ("agente di polizia", B),
    ("uomo d'affari", M),
    ("donna d'affari", F),
    ("professore di storia e geografia", M),
    ("bravo insegnante", M),
    ("brava insegnante", F),
    ("prima ballerina", F),
    ("primo ministro", M),
    ("ex moglie", F),
    ("ex-marito", M),
    # both genders given
    ("il/la giornalista", B),
    ("il / la giornalista", B),
    ("il/la manager", B),
    ("maestro/a", B),
    ("maestro(a)", B),
    ("l'infermiere/a", B),
    ("dottore/essa", B),
    ("attore/trice", B),
    ("amico/a", B),
    ("un/a insegnante", B),
    ("il dottore/la dottoressa", B),
    ("uomo o donna", B),
    ("fratelli e sorelle", B),
    ("il padre di Luca e la madre", B),
    ("madre e figlia", F),
    ("padre e figlio", M),
    ("tuttə", B),
    # contradictions: never resolved by a guess
    ("un'uomo", U),
    ("la padre", U),
    ("un attrice", U),
    ("il dottoressa", U),
    # English words left untranslated, non-nouns, nothing at all
    ("nurse", U),
    ("doctor", U),
    ("teacher", U),
    ("engineer", U),
    ("actress", U),
    ("waiter", U),
    ("secretary", U),
    ("she", U),
    ("the nurse", U),
    ("manager", U),
    ("chef", U),
    ("baby-sitter", U),
    ("grandpa", U),
    ("hero", U),
    ("infermiera / nurse", U),
    ("niente", U),
    ("ma", U),
    ("", U),
    ("   ", U),
    ("?!", U),
    (None, U),
]


def test_table_is_large_and_covers_every_label():
    assert len(TABLE) >= 100
    assert {label for _, label in TABLE} == set(LABELS)
    texts = [t for t, _ in TABLE]
    assert len(texts) == len(set(texts)), "a text is listed twice"


@pytest.mark.parametrize(("text", "expected"), TABLE, ids=[repr(t) for t, _ in TABLE])
def test_table(text, expected):
    assert italian_gender(text) == expected


def test_unlisted_e_nouns_are_unknown_not_guessed():
    # chiave and canzone are feminine, pane is masculine: an -e ending does not say which
    for word in ("chiave", "canzone", "pane", "la chiave", "il pane"):
        assert italian_gender(word) == {"la chiave": F, "il pane": M}.get(word, U)


@pytest.mark.parametrize(("text", "expected"), [(t, e) for t, e in TABLE if t and t.strip(" ?!")])
def test_case_does_not_matter(text, expected):
    assert italian_gender(text.upper()) == expected
    assert italian_gender(text.title()) == expected
    assert italian_gender(text.capitalize()) == expected


@pytest.mark.parametrize(("text", "expected"), [(t, e) for t, e in TABLE if t and t.strip(" ?!")])
def test_surrounding_punctuation_does_not_matter(text, expected):
    for wrapped in (f"{text}.", f" {text}! ", f'"{text}"', f"«{text}»", f"“{text}”", f"'{text}'", f"({text})?",
                    f"- {text}\n"):
        if wrapped.startswith("(") and text.endswith(")"):
            continue
        assert italian_gender(wrapped) == expected, wrapped


def test_typographic_apostrophes_and_spaces_after_elision():
    assert italian_gender("l’infermiera") == F
    assert italian_gender("un’amica") == F
    assert italian_gender("un' amica") == F
    assert italian_gender("dell’uomo") == M
    assert italian_gender("uomo d’affari") == M


def test_decomposed_accents_are_normalised():
    assert italian_gender("citta\u0300") == F
    assert italian_gender("papa\u0300") == M


def test_batch_matches_single_calls():
    texts = [t for t, _ in TABLE]
    assert italian_genders(texts) == [italian_gender(t) for t in texts] == [e for _, e in TABLE]
    assert italian_genders([]) == []
    assert italian_genders([None, "", "la"]) == [U, U, F]


def test_every_answer_is_a_label():
    for text in ["xyz", "123", "il 2", "l'", "un'", "/", "e", "o/a", "((la))", "la la la", "—", "🙂", "a b c d e f"]:
        assert italian_gender(text) in LABELS, text


# ---------------------------------------------------------------------------------------------
# the lexicon


def test_lexicon_loads_and_is_consistent():
    lex = lexicon()
    assert lex.version >= 1
    assert len(lex.nouns) >= 200
    assert set(lex.nouns.values()) == {M, F, B}
    for word in lex.sex_specific:
        assert lex.nouns[word] in (M, F)
    assert lex.determiners["l'"] == (None, "sg")
    assert lex.determiners["un'"] == (F, "sg")
    # a listed noun is not also a function word (it would never be reached)
    function_words = set(lex.determiners) | set(lex.articulated) | lex.prepositions | lex.conjunctions
    assert not (set(lex.nouns) & function_words)


def test_feminine_plurals_do_not_hide_masculine_singulars():
    """A listed feminine -a noun makes its -e plural feminine (rule 6f). Where that -e form is also a
    masculine singular person noun (infermiera -> infermiere), the singular must be listed itself."""
    lex = lexicon()
    plural_only = {"persone"}  # checked by hand: the plural of persona, and no singular noun
    for word, label in lex.nouns.items():
        if label != F or not word.endswith("a") or word[:-1] + "e" in plural_only:
            continue
        plural = word[:-1] + ("he" if word.endswith(("ca", "ga")) else "e")
        if plural.endswith(("iere", "one", "tore", "sore", "gnore", "gnere")):  # infermiere, padrone, signore
            assert plural in lex.nouns, f"{word} -> {plural} needs its own entry"


def _shipped() -> str:
    return resources.files("biaseval").joinpath("data/gender_it.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("old", "new", "what"),
    [
        ("    - collega\n", "    - collega\n    - donna\n", "'donna' is listed under feminine and both"),
        ("  il: m sg\n", "  il: masculine\n", "not 'GENDER NUMBER'"),
        ("sex_specific:\n  - uomo\n", "sex_specific:\n  - uomo\n  - collega\n", "'collega' is not a masculine"),
        ("    - uomo\n", "    - Uomo\n", "not a lower-case single word"),
        ("version: 1\n", "version: 1\nextra: []\n", "unknown keys ['extra']"),
    ],
)
def test_bad_lexicon_is_a_data_error_naming_the_entry(old, new, what):
    text = _shipped()
    assert old in text
    with pytest.raises(DataError) as info:
        parse_lexicon(text.replace(old, new, 1))
    assert "gender_it.yaml" in str(info.value) and what in str(info.value)
