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
    """conf/otsc-en-apertium.yaml with a private translation store (otsc-en is found in conf/suites)."""
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
