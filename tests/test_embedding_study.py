"""The embedding-bias study end to end: a word-list suite, Apertium (English→Italian through
Spanish) on Ray, fastText models trained here, and every output of the study."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest
import yaml

from biaseval.errors import ConfigError
from biaseval.config import load_config
from biaseval.pipeline import sweep
from test_embeddings import _train

WORDS = {"nurse": "neutral", "engineer": "neutral", "teacher": "neutral", "doctor": "neutral", "king": "masculine",
         "queen": "feminine", "actress": "feminine", "actor": "masculine", "house": "neutral", "father": "masculine",
         "mother": "feminine", "friend": "neutral"}


def _model(folder: Path, name: str, words: list[str]) -> Path:
    import fasttext

    rng = random.Random(len(name))
    corpus = folder / f"{name}.txt"
    with open(corpus, "w", encoding="utf-8") as fh:
        for _ in range(20_000):
            fh.write(" ".join(rng.choice(words) for _ in range(10)) + "\n")
    path = folder / f"{name}.bin"
    _train(fasttext, corpus).save_model(str(path))
    return path


@pytest.fixture(scope="module")
def study_config(tmp_path_factory, data_dir):
    folder = tmp_path_factory.mktemp("study")
    (folder / "words.txt").write_text("".join(f"{w}\t{c}\n" for w, c in WORDS.items()), encoding="utf-8")
    suite = {"name": "words-en-it", "kind": "words", "version": 1, "src_lang": "en", "targets": ["it"],
             "words": "words.txt", "detectors": {"it": "it-grammatical-gender"}}
    (folder / "words-en-it.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    english = [*WORDS, "she", "he", "her", "him"]
    italian = ["lei", "lui", "infermiere", "infermiera", "ingegnere", "maestro", "dottore", "re", "regina", "attrice",
               "attore", "casa", "padre", "madre", "amico", "amica"]
    config = {
        "name": "study", "suites": ["words-en-it.yaml"],
        "systems": {"apertium": {"backend": "apertium", "version": "eng-spa|spa-ita",
                                 "options": {"pair": "eng-spa|spa-ita"}}},
        "embedding": {"models": {"en": {"path": str(_model(folder, "en", english))},
                                 "it": {"path": str(_model(folder, "it", italian))}}},
        "cache": {"path": str(folder / "store")},
        "metrics": {"bootstrap": 200},
    }
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run(study_config, ray_local, tmp_path_factory):
    return sweep(study_config, tmp_path_factory.mktemp("run") / "out")


def test_features_one_row_per_word_and_system(run):
    table = pl.read_parquet(run.run.root / "embedding_bias.parquet")
    assert table.height == len(WORDS)
    assert set(table["word"]) == set(WORDS)
    king = table.filter(pl.col("word") == "king").row(0, named=True)
    assert king["translation"] == "Re" and king["tgt_gender"] == "masculine" and king["gender_class"] == "masculine"
    for row in table.iter_rows(named=True):
        assert row["intensity_src"] == pytest.approx(abs(row["cos_src_f"] - row["cos_src_m"]))
        assert row["direction_tgt"] == pytest.approx(row["cos_tgt_f"] - row["cos_tgt_m"])
        assert row["delta_m"] == pytest.approx(row["cos_tgt_m"] - row["cos_src_m"])


def test_bins_and_shift_tables(run):
    bins = pl.read_parquet(run.run.root / "embedding_bins.parquet")
    source = bins.filter((pl.col("side") == "source") & (pl.col("feature") == "intensity"))
    assert source.height == 5 and source["count"].sum() == len(WORDS)  # 5 bins for English
    target = bins.filter((pl.col("side") == "target") & (pl.col("feature") == "intensity"))
    assert target.height == 3 and target["system"].unique().to_list() == ["apertium"]  # 3 for Italian
    assert source["share"].sum() == pytest.approx(1.0)
    shift = pl.read_parquet(run.run.root / "gender_shift.parquet")
    neutral = shift.filter(pl.col("gender_class") == "neutral")
    assert neutral["count"].sum() == sum(c == "neutral" for c in WORDS.values())
    assert neutral["share"].sum() == pytest.approx(1.0)


def test_metrics_report_and_plots(run):
    m = run.metrics
    assert {"mean_intensity_src", "mean_intensity_tgt", "mean_delta_f"} <= set(m["metric"])
    assert m.filter(pl.col("subset") == "it/shift/feminine")["metric"].to_list()[:2] == ["to_masculine", "to_feminine"]
    plots = sorted((run.run.root / "plots").glob("embedding-*.png"))
    assert len(plots) == 1 and plots[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = run.run.report.read_text(encoding="utf-8")
    assert "## Embedding bias before and after translation" in report and f"({plots[0].relative_to(run.run.root)})" in report


def test_missing_model_is_a_config_error(study_config, tmp_path):
    config = yaml.safe_load(study_config.read_text(encoding="utf-8"))
    config["embedding"]["models"]["it"]["path"] = str(tmp_path / "cc.it.300.bin")
    config["suites"] = [str(study_config.parent / "words-en-it.yaml")]
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"embedding.models.it.path: model file .*cc.it.300.bin not found"):
        load_config(path)
    del config["embedding"]["models"]["it"]
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"embedding.models: no embedding model for 'it'"):
        load_config(path)
