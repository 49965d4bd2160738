"""The pronoun-following reading (biaseval.label.pronouns) and the classes of disagreement with
mt_gender's annotators (biaseval.metrics.disagreements), on hand-made rows: no alignment, no data."""

from __future__ import annotations

import polars as pl

from biaseval.label.analysers import Reading
from biaseval.label.entities import DETECTORS
from biaseval.label.pronouns import follow_pronoun, later_pronoun, pronoun_gender
from biaseval.label.tokens import tokenize
from biaseval.metrics.disagreements import CLASSES, class_counts, classify, hand_checks


def test_the_first_gendered_pronoun_after_the_entity():
    tokens = tokenize("Die Krankenschwester sah den Arzt und bat sie , einen Blick zu werfen .", "de")
    arzt = [3, 4]  # "den Arzt"
    assert later_pronoun(tokens, arzt, "de") == (7, "female")
    assert later_pronoun(tokens, [0, 1], "de") == (7, "female")  # after "Die Krankenschwester" too
    assert later_pronoun(tokens, [7], "de") is None  # nothing after the last pronoun
    # "ihm" then "sie": the first one after the entity decides
    tokens = tokenize("Der Arzt gab ihm , was sie wollte .", "de")
    assert later_pronoun(tokens, [0, 1], "de") == (3, "male")
    # French: il/elle only ("la", "lui" are also article and a both-gender clitic)
    tokens = tokenize("Le médecin a parlé à la réceptionniste et lui a dit qu'elle était en retard .", "fr")
    assert later_pronoun(tokens, [0, 1], "fr") == (tokens.index("elle"), "female")
    # Hebrew: a prefix joined to the pronoun ("שהיא": that she)
    assert pronoun_gender("שהיא", "he") == "female" and pronoun_gender("והוא", "he") == "male"
    assert pronoun_gender("מהיא", "he") is None
    assert pronoun_gender("sie", "xx") is None  # a language without a list


def test_portuguese_pronouns_are_the_singular_third_persons_and_not_the_articles():
    """ele/ela and their contractions with de/em (dele, nela); "o"/"a" are also the articles and the
    plurals eles/elas may be about both entities, as Spanish ellos/ellas and French ils/elles are left out."""
    assert [pronoun_gender(w, "pt") for w in ("ele", "Ela", "dele", "dela", "nele", "nela")] == [
        "male", "female", "male", "female", "male", "female"]
    assert [pronoun_gender(w, "pt") for w in ("o", "a", "eles", "elas", "lhe", "seu", "sua")] == [None] * 7
    tokens = tokenize("O médico disse à enfermeira que ela estava atrasada .", "pt")
    assert later_pronoun(tokens, [0, 1], "pt") == (tokens.index("ela"), "female")


def test_follow_pronoun_overrides_the_noun_reading_only_where_a_pronoun_follows():
    noun = Reading("male", "noun", "den Arzt")
    tokens = tokenize("Die Krankenschwester sah den Arzt und bat sie .", "de")
    assert follow_pronoun(noun, tokens, [3, 4], "de") == Reading("female", "pronoun", "sie")
    plain = tokenize("Die Krankenschwester sah den Arzt .", "de")
    assert follow_pronoun(noun, plain, [3, 4], "de") is noun


def test_the_pronoun_detector_is_registered_beside_the_default():
    by_name = {d.name: d for d in DETECTORS}
    assert by_name["entity-alignment-pronoun"].follow_pronoun
    assert not by_name["entity-alignment"].follow_pronoun
    assert by_name["entity-alignment-pronoun"].method == by_name["entity-alignment"].method


def _rows(*rows):
    keys = ("index", "human", "label", "reason", "label_pronoun", "reason_pronoun")
    return pl.DataFrame([dict(zip(keys, r)) for r in rows], schema={k: pl.Int64 if k == "index" else pl.String
                                                                    for k in keys})


def test_classes_follow_the_rules_in_order_and_hand_checks_come_first():
    rows = _rows(
        (1, "female", "male", "noun", "female", "pronoun"),           # noun says male, "sie" female
        (2, "female", "unknown", "epicene-no-article", "female", "pronoun"),
        (3, "male", "neutral", "indefinite", "male", "pronoun"),       # "jemand ... er"
        (4, "male", "neutral", "indefinite", "neutral", "indefinite"), # מישהו read as masculine
        (5, "male", "unknown", "no-alignment", "male", "pronoun"),     # ours first: nothing aligned
        (6, "male", "unknown", "conflict", "unknown", "conflict"),
        (7, "female", "male", "article", "male", "article"),           # no rule: unchecked
        (8, "female", "male", "article", "female", "pronoun"),         # a hand check overrides the rule
        (9, "female", "female", "noun", "female", "noun"),             # agrees: not a disagreement
        (10, None, "male", "noun", "male", "noun"),                    # not a clear annotation
        (11, "male", "female", "noun", "female", "pronoun"),           # a pronoun, but not the annotator's
    )
    checks = {"de": {8: {"class": "alignment", "note": "the article of another noun"}}}
    out = classify(rows, "de", checks)
    assert dict(zip(out["index"], out["class"])) == {
        1: "pronoun-over-noun", 2: "pronoun-unmarked", 3: "pronoun-unmarked", 4: "indefinite", 5: "alignment",
        6: "self-contradictory", 7: "unchecked", 8: "alignment", 11: "unchecked"}
    assert out.filter(pl.col("index") == 8)["note"][0] == "the article of another noun"
    counts = class_counts({"de": out, "es": out.head(0)}).rows_by_key("language", named=True)
    assert counts["de"][0]["total"] == 9 and counts["de"][0]["unchecked"] == 2
    assert counts["es"][0]["total"] == 0 and all(counts["es"][0][c] == 0 for c in CLASSES)


def test_the_hand_checks_name_known_classes_and_annotated_languages():
    from biaseval.metrics.human_agreement import ANNOTATIONS

    checks = hand_checks()
    assert set(checks) <= set(ANNOTATIONS)
    for lang, entries in checks.items():
        for index, entry in entries.items():
            assert isinstance(index, int) and 0 <= index < 3888
            assert entry["class"] in CLASSES and entry["class"] != "unchecked" and entry["note"], (lang, index)


def test_a_config_chooses_the_pronoun_reading_per_suite_or_language(tmp_path, data_dir):
    from biaseval.config import load_config

    config = tmp_path / "pronoun.yaml"
    config.write_text("name: pronoun\nsuites: [winomt-en]\ntargets: {winomt-en: [de, fr]}\n"
                      "detectors: {winomt-en: {de: entity-alignment-pronoun}}\n"
                      "systems: {google: {backend: recorded, options: {dataset: mt-gender, format: pairs, "
                      "files: {winomt-en: 'translations/google/en-{stem}.txt'}}}}\n", encoding="utf-8")
    loaded = load_config(config)
    assert loaded.detector_for("winomt-en", "de").follow_pronoun
    assert not loaded.detector_for("winomt-en", "fr").follow_pronoun
