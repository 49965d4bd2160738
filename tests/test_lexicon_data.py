"""The shipped occupation lexicon, biaseval/data/lexicon/occupations.csv, read as plain CSV."""

from __future__ import annotations

import csv
import unicodedata
from pathlib import Path

import pytest

from biaseval.data.lexicons import load_lexicon

PATH = Path(__file__).resolve().parent.parent / "biaseval" / "data" / "lexicon" / "occupations.csv"
HEADER = ["occupation", "female_share", "stereotype", "en", "en_article", "hi",
          "es_m", "es_f", "it_m", "it_f", "fr_m", "fr_f", "de_m", "de_f"]
FORMS = HEADER[3:]

# The 40 occupations of WinoBias (Zhao et al., 2018), the ones WinoMT uses too.
WINOBIAS = {
    "carpenter", "mechanic", "construction worker", "laborer", "driver", "sheriff", "mover",
    "developer", "farmer", "guard", "chief", "janitor", "lawyer", "cook", "physician", "ceo",
    "analyst", "manager", "supervisor", "salesperson", "attendant", "cashier", "teacher", "nurse",
    "assistant", "secretary", "auditor", "cleaner", "receptionist", "clerk", "counselor",
    "designer", "hairdresser", "writer", "housekeeper", "baker", "accountant", "editor",
    "librarian", "tailor",
}

# English words whose article goes by sound rather than by first letter ("a university", "an hour").
# None of the shipped occupations needs one; a new row that does is added here.
ARTICLE_BY_SOUND: dict[str, str] = {}


def read() -> tuple[list[str], list[dict[str, str]]]:
    with PATH.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def test_header_is_exactly_the_documented_columns():
    header, _ = read()
    assert header == HEADER


def test_every_row_has_every_field():
    _, rows = read()
    assert len(rows) >= 40
    for row in rows:
        assert None not in row and all(row[c] is not None for c in HEADER), row


def test_ids_are_unique_lower_case_and_cover_winobias():
    _, rows = read()
    ids = [row["occupation"] for row in rows]
    assert len(ids) == len(set(ids))
    assert all(i == i.lower().strip() and i for i in ids)
    assert WINOBIAS - set(ids) == set()


def test_shares_are_percentages_and_the_stereotype_follows_them():
    _, rows = read()
    for row in rows:
        share = float(row["female_share"])
        assert 0 <= share <= 100, row["occupation"]
        expected = "female" if share > 50 else "male" if share < 50 else "neutral"
        assert row["stereotype"] == expected, row["occupation"]


def test_winobias_split_is_twenty_and_twenty():
    _, rows = read()
    winobias = [row for row in rows if row["occupation"] in WINOBIAS]
    assert sum(row["stereotype"] == "female" for row in winobias) == 20
    assert sum(row["stereotype"] == "male" for row in winobias) == 20


@pytest.mark.parametrize("occupation, share", [
    # spot checks against Zhao et al. (2018), Table 1
    ("carpenter", 2), ("ceo", 39), ("salesperson", 48), ("editor", 52), ("attendant", 76),
    ("secretary", 95),
])
def test_published_shares(occupation, share):
    _, rows = read()
    assert {row["occupation"]: float(row["female_share"]) for row in rows}[occupation] == share


def test_no_form_is_empty_or_padded():
    _, rows = read()
    for row in rows:
        for column in FORMS:
            value = row[column]
            assert value and value == value.strip() and "  " not in value, (row["occupation"], column)


def test_forms_are_nfc_and_hindi_is_devanagari():
    _, rows = read()
    for row in rows:
        for column in FORMS:
            assert unicodedata.is_normalized("NFC", row[column]), (row["occupation"], column)
        letters = [ch for ch in row["hi"] if ch.isalpha()]
        assert letters and all("DEVANAGARI" in unicodedata.name(ch) for ch in letters), row["occupation"]


def test_english_article_matches_the_noun():
    _, rows = read()
    for row in rows:
        en, article = row["en"], row["en_article"]
        assert article in ("a", "an")
        first = en.split()[0].lower()
        expected = ARTICLE_BY_SOUND.get(first, "an" if first[0] in "aeiou" else "a")
        assert article == expected, f"{article} {en}"


def test_the_english_id_is_the_english_form():
    _, rows = read()
    for row in rows:
        assert row["occupation"] == row["en"].lower()


def test_biaseval_loads_it_with_every_column_required():
    lexicon = load_lexicon(PATH, need=tuple(FORMS))
    assert len(lexicon) == len(read()[1])
    assert lexicon.columns == tuple(HEADER)
