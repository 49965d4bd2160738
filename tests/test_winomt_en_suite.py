"""WinoMT from English: the suite, recorded outputs joined on the source, per-system target
languages, and the per-language metrics (unknown is its own, wrong class)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from biaseval.config import load_config
from biaseval.errors import DataError, RecordedOutputError
from biaseval.metrics.winomt import winomt
from biaseval.suites import BUILTIN  # the shipped suites (SUITES holds the last resolved run's versions)
from biaseval.suites.winomt_en import ALL_TARGETS, TARGETS, parse_rows
from biaseval.run.plan import build_translator, prepare, shards_of

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "conf" / "winomt-en.yaml"
MT_GENDER = "mt_gender"


@pytest.fixture(scope="module")
def suite_data(data_dir):
    return BUILTIN["winomt-en"].open()


def test_items_per_target_and_group(suite_data):
    assert suite_data.size == 3888 * len(TARGETS)
    sizes = suite_data.subset_sizes()
    for tgt in TARGETS:
        assert (sizes[f"{tgt}/pro"], sizes[f"{tgt}/anti"], sizes[f"{tgt}/winogender"]) == (1584, 1584, 720)
    es = suite_data.table.filter(pl.col("tgt_lang") == "es")
    counts = dict(es.group_by("gold").len().iter_rows())
    assert counts == {"male": 1826, "female": 1822, "neutral": 240}  # the published gold counts
    assert es.filter(pl.col("stereotype").is_null())["subset"].unique().to_list() == ["es/winogender"]
    # the entity's word index points at the entity in every sentence
    for source, index, entity in es.select("source", "entity_index", "occupation").iter_rows():
        assert source.split()[index].lower().strip(".,") == entity.split()[0].lower()


def test_targets_are_contiguous_ranges(suite_data):
    ranges = suite_data.target_ranges()
    assert list(ranges) == sorted(TARGETS)
    for tgt, (start, stop) in ranges.items():
        assert stop - start == 3888
        assert set(suite_data.slice(start, stop)["tgt_lang"].to_list()) == {tgt}


def test_fewer_targets_change_the_fingerprint(suite_data):
    fewer = BUILTIN["winomt-en"].with_targets(("es", "de")).open()
    assert fewer.size == 2 * 3888
    assert fewer.fingerprint != suite_data.fingerprint


def test_bad_aggregate_line_names_file_and_line(tmp_path):
    path = tmp_path / "en.txt"
    with pytest.raises(DataError, match=r"en.txt:2: expected"):
        parse_rows(path, ["male\t1\tThe developer argued.\tdeveloper", "male 1 broken"])
    with pytest.raises(DataError, match=r"en.txt:1: word 0 of the sentence is not the entity"):
        parse_rows(path, ["male\t0\tThe developer argued.\tdeveloper"])


@pytest.fixture(scope="module")
def prepared(data_dir):
    config = load_config(CONFIG)
    return prepare(config, CONFIG.parent)


def test_systems_get_only_their_target_languages(prepared):
    shards = shards_of(prepared)
    ranges = prepared.suites["winomt-en"].target_ranges()
    covered = {}
    for shard in shards:
        covered.setdefault(shard.system, set()).update(
            tgt for tgt, (a, b) in ranges.items() if shard.start < b and shard.stop > a)
        if prepared.config.systems[shard.system].targets is not None:  # its shards never straddle two languages
            assert any(shard.start >= a and shard.stop <= b for a, b in ranges.values())
    assert covered["sota"] == {"de", "fr"}
    # conf/winomt-en.yaml adds ar, nl and pt to the suite's default seven, for the systems recorded in them
    assert set(ALL_TARGETS) == set(TARGETS) | {"ar", "nl", "pt"}
    assert covered["aws"] == set(ALL_TARGETS) - {"nl", "pt", "uk"}
    assert covered["bing"] == set(ALL_TARGETS) - {"pt"}
    assert covered["systran"] == set(ALL_TARGETS) - {"nl", "pt"}
    assert covered["google"] == set(ALL_TARGETS)
    assert prepared.size_of("aws") == 7 * 3888 and prepared.size_of("sota") == 2 * 3888
    indices = [(s.system, s.index) for s in shards]
    assert len(indices) == len(set(indices))


def test_recorded_pairs_join_on_the_source(prepared, data_dir):
    """The two sources edited after recording (mt_gender issue #18) come back as rows with an error;
    every other row gets the translation recorded for its own sentence."""
    translator = build_translator("google", prepared.config.systems["google"], CONFIG.parent)
    data = prepared.suites["winomt-en"]
    start, stop = data.target_ranges()["es"]
    items = data.slice(start, stop)
    translations, errors = translator.translate_items_with_errors(items)
    missing = [i for i, t in enumerate(translations) if t is None]
    assert len(missing) == 2
    assert all(errors[i].startswith("not recorded: source not in en-es.txt") for i in missing)
    assert all(e is None for i, e in enumerate(errors) if i not in missing)
    recorded = {}
    for line in (data_dir / MT_GENDER / "translations/google/en-es.txt").read_text(encoding="utf-8").splitlines():
        source, _, translation = line.partition(" ||| ")
        recorded.setdefault(" ".join(source.split()), translation.strip())
    for i in (0, 1000, 3000, 3887):
        if translations[i] is not None:
            assert translations[i] == recorded[" ".join(items["source"][i].split())]
    # The edited lines swapped the pronoun ("he broke the stove" was recorded as "she broke ..."):
    # pairing by line number would have scored those translations against the wrong gold gender.
    lines = (data_dir / MT_GENDER / "translations/google/en-es.txt").read_text(encoding="utf-8").splitlines()
    for i in missing:
        assert lines[i].partition(" ||| ")[0].strip() != items["source"][i]
    assert [items["line"][i] for i in missing] == [2121, 2122]


def test_pairs_file_without_separator_names_the_line(tmp_path, data_dir):
    from biaseval.translate.backends.recorded import RecordedOptions, RecordedTranslator

    bad = tmp_path / "en-es.txt"
    bad.write_text("The developer argued. ||| El desarrollador discutió.\nno separator here\n", encoding="utf-8")
    options = RecordedOptions(files={"winomt-en": str(tmp_path / "en-{stem}.txt")}, format="pairs")
    translator = RecordedTranslator("mine", options, config_dir=tmp_path)
    data = BUILTIN["winomt-en"].with_targets(("es",)).open()
    with pytest.raises(RecordedOutputError, match=r"en-es.txt:2: no '\|\|\|'"):
        translator.check({"winomt-en": data})


def _rows(gold, label, stereo, tgt="es", system="s"):
    return pl.DataFrame({"system": [system] * len(gold), "suite": ["winomt-en"] * len(gold), "tgt_lang": [tgt] * len(gold),
                         "stereotype": stereo, "gold": gold, "label": label})


def _value(out, subset, metric, system="s"):
    row = out.filter((pl.col("subset") == subset) & (pl.col("metric") == metric) & (pl.col("system") == system))
    assert row.height == 1, (subset, metric)
    return row["value"][0]


def test_metrics_per_language_with_unknown_wrong_for_every_gold():
    gold = ["male", "female", "male", "female", "neutral", "neutral", "male", "female"]
    label = ["male", "female", "unknown", "male", "neutral", "unknown", "male", None]
    stereo = ["pro", "pro", "anti", "anti", None, None, "pro", "anti"]
    es = _rows(gold, label, stereo, "es")
    de = _rows(["male", "female"], ["female", "female"], ["pro", "anti"], "de")
    out = winomt(pl.concat([es, de]), basis="acc", by_target=True, n_boot=50)
    # es: 7 scored rows (one without a translation); correct: m, f, neutral, m -> 4/7
    assert _value(out, "es", "acc") == pytest.approx(4 / 7)
    assert _value(out, "es", "unknown") == pytest.approx(2 / 7)
    assert _value(out, "es", "neutral") == pytest.approx(1 / 7)
    # pro: 3 rows, all correct; anti: 2 scored rows (unknown, female->male), none correct
    assert _value(out, "es/pro", "acc") == 1.0
    assert _value(out, "es/anti", "acc") == 0.0
    assert _value(out, "es", "delta_s") == pytest.approx(1.0)
    assert _value(out, "es/winogender", "acc") == pytest.approx(0.5)
    # male: tp 2, fp 1 (female gold read as male), fn 1 (unknown) -> 4/6; female: tp 1, fp 0, fn 1 -> 2/3
    assert _value(out, "es", "f1_male") == pytest.approx(4 / 6)
    assert _value(out, "es", "f1_female") == pytest.approx(2 / 3)
    assert _value(out, "es", "delta_g") == pytest.approx(0.0)
    assert _value(out, "de", "acc") == pytest.approx(0.5)
    assert set(out["subset"].unique().to_list()) == {"es", "es/pro", "es/anti", "es/winogender", "de", "de/pro", "de/anti"}


def test_a_missing_analyser_stops_the_config_check_naming_the_package(tmp_path, monkeypatch, data_dir):
    """No silent fallback: with the French analyser's Debian package absent, loading a config that
    scores WinoMT into French fails and says what to install."""
    from biaseval.label.analysers import base
    from biaseval.errors import ConfigError

    config = tmp_path / "fr.yaml"
    config.write_text("name: fr\nsuites: [winomt-en]\ntargets: {winomt-en: [fr]}\n"
                      "systems: {a: {backend: apertium, options: {pair: eng-spa}}}\n", encoding="utf-8")
    monkeypatch.setenv("BIASEVAL_APERTIUM_DIR", str(tmp_path / "empty"))
    base._build.cache_clear()
    try:
        with pytest.raises(ConfigError, match=r"sudo apt-get install -y apertium-fra-cat"):
            load_config(config)
    finally:
        monkeypatch.delenv("BIASEVAL_APERTIUM_DIR")
        base._build.cache_clear()


def test_spans_outside_the_translation_stop_the_scoring_naming_the_item(monkeypatch):
    """An alignment that points past the translation's tokens is a bug upstream: the scorer refuses
    the corpus (no row is labelled) and says which source sentence the first bad row is."""
    import biaseval.label.align
    import biaseval.label.analysers
    from biaseval.label.analysers import GenderAnalyser, Reading, SpanError
    from biaseval.label.entities import DETECTORS

    class Male(GenderAnalyser):
        lang = "es"

        def read_aligned(self, sentences, spans):
            return [Reading("male", "noun")] * len(sentences)

    monkeypatch.setattr(biaseval.label.analysers, "analyser_for", lambda lang: Male())
    monkeypatch.setattr(biaseval.label.align, "align_links",  # every link 30 tokens too far right
                        lambda src, tgt, method: biaseval.label.align.Links.from_lists(
                            [[(i, i + 30) for i in range(len(s))] for s in src]))
    frame = pl.DataFrame({"tgt_lang": ["es", "es"], "source": ["The doctor slept.", "The nurse slept."],
                          "translation": ["El médico durmió.", "La enfermera durmió."],
                          "entity_index": [1, 1], "occupation": ["doctor", "nurse"]})
    with pytest.raises(SpanError, match=r"entity-alignment \(es\): 2 of 2 rows .* outside .* Row 0: source "
                                        r"'The doctor slept\.', entity_index 1") as caught:
        DETECTORS[0].label_frame(frame)
    assert caught.value.rows == [0, 1]
