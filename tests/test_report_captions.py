"""Captions from what was computed: every caption, note and header of report.md and report.html that
names an interval method names one the rows it describes were made with (their ``interval`` record:
Wilson, Newcombe paired or unpaired, bootstrap with its resamples and seed), and nothing names a
method no row uses. The metric rows come from the real scorers on small label counts: WinoMT per
language (Wilson's Acc, Newcombe's ΔS of independent sets, a bootstrap ΔG), TGBI (bootstrap P and
index), MT-GenEval (Wilson's shares, Newcombe's paired ΔG), MiTTenS (Wilson's only) and GEST (Wilson's
masculine rates and shares read, a bootstrap f_m and f_s, no interval for the Agresti-Coull centred ones)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

from biaseval.metrics import tgbi, winomt
from biaseval.metrics.gest import gest
from biaseval.metrics.mittens import mittens
from biaseval.metrics.mtgeneval import mtgeneval
from biaseval.metrics.paired import pairwise
from biaseval.report import methods
from biaseval.report.html import render_html
from biaseval.report.markdown import render

SEED = 11
KEYWORDS = {"wilson": "Wilson", "newcombe-paired": "Newcombe", "newcombe": "Newcombe", "bootstrap": "bootstrap"}
NAMED = ("Wilson", "Newcombe", "bootstrap", "resample")


def _winomt() -> pl.DataFrame:
    rows = []
    for system, right in (("a", 30), ("b", 20)):
        for stereotype in ("pro", "anti"):
            for gold, other in (("male", "female"), ("female", "male")):
                rows += [(system, "winomt-en", "es", stereotype, gold, gold, right),
                         (system, "winomt-en", "es", stereotype, gold, other, 40 - right)]
    labelled = pl.DataFrame(rows, schema=["system", "suite", "tgt_lang", "stereotype", "gold", "label", "count"],
                            orient="row")
    return winomt(labelled, basis="acc", by_target=True, n_boot=200, seed=SEED)


def _tgbi() -> pl.DataFrame:
    rows = [(system, "tgbi-hi", subset, label) for system in ("a", "b") for subset in ("formal", "polite")
            for label in ("male", "female", "neutral", "neutral")]
    labelled = pl.DataFrame(rows, schema=["system", "suite", "subset", "label"], orient="row")
    return tgbi(labelled, index_sets=["formal", "polite"], n_boot=200, seed=SEED)


def _mtgeneval() -> pl.DataFrame:
    rows = []
    for system, wrong in (("a", 5), ("b", 25)):
        for gold in ("female", "male"):
            rows += [(system, "mt-geneval-counterfactual", "es", gold, "reference-word", True, 100 - wrong),
                     (system, "mt-geneval-counterfactual", "es", gold, "counterfactual-word", False, wrong)]
    counts = pl.DataFrame(rows, schema=["system", "suite", "tgt_lang", "gold", "reason", "partner", "count"], orient="row")
    return mtgeneval(counts, paired=True, n_boot=200, seed=SEED)


def _mittens() -> pl.DataFrame:
    rows = []
    for system, right in (("a", 9), ("b", 6)):
        for gold, other in (("female", "male"), ("male", "female")):
            rows += [(system, "mittens-2xx", "es/coref", gold, gold, right, "cues"),
                     (system, "mittens-2xx", "es/coref", gold, other, 10 - right, "cues"),
                     (system, "mittens-2xx", "es/coref", gold, "unknown", 2, None)]
    counts = pl.DataFrame(rows, schema=["system", "suite", "subset", "gold", "label", "count", "reason"], orient="row")
    return mittens(counts, direction="2xx", levels=(("es", "high"),))


def _gest() -> pl.DataFrame:
    rows = []
    for system, masculine in (("a", 8), ("b", 5)):
        for stereotype in range(1, 17):
            rows += [(system, "gest", f"sk/{stereotype:02d}", "male", masculine + (stereotype > 7)),
                     (system, "gest", f"sk/{stereotype:02d}", "female", 10 - masculine),
                     (system, "gest", f"sk/{stereotype:02d}", "unknown", 2)]
    counts = pl.DataFrame(rows, schema=["system", "suite", "subset", "label", "count"], orient="row")
    return gest(counts, n_boot=200, seed=SEED)


def _pairs(suite: str) -> pl.DataFrame:
    items = [f"{suite}/{k}" for k in range(20)]
    return pairwise(pl.DataFrame({"item_id": items * 2, "system": ["a"] * 20 + ["b"] * 20,
                                  "outcome": [True] * 20 + [k % 3 == 0 for k in range(20)]}), suite)


def _run(root: Path, metrics: pl.DataFrame, suites: list[str]) -> Path:
    root.mkdir()
    info = {"run_id": "captions-20260101T000000Z-abcdef", "config_hash": "c0ffee", "biaseval_version": "0.1.0",
            "created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-01-01T00:00:00+00:00",
            "config": {"name": "captions", "description": "", "suites": suites, "published": None,
                       "metrics": {"confidence": 0.95, "bootstrap": 1000, "seed": SEED}},
            "suites": {s: {"size": 10, "fingerprint": "f" * 24, "commit": None, "dataset": None, "version": 1,
                           "path": None} for s in suites},
            "systems": {s: {"backend": "identity", "version": f"{s} v1", "suites": suites} for s in ("a", "b")}}
    (root / "run.json").write_text(json.dumps(info), encoding="utf-8")
    metrics.write_parquet(root / "metrics.parquet")
    return root


class _Sections(HTMLParser):
    """The text of each ``section.suite`` of a page (by suite), and of the header's intervals line."""

    def __init__(self, page: str):
        super().__init__()
        self.suites: dict[str, str] = {}
        self.header: list[str] = []
        self._suite, self._depth, self._dd = None, 0, False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section" and "suite" in (attrs.get("class") or ""):
            self._suite, self._depth = attrs["data-suite"], 1
            self.suites[self._suite] = ""
        elif tag == "section" and self._suite:
            self._depth += 1
        self._dd = tag == "dd" or self._dd

    def handle_endtag(self, tag):
        if tag == "section" and self._suite:
            self._depth -= 1
            if self._depth == 0:
                self._suite = None
        if tag == "dd":
            self._dd = False

    def handle_data(self, data):
        if self._suite:
            self.suites[self._suite] += data
        if self._dd:
            self.header.append(data)


def _named(text: str) -> set[str]:
    return {word for word in NAMED if re.search(word, text, re.IGNORECASE)}


def _allowed(rows: pl.DataFrame) -> set[str]:
    used = {KEYWORDS[m] for m in methods.used(rows)}
    return used | ({"resample"} if "bootstrap" in used else set())


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    suites = ["winomt-en", "tgbi-hi", "mt-geneval-counterfactual", "mittens-2xx", "gest"]
    frames = [_winomt(), _tgbi(), _mtgeneval(), _mittens(), _gest(), *(_pairs(s) for s in suites)]
    return _run(tmp_path_factory.mktemp("captions") / "run", pl.concat(frames), suites)


def test_the_rows_record_their_methods(mixed):
    metrics = pl.read_parquet(mixed / "metrics.parquet")
    by = {(r["suite"], r["subset"], r["metric"]): r for r in metrics.filter(pl.col("system") == "a").iter_rows(named=True)}
    assert by[("winomt-en", "es", "acc")]["interval"] == "wilson"
    assert by[("winomt-en", "es", "delta_s")]["interval"] == "newcombe"
    assert (by[("winomt-en", "es", "delta_g")]["interval"], by[("winomt-en", "es", "delta_g")]["resamples"],
            by[("winomt-en", "es", "delta_g")]["seed"]) == ("bootstrap", 200, SEED)
    assert by[("mt-geneval-counterfactual", "es", "delta_g")]["interval"] == "newcombe-paired"
    assert methods.used(metrics.filter(pl.col("suite") == "mittens-2xx")) == {"wilson"}
    assert by[("tgbi-hi", "all", "tgbi")]["interval"] == "bootstrap"
    assert (by[("gest", "sk", "f_m")]["interval"], by[("gest", "sk", "f_m")]["resamples"],
            by[("gest", "sk", "f_m")]["seed"]) == ("bootstrap", 200, SEED)
    assert by[("gest", "sk/01", "masculine_rate")]["interval"] == by[("gest", "sk", "read")]["interval"] == "wilson"
    assert by[("gest", "sk", "f_m_ac")]["interval"] is None


def test_each_suites_captions_name_only_its_methods(mixed):
    """In report.html each suite's section names only methods its rows use, and the header all of
    them; MT-GenEval says Newcombe's paired interval, never a bootstrap; MiTTenS only Wilson's."""
    metrics = pl.read_parquet(mixed / "metrics.parquet")
    page = _Sections(render_html(mixed))
    assert set(page.suites) == {"winomt-en", "tgbi-hi", "mt-geneval-counterfactual", "mittens-2xx", "gest"}
    for suite, text in page.suites.items():
        rows = metrics.filter(pl.col("suite") == suite)
        assert _named(text) <= _allowed(rows), (suite, _named(text) - _allowed(rows))
        assert {KEYWORDS[m] for m in methods.used(rows)} <= _named(text), suite  # and says what it used
    assert _named(page.suites["mittens-2xx"]) == {"Wilson"}
    assert "bootstrap" not in _named(page.suites["mt-geneval-counterfactual"])
    assert "200 resamples, seed 11" in page.suites["winomt-en"]
    assert "200 resamples, seed 11 (p_f, p_m, f_m, f_s)" in page.suites["gest"]
    header = " ".join(page.header)
    assert _named(header) == _allowed(metrics)


def test_the_markdown_names_what_was_computed(mixed):
    metrics = pl.read_parquet(mixed / "metrics.parquet")
    info = json.loads((mixed / "run.json").read_text(encoding="utf-8"))
    text = render(metrics, info, None)
    sections = {part.split("\n", 1)[0]: part for part in text.split("\n## ")[1:]}
    mtgeneval_part = sections["MT-GenEval: mt-geneval-counterfactual"]
    assert "paired bootstrap" not in text and "Newcombe's interval for a difference of paired shares (ΔG)" in mtgeneval_part
    assert _named(mtgeneval_part) == {"Wilson", "Newcombe"}
    assert _named(sections["MiTTenS (Robinson et al. 2024, Table 3)"]) == {"Wilson"}
    languages = sections["WinoMT per target language"]
    assert "bootstrap for ΔG and ΔS" not in languages and _named(languages) == {"Wilson", "Newcombe", "bootstrap", "resample"}
    assert "percentile bootstrap over items, 200 resamples, seed 11 (ΔG)" in languages
    gest_part = sections["GEST (Pikuliak et al. 2024): masculine rate per stereotype, f_m and f_s"]
    assert _named(gest_part) == {"Wilson", "bootstrap", "resample"}
    assert "Wilson's score interval (read); percentile bootstrap over items, 200 resamples, seed 11 (f_m, f_s)" in gest_part
    assert _named(text) == _allowed(metrics)


def test_nothing_resampled_nothing_said(tmp_path):
    """A run whose rows are all Wilson's (MiTTenS) says so, and says nothing of a bootstrap, though its
    config asks for 1000 resamples: the captions follow the rows, not the config."""
    root = _run(tmp_path / "run", pl.concat([_mittens(), _pairs("mittens-2xx")]), ["mittens-2xx"])
    metrics = pl.read_parquet(root / "metrics.parquet")
    info = json.loads((root / "run.json").read_text(encoding="utf-8"))
    for text in (render_html(root), render(metrics, info, None)):
        assert _named(text) == {"Wilson"}, _named(text)


def test_a_run_scored_before_the_record_names_no_method(tmp_path):
    """An older metrics.parquet, without the interval record: the captions say the method is not
    recorded and name none."""
    metrics = pl.concat([_winomt(), _mittens()]).drop("interval", "resamples", "seed")
    root = _run(tmp_path / "run", metrics, ["winomt-en", "mittens-2xx"])
    info = json.loads((root / "run.json").read_text(encoding="utf-8"))
    for text in (render_html(root), render(metrics, info, None)):
        assert _named(text) == set() and "not recorded" in text


def test_the_signature_says_how_the_interval_was_made():
    from biaseval.metrics.scoring import interval_signature

    rows = pl.DataFrame({"interval": ["wilson", "bootstrap", None, "newcombe-paired"], "resamples": [None, 1000, None, None],
                         "seed": [None, 2019, None, None]}, schema={"interval": pl.String, "resamples": pl.Int64, "seed": pl.Int64})
    assert rows.select(interval_signature(0.95).alias("ci"))["ci"].to_list() == [
        "0.95,wilson", "0.95,bootstrap:1000,seed:2019", "none", "0.95,newcombe-paired"]
