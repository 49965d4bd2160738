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

pytestmark = pytest.mark.slow  # fastText models trained, a sweep on Ray

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
    direction = bins.filter((pl.col("side") == "source") & pl.col("feature").str.starts_with("direction"))
    assert direction["share_all"].sum() == pytest.approx(1.0)  # female, male and exactly-0 words: every word
    assert direction["count"].sum() == len(WORDS) and set(bins["binning"]) == {"5 equal-width", "3 equal-width"}
    shift = pl.read_parquet(run.run.root / "gender_shift.parquet")
    neutral = shift.filter(pl.col("gender_class") == "neutral")
    assert neutral["count"].sum() == sum(c == "neutral" for c in WORDS.values())
    assert neutral["share"].sum() == pytest.approx(1.0)


def test_metrics_report_and_plots(run, study_config):
    m = run.metrics
    assert {"mean_intensity_src", "mean_intensity_tgt", "mean_delta_f", "share_rose_f", "share_rose_m"} <= set(m["metric"])
    assert m.filter(pl.col("subset") == "it/shift/feminine")["metric"].to_list()[:2] == ["to_masculine", "to_feminine"]
    plots = sorted((run.run.root / "plots").glob("embedding-*.png"))
    assert len(plots) == 1 and plots[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = run.run.report.read_text(encoding="utf-8")
    assert "## Embedding bias before and after translation" in report and f"({plots[0].relative_to(run.run.root)})" in report
    # the sanity figures: cos(she, he) and cos(lei, lui) of the models, as fastText itself gives them
    import fasttext
    import numpy as np

    models = yaml.safe_load(study_config.read_text(encoding="utf-8"))["embedding"]["models"]
    cos = {}
    for lang, (f, m) in {"en": ("she", "he"), "it": ("lei", "lui")}.items():
        model = fasttext.load_model(models[lang]["path"])
        a, b = model.get_word_vector(f), model.get_word_vector(m)
        cos[lang] = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    table = pl.read_parquet(run.run.root / "embedding_bias.parquet")
    assert table["cos_src_fm"].unique().to_list() == [pytest.approx(cos["en"], abs=1e-5)]
    assert table["cos_tgt_fm"].unique().to_list() == [pytest.approx(cos["it"], abs=1e-5)]
    assert f"| words-en-it | apertium | en → it | {cos['en']:.3f} | {cos['it']:.3f} |" in report


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


def test_a_malformed_line_in_a_vec_stops_scoring_with_exit_2(run, tmp_path, capsys):
    """Any line of a .vec, needed or not, is checked: `biaseval score` names the file and line and
    exits 2, without a traceback."""
    import json
    import shutil

    from biaseval.cli import run_command

    copy = tmp_path / "run"
    shutil.copytree(run.run.root, copy)
    bad = tmp_path / "it.vec"
    bad.write_text("3 2\nlei 1 0\nlui 0 1\nzzz 0.5 O.5\n", encoding="utf-8")  # a letter O, in a word not needed
    info = json.loads((copy / "run.json").read_text(encoding="utf-8"))
    info["config"]["embedding"]["models"]["it"] = {"path": str(bad)}
    (copy / "run.json").write_text(json.dumps(info), encoding="utf-8")
    capsys.readouterr()
    assert run_command("score", ["--run", str(copy)]) == 2
    err = capsys.readouterr().err
    assert f"error: {bad}:4: not a vector of numbers: 'O.5' (number 2 of the vector of 'zzz')" in err
    assert "Traceback" not in err
