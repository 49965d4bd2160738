"""The embedding study on hand-made 2-dimensional .vec models, where every cosine, bin, share and
sanity figure below was worked out by hand (unit vectors such as (0.8, 0.6) give round cosines).

English: she (1, 0), he (0, 1), so cos(w, she) and cos(w, he) are a word's two coordinates:
    nurse (.8, .6) → direction +.2     engineer (.6, .8) → −.2     doctor (.5, .5) → exactly 0
    queen (.96, .28) → +.68            hospital (.28, .96) → −.68  teacher: not in the file
Italian: lei (1, 0), lui (.6, .8), so cos(lei, lui) = .6 and cos(v, lui) = .6·x + .8·y for a unit v:
    infermiera (.96, .28) → f .96, m .8      ingegnere (.28, .96) → f .28, m .936
    regina (.8, .6) → f .8, m .96            casa (1, 0), cura (0, 1): "casa di cura" is their mean
    insegnante (.6, .8) → f .6, m 1          medico, di: not in the file
"""

from __future__ import annotations

import io
import math

import polars as pl
import pytest
import yaml

from biaseval.config import load_config
from biaseval.metrics.embedding_study import study
from biaseval.metrics.word_vectors import load_vectors
from biaseval.errors import ConfigError
from biaseval.report.embedding_tables import embedding_section

EN = {"she": (1, 0), "he": (0, 1), "nurse": (0.8, 0.6), "engineer": (0.6, 0.8), "doctor": (0.5, 0.5),
      "queen": (0.96, 0.28), "hospital": (0.28, 0.96), "dog": (0.1, 0.9)}
IT = {"lei": (1, 0), "lui": (0.6, 0.8), "infermiera": (0.96, 0.28), "ingegnere": (0.28, 0.96), "regina": (0.8, 0.6),
      "casa": (1, 0), "cura": (0, 1), "insegnante": (0.6, 0.8), "cane": (0.3, 0.3)}
TRANSLATIONS = {"nurse": ("l'infermiera", "feminine"), "engineer": ("un ingegnere", "masculine"),
                "doctor": ("il medico", "masculine"), "queen": ("la regina", "feminine"),
                "hospital": ("casa di cura", "feminine"), "teacher": ("insegnante", "both")}
CLASSES = {"nurse": "neutral", "engineer": "neutral", "doctor": "neutral", "queen": "feminine",
           "hospital": "neutral", "teacher": "neutral"}
HOSPITAL_F, HOSPITAL_M = 1 / math.sqrt(2), 1.4 / math.sqrt(2)  # (.5, .5)·(1, 0) and ·(.6, .8), over |(.5, .5)|


def _vec(path, vectors: dict) -> None:
    lines = [f"{len(vectors)} 2"] + [f"{w} {x} {y}" for w, (x, y) in vectors.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _config(folder, **embedding):
    _vec(folder / "en.vec", EN)
    _vec(folder / "it.vec", IT)
    (folder / "words.txt").write_text("".join(f"{w}\t{c}\n" for w, c in CLASSES.items()), encoding="utf-8")
    suite = {"name": "hand-words", "kind": "words", "version": 1, "src_lang": "en", "targets": ["it"],
             "words": "words.txt", "detectors": {"it": "it-grammatical-gender"}}
    (folder / "hand-words.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    config = {"name": "hand", "suites": ["hand-words.yaml"], "systems": {"rec": {"backend": "identity"}},
              "embedding": {"models": {"en": {"path": "en.vec"}, "it": {"path": "it.vec"}}, **embedding},
              "metrics": {"bootstrap": 50}}
    (folder / "hand.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return load_config(folder / "hand.yaml")


def _rows() -> pl.DataFrame:
    return pl.DataFrame({"system": "rec", "suite": "hand-words", "subset": [CLASSES[w] for w in TRANSLATIONS],
                         "source": list(TRANSLATIONS), "tgt_lang": "it",
                         "translation": [t for t, _ in TRANSLATIONS.values()],
                         "label": [g for _, g in TRANSLATIONS.values()]})


@pytest.fixture(scope="module")
def hand(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hand")
    log = io.StringIO()
    result = study(_rows(), _config(folder), folder, log=log)
    return result, log.getvalue()


def _bins(result, side: str, feature: str) -> list[dict]:
    return result.bins.filter((pl.col("side") == side) & (pl.col("feature") == feature)).sort("bin").to_dicts()


def test_direction_bins_count_from_the_weakest_lean_on_both_sides(hand):
    result, _ = hand
    # Italian, 3 bins. Male side: sizes .16 (regina), .283 (casa di cura), .4 (insegnante), .656 (ingegnere)
    # over [0, .656]: edges .219, .437 → bin 1 the weakest (regina), bin 3 the strongest (ingegnere).
    male = _bins(result, "target", "direction-")
    assert [b["count"] for b in male] == [1, 2, 1]
    assert male[0]["examples"] == "queen" and male[2]["examples"] == "engineer"
    assert male[1]["examples"] == "teacher, hospital"  # the most extreme first
    assert male[0]["hi"] == 0.0 and male[0]["lo"] == pytest.approx(-0.656 / 3, abs=1e-4)
    assert male[2]["lo"] == pytest.approx(-0.656, abs=1e-4) and male[2]["hi"] == pytest.approx(-2 * 0.656 / 3, abs=1e-4)
    # shares: within the male side (4 words), and of all 5 words with a direction (medico has none)
    assert [b["share"] for b in male] == pytest.approx([0.25, 0.5, 0.25])
    assert [b["share_all"] for b in male] == pytest.approx([0.2, 0.4, 0.2])
    female = _bins(result, "target", "direction+")
    assert [b["count"] for b in female] == [0, 0, 1] and female[2]["share_all"] == pytest.approx(0.2)
    assert {b["binning"] for b in result.bins.to_dicts()} == {"5 equal-width", "3 equal-width"}


def test_a_direction_of_exactly_zero_is_on_neither_side(hand):
    result, _ = hand
    # English, 5 bins: nurse +.2, queen +.68, engineer −.2, hospital −.68, doctor exactly 0; over [0, .68]
    # the bins are .136 wide, so .2 is in bin 2 and .68 in bin 5 on each side.
    female, male = _bins(result, "source", "direction+"), _bins(result, "source", "direction-")
    assert [b["count"] for b in female] == [0, 1, 0, 0, 1] and female[1]["examples"] == "nurse"
    assert [b["count"] for b in male] == [0, 1, 0, 0, 1] and male[1]["examples"] == "engineer"
    assert [b["share_all"] for b in female] == pytest.approx([0, 0.2, 0, 0, 0.2])
    [zero] = _bins(result, "source", "direction0")
    assert zero["count"] == 1 and zero["examples"] == "doctor" and zero["share_all"] == pytest.approx(0.2)
    assert "doctor" not in ", ".join(b["examples"] for b in female + male)


def test_fixed_width_bins(tmp_path):
    result = study(_rows(), _config(tmp_path, bin_width=0.25), tmp_path, log=io.StringIO())
    # English intensities 0, .2, .2, .68, .68 → [0, .25): 3, [.25, .5): 0, [.5, .75): 2
    intensity = _bins(result, "source", "intensity")
    assert [b["count"] for b in intensity] == [3, 0, 2]
    assert [(b["lo"], b["hi"]) for b in intensity] == [(0.0, 0.25), (0.25, 0.5), (0.5, 0.75)]
    # Italian male sizes .16, .283, .4, .656 → [0, .25): 1, [.25, .5): 2, [.5, .75): 1, as −.25 < d ≤ 0 …
    male = _bins(result, "target", "direction-")
    assert [b["count"] for b in male] == [1, 2, 1]
    assert [(b["lo"], b["hi"]) for b in male] == [(-0.25, 0.0), (-0.5, -0.25), (-0.75, -0.5)]
    assert {b["binning"] for b in result.bins.to_dicts()} == {"width 0.25"}


@pytest.mark.parametrize("width, message", [(0, "greater than 0"), (3, "less than or equal to 2"),
                                            ("wide", "valid number")])
def test_bin_width_is_validated(tmp_path, width, message):
    with pytest.raises(ConfigError, match=rf"hand.yaml:\d+: embedding.bin_width: .*{message}"):
        _config(tmp_path, bin_width=width)


def test_sanity_figures(hand):
    result, _ = hand
    table = result.features
    assert table["cos_src_fm"].to_list() == pytest.approx([0.0] * 6, abs=1e-6)  # cos(she, he)
    assert table["cos_tgt_fm"].to_list() == pytest.approx([0.6] * 6, abs=1e-6)  # cos(lei, lui)
    hospital = table.filter(pl.col("word") == "hospital").row(0, named=True)
    assert hospital["cos_tgt_f"] == pytest.approx(HOSPITAL_F, abs=1e-5)
    assert hospital["cos_tgt_m"] == pytest.approx(HOSPITAL_M, abs=1e-5)
    # words with a vector before and after: nurse, engineer, queen, hospital.
    # delta_f: .96−.8, .28−.6, .8−.96, .707−.28 → 2 of 4 rose; delta_m: .8−.6, .936−.8, .96−.28, .99−.96 → 4 of 4
    metrics = {r["metric"]: r for r in result.metrics.to_dicts() if r["subset"] == "it"}
    assert metrics["share_rose_f"]["value"] == pytest.approx(0.5) and metrics["share_rose_f"]["n"] == 4
    assert metrics["share_rose_m"]["value"] == pytest.approx(1.0) and metrics["share_rose_m"]["n"] == 4
    report = "\n".join(embedding_section(result.bins, result.shift, [], result.features))
    assert "| hand-words | rec | en → it | 0.000 | 0.600 | 4 | 50.0% | 100.0% |" in report


def test_words_without_a_vector_are_counted_and_named(hand):
    result, log = hand
    table = result.features
    teacher = table.filter(pl.col("word") == "teacher").row(0, named=True)
    assert not teacher["src_found"] and math.isnan(teacher["direction_src"]) and teacher["tgt_found"]
    doctor = table.filter(pl.col("word") == "doctor").row(0, named=True)
    assert not doctor["tgt_found"] and doctor["tgt_missing"] == "medico" and math.isnan(doctor["direction_tgt"])
    hospital = table.filter(pl.col("word") == "hospital").row(0, named=True)
    assert hospital["tgt_found"] and hospital["tgt_missing"] == "di"  # left out of the mean of casa and cura
    assert table.filter(~pl.col("word").is_in(["doctor", "hospital"]))["tgt_missing"].to_list() == [""] * 4
    # the means count the words with a vector only (and say how many)
    means = {r["metric"]: r for r in result.metrics.to_dicts() if r["subset"] == "it"}
    assert means["mean_direction_src"]["n"] == 5 and means["mean_direction_tgt"]["n"] == 5
    assert means["mean_direction_src"]["value"] == pytest.approx(0.0, abs=1e-6)  # (.2 − .2 + 0 + .68 − .68) / 5
    source = "source words (en, hand-words): 1 of 6 has no vector in the embedding model and is left out of " \
             "bins, means and plots: teacher"
    target = ("translations by rec (it, hand-words): 1 of 6 has no vector in the embedding model and is left out of "
              "bins, means and plots: doctor → il medico; 2 tokens have no vector and are left out of their "
              "translation's mean: di, medico")
    assert f"embedding: {source}\n" in log and f"embedding: {target}\n" in log
    report = "\n".join(embedding_section(result.bins, result.shift, [], result.features))
    assert f"- {source}" in report and f"- {target}" in report


def test_every_word_found_is_said_too(tmp_path):
    rows = _rows().filter(pl.col("source").is_in(["nurse", "queen"]))
    log = io.StringIO()
    result = study(rows, _config(tmp_path), tmp_path, log=log)
    assert log.getvalue() == ""
    assert "Every word and translation has a vector" in "\n".join(
        embedding_section(result.bins, result.shift, [], result.features))


@pytest.mark.parametrize("line, message", [
    ("cat 1 x", r"vec:5: not a vector of numbers: 'x' \(number 2 of the vector of 'cat'\)"),
    ("cat 1 2.5.1", r"vec:5: not a vector of numbers: '2.5.1'"),
    ("cat nan 1", r"vec:5: not a vector of numbers: 'nan'"),
    ("cat 1", r"vec:5: 1 numbers, but the vectors have dimension 2"),
])
def test_a_malformed_line_is_an_error_even_for_a_word_not_needed(tmp_path, line, message):
    path = tmp_path / "en.vec"
    path.write_text("4 2\nshe 1 0\nhe 0 1\nnurse 0.8 0.6\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_vectors(path, ["she", "he", "nurse"])


def test_html_report_shows_the_sanity_figures_and_the_words_without_a_vector(hand, tmp_path):
    import html
    import json

    from biaseval.report.html import render_html
    from biaseval.metrics import METRIC_SCHEMA

    result, _ = hand
    root = tmp_path / "run"
    (root / "plots").mkdir(parents=True)
    info = {"run_id": "hand-1", "config_hash": "c0ffee", "biaseval_version": "0.1.0",
            "created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-01-01T00:00:00+00:00",
            "config": {"name": "hand", "description": "", "suites": ["hand-words"], "published": None,
                       "metrics": {"confidence": 0.95, "bootstrap": 50, "seed": 0}},
            "suites": {"hand-words": {"size": 6, "fingerprint": "e" * 24, "commit": None, "dataset": None,
                                      "version": 1, "path": None}},
            "systems": {"rec": {"backend": "identity", "version": "v1", "suites": ["hand-words"]}}}
    (root / "run.json").write_text(json.dumps(info), encoding="utf-8")
    result.metrics.select(list(METRIC_SCHEMA)).write_parquet(root / "metrics.parquet")
    result.features.write_parquet(root / "embedding_bias.parquet")
    result.bins.write_parquet(root / "embedding_bins.parquet")
    result.shift.write_parquet(root / "gender_shift.parquet")
    page = html.unescape(render_html(root))
    assert 'class="sanity suite-hand-words"' in page
    row = "<td>rec</td><td>en → it</td><td>0.000</td><td>0.600</td><td>4</td><td>50.0</td><td>100.0</td>"
    assert row in page.replace(' class="num"', "")
    assert "Words without a vector" in page and "doctor → il medico" in page and ": teacher<" in page
    assert "share of all (%)" in page and "direction0" in page
