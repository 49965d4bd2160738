"""Word lists for the embedding-bias study: the default list built from debiaswe (needs the mirrored
dataset: these tests fail, never skip, without it) and user lists in .txt and .csv."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

from biaseval.data import wordlists
from biaseval.errors import ConfigError, DataError
from biaseval.data.wordlists import CLASSES, SOURCES, default_word_list, default_word_list_exclusions, load_word_list


@pytest.fixture(scope="session")
def debiaswe(data_dir):
    root = data_dir / "debiaswe" / "data"
    if not root.is_dir():
        pytest.fail(f"the mirrored debiaswe dataset is missing: expected {root}", pytrace=False)
    return root


@pytest.fixture(scope="session")
def words(debiaswe) -> pl.DataFrame:
    return default_word_list()


def classes_of(frame: pl.DataFrame) -> dict[str, str]:
    return dict(frame.select("word", "gender_class").iter_rows())


# ---------------------------------------------------------------------------------------------
# the default list


def test_default_list_size_per_class(words):
    counts = dict(words.group_by("gender_class").len().iter_rows())
    excluded = default_word_list_exclusions()
    reasons = dict(excluded.group_by("reason").len().iter_rows())
    print(f"\ndefault word list: {words.height} words {counts}; excluded {excluded.height} {reasons}")
    assert words.height >= 450
    assert counts["neutral"] >= 120 and counts["feminine"] >= 170 and counts["masculine"] >= 160
    assert set(counts) == set(CLASSES)


def test_default_list_known_words(words):
    cls = classes_of(words)
    expected = {
        # professions: sign of a strong definitional score
        "actress": "feminine", "actor": "masculine", "waitress": "feminine", "waiter": "masculine",
        "businesswoman": "feminine", "policeman": "masculine", "nun": "feminine", "monk": "masculine",
        # definitional pairs, female first
        "she": "feminine", "he": "masculine", "woman": "feminine", "man": "masculine",
        "her": "feminine", "his": "masculine", "mary": "feminine", "john": "masculine",
        # the explicit lists and the spelling rules
        "queen": "feminine", "king": "masculine", "convent": "feminine", "monastery": "masculine",
        "goddess": "feminine", "countrywomen": "feminine", "fiancée": "feminine", "fiancé": "masculine",
        "maid": "feminine", "headmaster": "masculine",
        # professions with definitional score 0
        "doctor": "neutral", "teacher": "neutral", "accountant": "neutral", "scientist": "neutral",
        "teenager": "neutral",
    }
    assert {w: cls.get(w) for w in expected} == expected


def test_weak_scores_and_words_without_direction_are_left_out(words, debiaswe):
    cls = classes_of(words)
    excluded = {w: r for w, r in default_word_list_exclusions().select("word", "reason").iter_rows()}
    # nurse (-0.1), surgeon (0.1), secretary (-0.2) have weak definitional scores; "engineer" is
    # in no debiaswe list at all
    for word in ("nurse", "surgeon", "secretary", "president"):
        assert word not in cls and excluded[word] == "weak definitional score"
    assert "engineer" not in cls and "engineer" not in excluded
    for word in ("cousin", "twins", "deer", "lion", "daugher", "baratheon"):
        assert word not in cls and excluded[word] == "no direction"
    assert set(excluded) & set(cls) == set()
    assert set(excluded.values()) <= {"no direction", "weak definitional score", "conflict"}


def test_every_candidate_is_classified_or_excluded(words, debiaswe):
    single = re.compile(r"[^\W\d_]+")
    seen = set()
    for name in SOURCES:
        data = json.loads((debiaswe / f"{name}.json").read_text(encoding="utf-8"))
        flat = [row[0] if name == "professions" else row for row in data]
        flat = [w for item in flat for w in (item if isinstance(item, list) else [item])]
        seen |= {w.lower() for w in flat if single.fullmatch(w.lower())}
    listed = set(words["word"]) | set(default_word_list_exclusions()["word"])
    assert listed == seen


def test_no_duplicates_single_lower_case_words_sorted(words):
    assert words.columns == ["word", "gender_class", "origin"]
    assert words.schema == {"word": pl.String, "gender_class": pl.String, "origin": pl.String}
    assert words["word"].n_unique() == words.height
    for word in words["word"]:
        assert word == word.lower() and re.fullmatch(r"[^\W\d_]+", word), word
    assert words["word"].to_list() == sorted(words["word"])
    assert set(words["gender_class"]) == set(CLASSES)
    for origin in words["origin"]:
        parts = origin.split("+")
        assert parts and set(parts) <= set(SOURCES) and parts == sorted(parts, key=SOURCES.index), origin


def test_pairs_agree_with_the_list(words, debiaswe):
    cls = classes_of(words)
    for female, male in json.loads((debiaswe / "definitional_pairs.json").read_text()):
        assert (cls[female.lower()], cls[male.lower()]) == ("feminine", "masculine")
    checked = 0
    for a, b in json.loads((debiaswe / "equalize_pairs.json").read_text()):
        a, b = a.lower(), b.lower()
        if a in cls and b in cls:
            assert {cls[a], cls[b]} == {"feminine", "masculine"}, (a, b)
            checked += 1
    assert checked >= 45


def test_explicit_lists_hold_only_debiaswe_words_of_one_class(words):
    assert wordlists._FEMININE.isdisjoint(wordlists._MASCULINE)
    cls = classes_of(words)
    for word in wordlists._FEMININE:
        assert cls.get(word) == "feminine", word
    for word in wordlists._MASCULINE:
        assert cls.get(word) == "masculine", word


def test_definitional_threshold_is_a_parameter(words):
    literal = classes_of(default_word_list(min_definitional=0.1))
    assert literal["surgeon"] == "masculine" and literal["nurse"] == "feminine"
    assert classes_of(words) == classes_of(default_word_list(0.5))
    with pytest.raises(ValueError):
        default_word_list(min_definitional=0)


def test_missing_dataset_is_a_data_error(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASEVAL_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BIASEVAL_OFFLINE", "1")
    with pytest.raises(DataError, match="debiaswe"):
        wordlists._build(0.5)


def test_default_list_is_a_fresh_copy(words):
    a = default_word_list()
    a = a.with_columns(pl.lit("x").alias("word"))
    assert default_word_list().equals(words)


# ---------------------------------------------------------------------------------------------
# user lists


def write(tmp_path, name: str, text: str | bytes):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_txt_list(tmp_path):
    path = write(tmp_path, "mine.txt", "# my words\n\nNurse\tfeminine\n  Engineer  \n"
                                       "nurse\tmasculine\nex-wife\tfeminine\no'clock\n  # indented comment\n"
                                       "KING\t Masculine \n")
    table = load_word_list(path)
    assert table.columns == ["word", "gender_class", "origin"]
    assert table.rows() == [
        ("nurse", "feminine", "mine.txt"),
        ("engineer", "neutral", "mine.txt"),
        ("ex-wife", "feminine", "mine.txt"),
        ("o'clock", "neutral", "mine.txt"),
        ("king", "masculine", "mine.txt"),
    ]


def test_csv_list(tmp_path):
    path = write(tmp_path, "mine.csv", "\ufeffword,gender_class,note\n"
                                       "Actress,feminine,x\n\"doctor\",,\nACTRESS,masculine,dup\nhe,masculine,\n")
    assert load_word_list(path).rows() == [
        ("actress", "feminine", "mine.csv"),
        ("doctor", "neutral", "mine.csv"),
        ("he", "masculine", "mine.csv"),
    ]
    only_words = write(tmp_path, "plain.csv", "word\nnurse\nteacher\n")
    assert load_word_list(only_words).rows() == [("nurse", "neutral", "plain.csv"), ("teacher", "neutral", "plain.csv")]


@pytest.mark.parametrize(
    ("name", "text", "where", "what"),
    [
        ("empty.txt", "# nothing\n\n", ":1:", "empty"),
        ("empty.txt", "", ":1:", "empty"),
        ("phrase.txt", "nurse\ndoctor\npolice officer\tneutral\n", ":3:", "phrase"),
        ("spaces.txt", "nurse\nnurse feminine\n", ":2:", "TAB"),
        ("digit.txt", "nurse\ne-mail2\n", ":2:", "not a single word"),
        ("punct.txt", "\n\nnurse!\n", ":3:", "not a single word"),
        ("class.txt", "nurse\tfemale\n", ":1:", "not one of"),
        ("fields.txt", "nurse\tfeminine\textra\n", ":1:", "fields"),
        ("latin1.txt", "nurse\ncaf\xe9\n".encode("latin-1"), ":2:", "UTF-8"),
        ("empty.csv", "word,gender_class\n", ":1:", "empty"),
        ("nohead.csv", "", ":1:", "empty"),
        ("noword.csv", "term,gender_class\nnurse,neutral\n", ":1:", "no 'word' column"),
        ("phrase.csv", "word,gender_class\nnurse,\nhead nurse,feminine\n", ":3:", "phrase"),
        ("class.csv", "word,gender_class\nnurse,\n\nqueen,royal\n", ":4:", "not one of"),
        ("fields.csv", "word\nnurse,feminine\n", ":2:", "fields"),
        ("latin1.csv", "word\ncaf\xe9\n".encode("latin-1"), ":2:", "UTF-8"),
    ],
)
def test_bad_lists_name_file_and_line(tmp_path, name, text, where, what):
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigError) as info:
        load_word_list(path)
    message = str(info.value)
    assert message.startswith(f"{path}{where}"), message
    assert what in message


def test_unreadable_list_names_the_file(tmp_path):
    missing = tmp_path / "absent.txt"
    with pytest.raises(ConfigError, match=re.escape(str(missing))):
        load_word_list(missing)
    folder = tmp_path / "dir.txt"
    folder.mkdir()
    with pytest.raises(ConfigError, match=re.escape(str(folder))):
        load_word_list(folder)
    other = write(tmp_path, "words.json", "[]")
    with pytest.raises(ConfigError, match="txt or .csv"):
        load_word_list(other)
