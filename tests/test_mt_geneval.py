"""MT-GenEval suites (biaseval/suites/mt_geneval.py): their items, the scorer's numbers and intervals,
the references as a system, the report's table, the download from the pinned commit, and the two
tables of docs/mt-geneval.md kept equal to the commands that print them."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

import mt_geneval_oracle as oracle
from biaseval.cli import main
from biaseval.data import datasets
from biaseval.label.reference_words import WHITESPACE
from biaseval.metrics.mtgeneval import mtgeneval, undecidable
from biaseval.report.markdown import winomt_language_table
from biaseval.report.mtgeneval import mtgeneval_section
from biaseval.suites import SUITES
from biaseval.suites.mt_geneval import CONTEXT_TARGETS, TARGETS, context_file, context_gender, sentences_file
from conftest import REPO

DOC = REPO / "docs" / "mt-geneval.md"
NAMES = ["mt-geneval-counterfactual", "mt-geneval-counterfactual-dev", "mt-geneval-contextual",
         "mt-geneval-contextual-dev"]


def test_the_suites_are_listed():
    result = CliRunner().invoke(main, ["list", "suites"])
    assert result.exit_code == 0
    for name in NAMES:
        assert re.search(rf"^{name}\s+[\d,—]+\s+en→", result.output, re.M), name


def test_counterfactual_items_pair_each_sentence_with_its_other_gender(data_dir):
    items = oracle.items("mt-geneval-counterfactual")
    assert items.height == 2 * 300 * len(TARGETS)
    assert sorted(items["subset"].unique()) == sorted(f"{t}/{g}" for t in TARGETS for g in ("feminine", "masculine"))
    f = items.filter(pl.col("gold") == "female").select("tgt_lang", "line", "source", "reference", "counterfactual")
    m = items.filter(pl.col("gold") == "male").select("tgt_lang", "line", "source", "reference", "counterfactual")
    both = f.join(m, on=["tgt_lang", "line"], suffix="_m")
    assert both.height == f.height == m.height
    assert (both["counterfactual"] == both["reference_m"]).all() and (both["reference"] == both["counterfactual_m"]).all()
    first = items.filter(pl.col("item_id") == "mt-geneval-counterfactual/es/feminine/00001").row(0, named=True)
    assert first["source"].startswith("In 1937 she established") and first["reference"].startswith("En 1937 estableció")
    assert first["counterfactual"].endswith("su primer presidente.")


def test_contextual_items_hold_two_lines_and_a_gender_read_from_the_context(data_dir, mirror_lines):
    items = oracle.items("mt-geneval-contextual")
    for lang in CONTEXT_TARGETS:
        part = items.filter(pl.col("tgt_lang") == lang).sort("line")
        inputs = mirror_lines(context_file("test", "2to1", lang))
        assert part.height == len(inputs)
        assert part["reference"].to_list() == [r.strip() for r in mirror_lines(context_file("test", "original", lang))]
        assert part["counterfactual"].to_list() == [r.strip() for r in mirror_lines(context_file("test", "flipped", lang))]
        for source, line in zip(part["source"].to_list()[:50], inputs[:50]):
            context, sentence = (" ".join(p.split()) for p in line.split("<sep>"))
            assert source == (f"{context}\n{sentence}" if context else sentence)
    shares = items.group_by("gold").len().sort("gold", nulls_last=True)["len"].to_list()
    assert shares[0] > 4000 and shares[1] > 4000 and shares[2] < 500  # female, male, unmarked (null)


@pytest.mark.parametrize("context, gender", [
    ("In 1989 she was inducted into the Hall of Fame.", "female"),
    ("He continued to gain recognition as an applied artist.", "male"),
    ("There isn't any record of Mr. Hewes leaving.", "male"),
    ("Hutchins is the only female presenter of the series.", "female"),
    ("She met him in Paris.", None),  # both
    ("Faces was founded in 1997 by three participants.", None),  # neither
    ("Sheldon chaired the board.", None),  # words, not substrings
])
def test_context_gender(context, gender):
    assert context_gender(context) == gender


def test_targets_can_be_narrowed(data_dir):
    suite = SUITES.get("mt-geneval-contextual").with_targets(("nl", "es"))
    data = suite.open()
    assert set(data.table["tgt_lang"].unique()) == {"nl", "es"}
    assert set(data.target_ranges()) == {"nl", "es"}
    with pytest.raises(Exception, match="not xx"):
        SUITES.get("mt-geneval-counterfactual").with_targets(("es", "xx"))
    with pytest.raises(Exception, match="not nl"):
        SUITES.get("mt-geneval-counterfactual").with_targets(("nl",))  # nl is in the contextual set only


def test_whitespace_is_what_python_splits_on():
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    assert sorted(WHITESPACE) == sorted(c for c in points if c.isspace())
    assert all(len(("a" + c + "b").split()) == 2 for c in WHITESPACE)


# -- the scorer ------------------------------------------------------------------------------------

def _counts(cells: dict[tuple, int], suite: str = "mt-geneval-counterfactual") -> pl.DataFrame:
    """Label counts from {(gold, reason, partner): count} for one system and language."""
    rows = [{"system": "s", "suite": suite, "tgt_lang": "es", "gold": gold, "label": "x", "reason": reason,
             "partner": partner, "count": n} for (gold, reason, partner), n in cells.items()]
    return pl.DataFrame(rows, schema={"system": pl.String, "suite": pl.String, "tgt_lang": pl.String,
                                      "gold": pl.String, "label": pl.String, "reason": pl.String,
                                      "partner": pl.Boolean, "count": pl.Int64})


def _value(metrics: pl.DataFrame, subset: str, metric: str) -> dict:
    return metrics.filter((pl.col("subset") == subset) & (pl.col("metric") == metric)).row(0, named=True)


def test_paired_scores_from_counts():
    """100 sentences: both versions right 60, feminine wrong only 25, masculine wrong only 5, both wrong 10."""
    cells = {
        ("female", "reference-word", True): 60, ("male", "reference-word", True): 55,
        ("male", "no-unique-word", True): 5,
        ("female", "counterfactual-word", True): 25, ("male", "reference-word", False): 25,
        ("female", "reference-word", False): 5, ("male", "both-words", True): 5,
        ("female", "counterfactual-word", False): 10, ("male", "counterfactual-word", False): 10,
    }
    m = mtgeneval(_counts(cells), paired=True, n_boot=2000, seed=1)
    assert _value(m, "es/feminine", "acc")["value"] == pytest.approx(0.65)
    assert _value(m, "es/masculine", "acc")["value"] == pytest.approx(0.85)
    assert _value(m, "es/masculine", "undecided")["value"] == pytest.approx(0.05)
    both, gap = _value(m, "es", "acc"), _value(m, "es", "delta_g")
    assert both["value"] == pytest.approx(0.60) and both["n"] == 100
    assert gap["value"] == pytest.approx(0.20) and gap["n"] == 100
    for row in (both, gap, _value(m, "es/feminine", "acc")):
        assert row["ci_low"] < row["value"] < row["ci_high"]
    # the paired interval is narrower than one treating the two sets as independent samples
    unpaired = 1.96 * np.sqrt(0.65 * 0.35 / 100 + 0.85 * 0.15 / 100)
    assert gap["ci_high"] - gap["ci_low"] < 2 * unpaired


def test_unpaired_scores_and_missing_outputs():
    cells = {("female", "reference-word", None): 30, ("female", "counterfactual-word", None): 70,
             ("male", "reference-word", None): 90, ("male", "counterfactual-word", None): 10,
             (None, "reference-word", None): 5, ("female", None, None): 7}  # no output: not scored
    m = mtgeneval(_counts(cells, "mt-geneval-contextual"), paired=False, n_boot=500)
    assert _value(m, "es", "acc")["value"] == pytest.approx(125 / 205) and _value(m, "es", "acc")["n"] == 205
    assert _value(m, "es", "delta_g")["value"] == pytest.approx(0.6)
    assert _value(m, "es/unmarked", "acc")["value"] == 1.0
    assert _value(m, "es/feminine", "acc")["n"] == 100


# -- the references as a system --------------------------------------------------------------------

def test_references_backend(data_dir):
    from biaseval.translate import TRANSLATORS

    backend = TRANSLATORS.get("references")
    assert backend.covers(backend.Options(side="counterfactual"), "mt-geneval-contextual")
    assert not backend.covers(backend.Options(side="counterfactual"), "winomt-en")
    system = backend("refs", backend.Options(side="counterfactual"))
    items = oracle.language_items("mt-geneval-counterfactual", "es", "feminine").head(3)
    assert system.translate_items(items) == items["counterfactual"].to_list()
    no_references = SUITES.get("winomt-hi")
    with pytest.raises(Exception, match="have no counterfactual"):
        system.check({"winomt-hi": no_references.open()})


# -- the report ------------------------------------------------------------------------------------

def test_report_table_has_the_papers_shape():
    cells = {("female", "reference-word", True): 60, ("male", "reference-word", True): 60,
             ("female", "counterfactual-word", True): 40, ("male", "reference-word", False): 40}
    metrics = mtgeneval(_counts(cells), paired=True, n_boot=200)
    lines = mtgeneval_section(metrics)
    assert lines[0] == "## MT-GenEval: mt-geneval-counterfactual"
    row = next(line for line in lines if line.startswith("| es | s |"))
    # 100 of 100 masculine right: Wilson's interval, not the point a bootstrap of it gives
    assert row.startswith("| es | s | 60.0 [") and "| 100.0 [96.3, 100.0] |" in row and row.endswith("| 100 |")
    assert winomt_language_table(metrics).height == 0  # not in the WinoMT table


# -- the data: pinned, checked, downloaded ---------------------------------------------------------

@pytest.fixture(scope="module")
def mirror_lines(data_dir):
    from biaseval.data.textio import read_lines

    root = datasets.resolve("mt-geneval")
    return lambda rel: read_lines(root.path(rel))


def test_the_mirror_is_the_pinned_commit(data_dir):
    local = datasets.resolve("mt-geneval")
    assert local.origin == "BIASEVAL_DATA_DIR"
    local.verify()
    spec = local.spec
    assert spec.commit == "c77132ccd248d0b09ac185aebebc94f1051dbc9e" and spec.license == "CC BY-SA 3.0"
    for lang in TARGETS:
        assert sentences_file("test", "feminine", lang, lang) in spec.files
        assert sentences_file("dev", "masculine", lang, lang, annotated=True) in spec.files


def test_downloads_from_the_pinned_commit_when_not_mirrored(data_dir, tmp_path, monkeypatch):
    from test_datasets import _Server, _serve_archive, _tarball

    spec = datasets.get_spec("mt-geneval")
    mirror = data_dir / spec.dir
    monkeypatch.delenv("BIASEVAL_DATA_DIR", raising=False)
    monkeypatch.delenv("BIASEVAL_OFFLINE", raising=False)
    monkeypatch.setenv("BIASEVAL_CACHE_DIR", str(tmp_path / "cache"))
    folder = _serve_archive(tmp_path, spec, _tarball(mirror, f"machine-translation-gender-eval-{spec.commit}"))
    with _Server(folder) as server:
        monkeypatch.setenv("BIASEVAL_ARCHIVE_MIRROR", server.url)
        data = SUITES.get("mt-geneval-counterfactual").with_targets(("es",)).open()
        assert server.requests == 1
    assert data.commit == spec.commit and data.size == 600
    assert datasets.resolve("mt-geneval").origin == "cache"


# -- docs/mt-geneval.md ----------------------------------------------------------------------------

def _between(name: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"<!-- {name} -->\n(.*?)<!-- /{name} -->", text, re.S)
    assert found, f"{DOC.name} has no <!-- {name} --> block"
    return found.group(1)


def test_the_undecidable_lines_in_the_docs_are_what_the_command_prints(data_dir):
    result = CliRunner().invoke(main, ["mtgeneval", "undecidable"])
    assert result.exit_code == 0, result.output
    assert result.output == _between("undecidable")
    # and each listed sentence is one the script scores right for at least one swapped version
    rows = undecidable(oracle.items("mt-geneval-counterfactual"), "test").drop_nulls("line")
    items = oracle.items("mt-geneval-counterfactual").filter(pl.col("gold") == "female")
    listed = items.join(rows.rename({"language": "tgt_lang"}), on=["tgt_lang", "line"])
    assert listed.height == rows.height == 88
    for ref, ctf in listed.select("reference", "counterfactual").rows():
        assert oracle.text_decision(ctf, ref, ctf) or oracle.text_decision(ref, ctf, ref)


@pytest.fixture(scope="module")
def labeller_table(data_dir):
    from biaseval.metrics.mtgeneval_labeller import table

    return table(datasets.resolve("mt-geneval"))


# The least each language's analyser must do on MT-GenEval's tagged test references: accuracy (right of
# what it reads) and coverage of the spans that are not pronouns (docs/mt-geneval.md says what remains).
FLOORS = {"ar": (0.94, 0.94), "de": (0.97, 0.65), "es": (0.98, 0.83), "fr": (0.97, 0.79), "it": (0.97, 0.76),
          "pt": (0.97, 0.83), "ru": (0.93, 0.52)}


def test_the_labeller_table_in_the_docs_is_what_the_command_prints(labeller_table):
    from biaseval.report.mtgeneval import labeller_markdown

    assert labeller_markdown(labeller_table) == _between("labeller-table")


def test_each_analyser_keeps_its_floor(labeller_table):
    rows = {r["language"]: r for r in labeller_table}
    assert rows["hi"]["analyser"] is None  # no Hindi analyser: its row says so
    for lang, (accuracy, coverage) in FLOORS.items():
        assert rows[lang]["accuracy"] >= accuracy, (lang, rows[lang])
        assert rows[lang]["coverage_nouns"] >= coverage, (lang, rows[lang])


def test_recorded_outputs_in_the_scripts_layout_are_read(data_dir, tmp_path):
    """One file per subset, one translation per line, named as the script's inputs are: here the
    dataset's own reference files, read through the recorded backend and its checks."""
    config = tmp_path / "run.yaml"
    config.write_text(
        "name: t\nsuites: [mt-geneval-counterfactual, mt-geneval-contextual]\n"
        "targets: {mt-geneval-counterfactual: [es, hi], mt-geneval-contextual: [es, nl]}\n"
        "systems:\n  refs:\n    backend: recorded\n    options:\n      dataset: mt-geneval\n      files:\n"
        "        mt-geneval-counterfactual: 'data/sentences/test/{stem}.{target}'\n"
        "        mt-geneval-contextual: 'data/context/geneval-context-wikiprofessions-original-test.en_{target}.{target}'\n")
    result = CliRunner().invoke(main, ["validate", "--config", str(config)])
    assert result.exit_code == 0, result.output
    from biaseval.config import load_config
    from biaseval.translate import TRANSLATORS

    cfg = load_config(config)
    backend = TRANSLATORS.get("recorded")
    system = backend("refs", backend.Options(**cfg.systems["refs"].options))
    for suite in cfg.suites:
        items = SUITES.get(suite).open().table
        assert system.translate_items(items) == items["reference"].to_list()
