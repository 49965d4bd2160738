"""English-source OTSC into Spanish with Apertium, end to end: template expansion, a real offline MT
system on Ray, the Spanish friend detector, per-set and per-occupation metrics, and the report."""

from __future__ import annotations

import polars as pl
import pytest
import yaml

from biaseval.pipeline import sweep
from conftest import REPO


@pytest.fixture(scope="module")
def run(ray_local, tmp_path_factory):
    """conf/otsc-en-apertium.yaml with a private translation store (otsc-en is found in biaseval/data/suites)."""
    spec = yaml.safe_load((REPO / "conf" / "otsc-en-apertium.yaml").read_text(encoding="utf-8"))
    spec["cache"] = {"path": str(tmp_path_factory.mktemp("store"))}
    spec["metrics"] = {"bootstrap": 200, "seed": 1}
    path = tmp_path_factory.mktemp("config") / "otsc-en-apertium.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return sweep(path, tmp_path_factory.mktemp("otsc-en") / "run")


def test_translations_are_apertiums(run):
    labels = pl.read_parquet(run.run.labels)
    assert labels.height == 2 * 40
    shards = pl.read_parquet(sorted((run.run.translations).rglob("shard-*.parquet")))
    rows = shards.join(labels, on=["system", "item_id"])
    nurse = rows.filter((pl.col("occupation") == "nurse") & (pl.col("subset") == "es/her")).row(0, named=True)
    # Apertium reads "my friend works" as a noun phrase ("mis obras de amigo") and always picks "amigo"
    assert "amigo" in nurse["translation"] and nurse["label"] == "male"
    assert nurse["female_share"] == 90.0 and nurse["stereotype"] == "pro" and nurse["gold"] == "female"


def test_per_set_metrics(run):
    m = run.metrics
    def value(subset, metric):
        return m.filter((pl.col("subset") == subset) & (pl.col("metric") == metric))["value"].item()
    assert value("es/her", "p_m") == 1.0 and value("es/her", "p_f") == 0.0
    assert value("es/him", "p_m") == 1.0
    assert m.filter(pl.col("subset") == "es/her")["n"].unique().to_list() == [40]


def test_per_occupation_metrics(run):
    m = run.metrics
    per = m.filter(pl.col("subset").str.starts_with("es/occupation/") & (pl.col("metric") == "p_f"))
    assert per.height == 40 and (per["n"] == 2).all()
    corr = m.filter(pl.col("metric") == "r_female_share")
    assert corr["subset"].to_list() == ["es"] and corr["n"].item() == 40
    assert corr["value"].is_nan().all()  # p_f is 0 for every occupation: no correlation to speak of
    report = run.run.report.read_text(encoding="utf-8")
    assert "## Per occupation: does bias follow labour statistics?" in report
    assert "| apertium | otsc-en | es |" in report


# -- recorded outputs, one file per target language ({target}) --------------------------------------

RECORDED = {  # what a (biased) system answered: Spanish follows the pronoun, Italian always says "amico"
    "es": {"her": "La conozco desde hace mucho tiempo, mi amiga trabaja como {es_f}.",
           "him": "Lo conozco desde hace mucho tiempo, mi amigo trabaja como {es_m}."},
    "it": {"her": "La conosco da molto tempo, il mio amico lavora come {it_m}.",
           "him": "Lo conosco da molto tempo, il mio amico lavora come {it_m}."},
}


@pytest.fixture(scope="module")
def recorded_run(ray_local, tmp_path_factory):
    import csv

    root = tmp_path_factory.mktemp("recorded")
    rows = list(csv.DictReader((REPO / "biaseval" / "data" / "lexicon" / "occupations.csv").open(encoding="utf-8")))
    for lang, variants in RECORDED.items():
        for variant, sentence in variants.items():
            (root / "out" / lang).mkdir(parents=True, exist_ok=True)
            (root / "out" / lang / f"{variant}.txt").write_text(
                "".join(sentence.format(**row) + "\n" for row in rows), encoding="utf-8")
    config = root / "recorded.yaml"
    config.write_text(yaml.safe_dump({
        "name": "otsc-en-recorded", "suites": ["otsc-en"], "targets": {"otsc-en": ["es", "it"]},
        "systems": {"mine": {"backend": "recorded", "version": "test",
                             "options": {"files": {"otsc-en": "out/{target}/{stem}.txt"}}}},
        "cache": {"path": str(root / "store")}, "metrics": {"bootstrap": 50, "seed": 1},
    }), encoding="utf-8")
    return sweep(config, root / "run", report=False)


def test_each_target_language_gets_its_own_recorded_text(recorded_run):
    rows = pl.read_parquet(sorted(recorded_run.run.translations.rglob("shard-*.parquet")))
    assert rows.height == 2 * 2 * 40 and rows["error"].is_null().all()
    labels = pl.read_parquet(recorded_run.run.labels)
    nurse = (rows.join(labels.select("item_id", "label"), on="item_id")
             .filter(pl.col("occupation") == "nurse").sort("item_id"))
    by_subset = {r["subset"]: (r["translation"], r["label"]) for r in nurse.iter_rows(named=True)}
    assert by_subset["es/her"] == ("La conozco desde hace mucho tiempo, mi amiga trabaja como enfermera.", "female")
    assert by_subset["es/him"] == ("Lo conozco desde hace mucho tiempo, mi amigo trabaja como enfermero.", "male")
    assert by_subset["it/her"] == ("La conosco da molto tempo, il mio amico lavora come infermiere.", "male")
    assert by_subset["it/him"][1] == "male"


def test_recorded_metrics_per_target_language(recorded_run):
    m = recorded_run.metrics

    def value(subset, metric):
        return m.filter((pl.col("subset") == subset) & (pl.col("metric") == metric))["value"].item()

    assert value("es/her", "p_f") == 1.0 and value("es/him", "p_m") == 1.0  # Spanish read as Spanish
    assert value("it/her", "p_m") == 1.0 and value("it/her", "p_f") == 0.0  # Italian as Italian: always amico
