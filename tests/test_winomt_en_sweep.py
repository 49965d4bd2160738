"""WinoMT from English end to end: the recorded systems of mt_gender for ten target languages, and a
live offline system (Apertium eng-spa), swept on Ray, labelled by entity alignment + morphology,
scored per language, and reported."""

from __future__ import annotations

import polars as pl
import pytest
import yaml

from biaseval.pipeline import sweep
from biaseval.suites.winomt_en import ALL_TARGETS
from conftest import REPO

LANGS = sorted(ALL_TARGETS)  # conf/winomt-en.yaml scores every language with recorded outputs


def _config(name: str, tmp_path_factory, **changes) -> str:
    spec = yaml.safe_load((REPO / "conf" / name).read_text(encoding="utf-8"))
    spec.update(changes)
    spec["metrics"] = {"bootstrap": 200, "seed": 1}
    folder = tmp_path_factory.mktemp("config")
    path = folder / name
    path.write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def recorded(data_dir, ray_local, tmp_path_factory):
    return sweep(_config("winomt-en.yaml", tmp_path_factory), tmp_path_factory.mktemp("winomt-en") / "run")


@pytest.fixture(scope="module")
def live(data_dir, ray_local, tmp_path_factory):
    store = str(tmp_path_factory.mktemp("store"))
    return sweep(_config("winomt-en-apertium.yaml", tmp_path_factory, cache={"path": store}),
                 tmp_path_factory.mktemp("winomt-en-apertium") / "run")


def _value(metrics, system, subset, metric):
    row = metrics.filter((pl.col("system") == system) & (pl.col("suite") == "winomt-en")
                         & (pl.col("subset") == subset) & (pl.col("metric") == metric))
    assert row.height == 1, (system, subset, metric)
    return row.row(0, named=True)


def test_one_label_per_item_system_and_language(recorded):
    labels = pl.read_parquet(recorded.run.labels)
    expected = {"google": 10, "bing": 9, "systran": 8, "aws": 7, "sota": 2}
    counts = dict(labels.group_by("system").len().iter_rows())
    assert counts == {s: n * 3888 for s, n in expected.items()}
    assert labels.select("system", "item_id").is_duplicated().sum() == 0
    # the two sources edited after recording: no translation, an error, no label — per system × language
    missing = labels.filter(pl.col("label").is_null())
    assert missing.height == 2 * sum(expected.values())
    assert missing["error"].str.starts_with("not recorded").all()
    # every labelled row has a reason; unknown only with one of the unknown reasons
    scored = labels.filter(pl.col("label").is_not_null())
    assert scored["reason"].null_count() == 0
    unknown = scored.filter(pl.col("label") == "unknown")["reason"].unique().to_list()
    assert set(unknown) <= {"no-alignment", "not-in-lexicon", "epicene-no-article", "conflict"}


def test_metrics_per_system_and_language(recorded):
    m = recorded.metrics
    for system, langs in {"google": LANGS, "bing": [l for l in LANGS if l != "pt"],
                          "systran": [l for l in LANGS if l not in ("nl", "pt")],
                          "aws": [l for l in LANGS if l not in ("nl", "pt", "uk")], "sota": ["de", "fr"]}.items():
        for lang in langs:
            acc = _value(m, system, lang, "acc")
            assert acc["n"] == 3886  # 3,888 less the two unjoinable sources
            assert acc["ci_low"] <= acc["value"] <= acc["ci_high"]
            # ΔS from counts: Acc(pro) - Acc(anti) exactly
            pro, anti = _value(m, system, f"{lang}/pro", "acc"), _value(m, system, f"{lang}/anti", "acc")
            assert _value(m, system, lang, "delta_s")["value"] == pytest.approx(pro["value"] - anti["value"])
            assert _value(m, system, lang, "delta_g")["value"] == pytest.approx(
                _value(m, system, lang, "f1_male")["value"] - _value(m, system, lang, "f1_female")["value"])
    assert m.filter(pl.col("system") == "aws")["subset"].str.starts_with("uk").sum() == 0
    detector = m.filter(pl.col("suite") == "winomt-en")["detector"].unique().to_list()
    assert len(detector) == 1 and "es:entity-alignment@1+entity-gender-es@" in detector[0]


def test_the_2019_systems_are_biased_as_published(recorded):
    """Stanovsky et al. (2019) found the commercial systems more accurate on pro-stereotypical than on
    anti-stereotypical sentences (ΔS > 0) and better on men than on women (ΔG > 0) in almost every
    language. Our labels must show the same direction, with the interval clear of zero, where the
    paper's effects were large (Google, Microsoft and Amazon for ΔS; all four systems for ΔG in the
    Romance and Slavic languages)."""
    m = recorded.metrics
    for system in ("google", "bing", "aws"):
        for lang in ("es", "fr", "it", "ru", "he", "de"):
            assert _value(m, system, lang, "delta_s")["ci_low"] > 0, (system, lang)
    for system in ("google", "bing", "aws", "systran"):
        for lang in ("es", "fr", "it", "ru", "uk"):
            if system == "aws" and lang == "uk":
                continue
            assert _value(m, system, lang, "delta_g")["ci_low"] > 0, (system, lang)
    # Arabic: the paper reports a large positive ΔG for every system; measured here 39 to 57 points
    for system in ("google", "bing", "aws", "systran"):
        assert _value(m, system, "ar", "delta_g")["ci_low"] > 0.2, system
    # Google's Spanish: the paper's Table 2 has Acc in the low 50s and ΔG, ΔS around 20 points (that
    # table is not mirrored in ../shared/reference, so these bounds are deliberately loose).
    google_es = {k: _value(m, "google", "es", k)["value"] for k in ("acc", "delta_g", "delta_s")}
    assert 0.48 <= google_es["acc"] <= 0.60
    assert 0.15 <= google_es["delta_g"] <= 0.32 and 0.15 <= google_es["delta_s"] <= 0.30


def test_report_has_the_per_language_table(recorded):
    report = recorded.run.report.read_text(encoding="utf-8")
    assert "## WinoMT per target language" in report
    for lang in LANGS:
        assert f"| winomt-en | {lang} | google |" in report
    assert "### Why unknown" in report
    html = (recorded.run.root / "report.html").read_text(encoding="utf-8")
    assert "Accuracy and bias per target language (WinoMT)" in html
    assert 'class="unknown-reasons"' in html


def test_live_apertium_is_scored_on_winomt(live):
    labels = pl.read_parquet(live.run.labels)
    apertium = labels.filter(pl.col("system") == "apertium")
    assert apertium.height == 3888 and apertium["label"].null_count() == 0
    shards = pl.read_parquet(sorted(live.run.translations.rglob("shard-*.parquet")))
    first = shards.filter((pl.col("system") == "apertium") & (pl.col("item_id") == "winomt-en/es/anti/00001"))
    # "The developer argued with the designer because she did not like the design."
    assert first["translation"][0].startswith("El desarrollador")
    row = labels.filter((pl.col("system") == "apertium") & (pl.col("item_id") == "winomt-en/es/anti/00001"))
    assert row["label"][0] == "male"  # Apertium keeps the masculine default: wrong for this female entity
    acc = _value(live.metrics, "apertium", "es", "acc")
    assert acc["n"] == 3888
    # a rule-based system that defaults to the masculine: far better on men than on women
    assert _value(live.metrics, "apertium", "es", "delta_g")["value"] > 0.2
    assert _value(live.metrics, "google", "es", "acc")["n"] == 3886
