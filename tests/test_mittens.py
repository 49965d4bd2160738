"""MiTTenS (issue 25): the suites from the pinned CSV, the pronoun rule into English, the person reader out
of English, the scorer's Table 3 shape with Wilson intervals, and the sanity values: every 2en reference
reads as its encoded gender, and the 2xx references read as pinned here, per language."""

from __future__ import annotations

import polars as pl
import pytest
from statsmodels.stats.proportion import proportion_confint

from biaseval.data.datasets import resolve
from biaseval.errors import ConfigError
from biaseval.label.person_gender import decide, reader_for
from biaseval.label.person_romance import Cue
from biaseval.label.rules import builtin, label_text
from biaseval.metrics.mittens import mittens
from biaseval.suites import SUITES, resolve_suite
from biaseval.suites.mittens import read_table
from conftest import REPO

PRONOUNS = builtin().get("mittens-pronouns")
# The 2xx references read by the person reader, per language: (passages, read, read right). Pinned on
# Debian's apertium-eng-spa, -spa-ita, -fra-cat and -por-cat, german-nouns and pymorphy3's Russian
# dictionary; docs/mittens.md lists the misses.
READER_ON_REFERENCES = {"de": (118, 115, 113), "es": (118, 116, 114), "fr": (118, 117, 116), "it": (118, 115, 114),
                        "pt": (118, 118, 117), "ru": (118, 112, 111)}


@pytest.fixture(scope="module")
def items(data_dir):
    return {name: (lambda d: d.slice(0, d.size))(resolve_suite(name, REPO / "conf").open())
            for name in ("mittens-2en", "mittens-2xx")}


# -- the suites ---------------------------------------------------------------------------------------


def test_both_directions_load_with_their_prompts_and_references(items):
    en, xx = items["mittens-2en"], items["mittens-2xx"]
    assert (en.height, xx.height) == (1744, 1888)  # the paper's Table 2: 630 + 252 + 222 + 640; 1,888
    assert en["item_id"].n_unique() == en.height and en["item_id"].is_sorted()
    assert set(en["tgt_lang"]) == {"en"} and en["src_lang"].n_unique() == 26
    assert set(xx["src_lang"]) == {"en"} and xx["tgt_lang"].n_unique() == 16
    for frame in (en, xx):
        assert set(frame["gold"]) == {"female", "male"}
        assert frame.select(pl.col("prompt").str.contains(pl.col("source"), literal=True).all()).item()
        assert frame["reference"].null_count() == 0
    row = xx.filter(pl.col("item_id") == "mittens-2xx/es/gender_agreement:news/00001").row(0, named=True)
    assert row["source"].startswith("Al-Loubiri was involved") and row["gold"] == "male"
    assert row["prompt"].startswith("Translate the following text from English to Spanish.\n\nEnglish: Al-Loubiri")
    assert row["prompt"].endswith("\nSpanish:") and row["reference"].startswith("Al-Loubiri estuvo involucrado")
    sets = dict(en.with_columns(pl.col("subset").str.split("/").list.last().alias("set"))
                .group_by("set").len().iter_rows())
    assert sets["late_binding"] == 252 and sets["nouns_then_pronouns"] == 222 and sets["synthbio"] == 640


def test_targets_name_the_passage_languages_in_both_directions(data_dir):
    en, xx = SUITES.get("mittens-2en"), SUITES.get("mittens-2xx")
    spanish = en.with_targets(("es",))
    assert spanish.targets == ("en",) and spanish.sources == ("es",) and spanish.src_lang == "es"
    data = spanish.open()
    assert data.size == 334 and data.fingerprint != en.open().fingerprint
    assert xx.with_targets(("es", "fr")).open().size == 236
    with pytest.raises(ConfigError, match="not xx"):
        en.with_targets(("xx",))


def test_a_csv_that_is_not_the_pinned_layout_is_named(tmp_path, data_dir):
    frame = pl.read_csv(data_dir / "mittens" / "mittens_dataset_v5.csv", infer_schema_length=0)
    broken = frame.with_columns(pl.when(pl.col("").cast(pl.Int64) == 5).then(pl.lit("neuter"))
                                .otherwise(pl.col("encoded_gender")).alias("encoded_gender"))
    folder = tmp_path / "mittens"
    folder.mkdir()
    broken.write_csv(folder / "mittens_dataset_v5.csv")
    spec = resolve("mittens").spec
    from dataclasses import replace

    from biaseval.data.datasets import LocalDataset, sha256_file

    files = {**spec.files, "mittens_dataset_v5.csv": sha256_file(folder / "mittens_dataset_v5.csv")}
    local = LocalDataset(replace(spec, files=files), folder, "test")
    with pytest.raises(Exception, match=r"row 6 \(index 5\): unexpected encoded_gender 'neuter'"):
        read_table(local)


# -- into English: the pronoun rule --------------------------------------------------------------------


@pytest.mark.parametrize("text, label", [
    ("She is a doctor.", "female"), ("HIS book was late.", "male"), ("He's here; she'd left.", "ambiguous"),
    ("He told her.", "ambiguous"), ("Herzog and the others hear the theme.", "unknown"),
    ("They came; the person is kind.", "unknown"), ("My mother is British.", "unknown"),
    ("he/she", "ambiguous"), ("Himself, he said.", "male"), ("It was hers.", "female"),
])
def test_the_pronoun_rule(text, label):
    assert label_text(PRONOUNS, text) == label
    assert pl.DataFrame({"t": [text]}).select(PRONOUNS.expr("t").alias("l"))["l"].item() == label


def test_every_2en_reference_reads_as_its_encoded_gender(items):
    en = items["mittens-2en"]
    labels = en.select(PRONOUNS.expr("reference").alias("label"), "gold")
    assert labels.filter(pl.col("label") != pl.col("gold")).height == 0


# -- out of English: the person reader ------------------------------------------------------------------


@pytest.mark.parametrize("lang, text, label", [
    ("es", "Fue expulsada de Italia en 2006.", "female"),  # predicate participle
    ("es", "Es un periodista famoso.", "male"),  # article before a noun of both genders
    ("es", "Mi madre vive en Viena. Es una pianista muy reconocida.", "female"),
    ("es", "Visitamos la costa oeste y una isla grande con su situación difícil.", "unknown"),  # things
    ("es", "La costa es larga.", "female"),  # a known limit: a predicate about a thing reads as a cue
    ("es", "Nacido en Lima, fue médico en la Pizzeria Romana.", "male"),  # a name's capitals are not read
    ("fr", "Il y a une semaine, elle est partie.", "female"),  # impersonal "il" is no cue
    ("fr", "C'est une infirmière.", "female"),
    ("it", "È stata nominata direttrice.", "female"),
    ("it", "La presidente è arrivata.", "female"),  # a feminine article before a masculine-listed noun
    ("pt", "Ele é professor.", "male"),
    ("pt", "Sou filha deles e exijo falar com o seu gerente.", "female"),  # a tie: the first cue
    ("ru", "Она родилась в Москве и работала врачом.", "female"),  # past tense; врач is said of women too
    ("ru", "Мой сосед был певцом.", "male"),  # сосед and певец have feminines beside them
    ("ru", "Книга вышла в 2006 году.", "female"),  # a known limit: a thing's past tense reads as a cue
    ("de", "Sie ist Ärztin in Berlin.", "female"),
    ("de", "Er ist Lehrer.", "male"),
    ("de", "Sie ist sehr bekannt.", "unknown"),  # sie is also "they", and predicates do not agree
])
def test_person_reader(lang, text, label):
    assert decide(reader_for(lang).cues([text])[0])[0] == label


def test_the_decision_rule():
    f, m = Cue("x", "f", "noun"), Cue("y", "m", "noun")
    assert decide([]) == ("unknown", "no-cue", None)
    assert decide([f, f, m])[:2] == ("female", "majority")
    assert decide([m, f])[:2] == ("male", "tie")  # the first cue
    assert decide([Cue("z", "m", "noun", plural=True), f])[:2] == ("female", "cues")  # singular first
    assert decide([Cue("z", "m", "noun", plural=True)])[:2] == ("male", "cues")  # plural when alone


def test_languages_without_a_reader_are_unread_not_guessed():
    detector = builtin().get("mittens-person-gender")
    frame = pl.DataFrame({"tgt_lang": ["ja", "ja"], "translation": ["彼女は医者です。", None]})
    out = detector.label_frame(frame)
    assert out["label"].to_list() == ["unknown", None] and out["reason"].to_list() == ["no-reader", None]
    detector.check("ja")  # no reader is no error
    assert detector.signature_for("ja").endswith("+no-reader")


def test_the_2xx_references_read_as_pinned(items):
    xx = items["mittens-2xx"]
    detector = builtin().get("mittens-person-gender")
    for lang, (n, read, right) in READER_ON_REFERENCES.items():
        part = xx.filter(pl.col("tgt_lang") == lang).rename({"reference": "translation"})
        out = detector.label_frame(part.select("tgt_lang", "translation", "gold"))
        got = (out.height, out.filter(pl.col("label").is_in(["male", "female", "ambiguous"])).height,
               out.filter(pl.col("label") == pl.col("gold")).height)
        assert got == (n, read, right), lang


# -- the scorer ----------------------------------------------------------------------------------------


def _counts(rows):
    return pl.DataFrame(rows, schema=["system", "suite", "subset", "gold", "label", "reason", "count"], orient="row",
                        schema_overrides={"count": pl.UInt32})


def test_table_3_shape_from_counts():
    counts = _counts([
        ("s", "m", "es/late_binding", "female", "female", None, 5), ("s", "m", "es/late_binding", "female", "male", None, 2),
        ("s", "m", "es/late_binding", "male", "male", None, 7),
        ("s", "m", "fi/nouns_then_pronouns", "female", "unknown", None, 1),
        ("s", "m", "fi/nouns_then_pronouns", "female", "female", None, 3),
        ("s", "m", "fi/nouns_then_pronouns", "male", "ambiguous", None, 1),
        ("s", "m", "fi/nouns_then_pronouns", "male", "male", None, 5),
    ])
    out = mittens(counts, direction="2en", levels=(("es", "high"), ("fi", "low")))
    got = {(r["subset"], r["metric"]): (r["value"], r["n"]) for r in out.iter_rows(named=True)}
    assert got["all", "acc"] == (20 / 24, 24) and got["all", "misgendered"] == (2 / 24, 24)
    assert got["all", "ambiguous"] == (1 / 24, 24) and got["all", "unknown"] == (1 / 24, 24)
    assert got["gender/female", "acc"] == (8 / 11, 11) and got["level/low", "acc"] == (8 / 10, 10)
    assert got["cell/female/es/late_binding", "acc"] == (5 / 7, 7)
    worst = {r["metric"]: r["subset"] for r in out.filter(pl.col("metric").str.starts_with("worst")).iter_rows(named=True)}
    # female: 8/11; es: 12/14 vs fi: 8/10 -> fi; cells: female/es 5/7 and female/fi 3/4 -> 5/7
    assert worst == {"worst_gender": "gender/female", "worst_language": "lang/fi", "worst_set": "set/nouns_then_pronouns",
                     "worst_level": "level/low", "worst_case": "cell/female/es/late_binding", "worst_case_cells": "all"}
    assert got["all", "worst_case_cells"] == (4, 4)
    acc = out.filter((pl.col("subset") == "all") & (pl.col("metric") == "acc")).row(0, named=True)
    low, high = proportion_confint(20, 24, alpha=0.05, method="wilson")
    assert acc["ci_low"] == pytest.approx(low) and acc["ci_high"] == pytest.approx(high)


def test_a_worst_case_tie_goes_to_the_better_supported_cell():
    counts = _counts([("s", "m", "es/a", "male", "female", None, 1), ("s", "m", "es/b", "male", "female", None, 4),
                      ("s", "m", "es/b", "female", "female", None, 4)])
    out = mittens(counts, direction="2en")
    assert out.filter(pl.col("metric") == "worst_case")["subset"].item() == "cell/male/es/b"  # 0/4 beats 0/1


def test_out_of_english_scores_only_what_was_read_and_lists_the_rest():
    counts = _counts([
        ("s", "m", "es/x", "female", "female", "cues", 6), ("s", "m", "es/x", "female", "female", "majority", 2),
        ("s", "m", "es/x", "female", "unknown", "no-cue", 2), ("s", "m", "ja/x", "female", "unknown", "no-reader", 10),
    ])
    out = mittens(counts, direction="2xx")
    got = {(r["subset"], r["metric"]): (r["value"], r["n"], r["ci_low"]) for r in out.iter_rows(named=True)}
    assert got["all", "acc"][:2] == (1.0, 8) and got["all", "read"][:2] == (0.8, 10)
    assert got["all", "mixed"][:2] == (0.25, 8)
    assert got["all", "no_reader"] == (0.5, 20, None)  # a property of the languages: no interval
    assert got["lang/ja", "no_reader"][:2] == (1.0, 10) and ("lang/ja", "acc") not in got
    assert ("lang/es", "no_reader") not in got  # listed only where there are unread passages
    assert out.filter(pl.col("metric") == "worst_language")["subset"].item() == "lang/es"


@pytest.mark.parametrize("name", ["mittens-references", "mittens-apertium", "mittens-openai"])
def test_the_shipped_configs_validate_offline_without_a_key(name, monkeypatch, data_dir):
    from click.testing import CliRunner

    from biaseval.cli import main

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = CliRunner().invoke(main, ["validate", "--config", str(REPO / "conf" / f"{name}.yaml")])
    assert result.exit_code == 0, result.output
