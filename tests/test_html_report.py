"""report.html: a real paper run (three systems, on a local Ray) rendered to one self-contained page,
opened in headless Chromium: the tables are in the DOM, every image is an inline PNG, nothing points
at the network, and the page draws. The screenshot and the page are kept in test-artifacts/. Names
and messages from the data are escaped wherever they appear.

Chromium is Debian's package (/usr/bin/chromium; CI installs it in .ci/run). Without it the browser
test fails, it does not skip.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import shutil
import subprocess
import uuid
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from biaseval.pipeline import sweep
from biaseval.report import plots
from biaseval.report.html import render_html
from biaseval.report.tables import Value, headline_panels, metric_rows, pairwise_grid, significance, value_cell
from conftest import REPO
from metric_rows import metric_frame
from procs import kill_sessions, sessions_matching

SYSTEMS = ["google", "microsoft", "aws"]
CHROMIUM = "/usr/bin/chromium"
# no traffic beyond loopback (tests/loopback_guard.py; chromium is not Python, so by flags): with only the
# three --disable-* ones, it still sent DNS queries at start; the resolver rule answers every name but
# localhost "not found" without asking (left: a UDP connect towards 2001:4860:4860::8888, its IPv6
# reachability probe, which sends nothing)
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost"]
ARTIFACTS = REPO / "test-artifacts"
FILTERS_JS = (REPO / "biaseval" / "report" / "templates" / "filters.js").read_text(encoding="utf-8")
PNG = b"\x89PNG\r\n\x1a\n"


# --- helpers --------------------------------------------------------------------------------------

class _Dom(HTMLParser):
    """Tables (their class), images (their src), ids and links of an HTML document, and its text."""

    def __init__(self, text: str):
        super().__init__()
        self.tables: list[str] = []
        self.images: list[str] = []
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.urls: list[str] = []
        self.tags: set[str] = set()
        self.text: list[str] = []
        self.scripts: list[str] = []  # the text of each script element
        self._script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.add(tag)
        if tag == "script":
            self._script = True
            self.scripts.append("")
        if tag == "table":
            self.tables.append(attrs.get("class") or "")
        if tag == "img":
            self.images.append(attrs.get("src") or "")
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and "href" in attrs:
            self.links.append(attrs["href"])
        for key in ("src", "href", "srcset", "poster", "data", "action", "background"):
            if attrs.get(key):
                self.urls.append(attrs[key])

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = False

    def handle_data(self, data):
        if self._script:
            self.scripts[-1] += data
            return
        self.text.append(data)


def _mcnemar(b: int, c: int) -> float:
    n, k = b + c, min(b, c)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


def _expected_pairwise(run_root: Path) -> pl.DataFrame:
    """WinoMT's paired comparisons recomputed here, apart from the scorer, from the run's labels and
    gold genders: for A and B, the items both labelled, McNemar's exact p on those only A or only B
    gets right, and A's accuracy minus B's."""
    gold = pl.read_parquet(run_root / "items.parquet").filter(pl.col("suite") == "winomt-hi").select("item_id", "gold")
    labels = (pl.read_parquet(run_root / "labels.parquet").filter(pl.col("suite") == "winomt-hi")
              .join(gold, on="item_id").with_columns((pl.col("label") == pl.col("gold")).alias("correct")))
    wide = labels.pivot(on="system", index="item_id", values="correct", aggregate_function="first")
    systems = sorted(c for c in wide.columns if c != "item_id")
    rows = []
    for a in systems:
        for b in systems:
            if a == b:
                continue
            both = wide.select(a, b).drop_nulls()
            only_a = both.filter(pl.col(a) & ~pl.col(b)).height
            only_b = both.filter(~pl.col(a) & pl.col(b)).height
            for metric, value in (("mcnemar_p", _mcnemar(only_a, only_b)), ("diff_correct", (only_a - only_b) / both.height)):
                rows.append({"system": a, "subset": f"vs/{b}", "metric": metric, "value": value, "n": both.height})
    return pl.DataFrame(rows)


def _history(metrics: pl.DataFrame) -> pl.DataFrame:
    """Four monitoring runs a week apart, built around the real run's headline values; Google's WinoMT
    accuracy drops significantly in the third."""
    base = datetime(2026, 10, 1, 6, 0, tzinfo=UTC)
    headline = metrics.filter(
        ((pl.col("suite") == "winomt-hi") & (pl.col("subset") == "all") & pl.col("metric").is_in(["acc", "delta_g", "delta_s"]))
        | ((pl.col("suite") == "otsc-hi") & (pl.col("metric") == "p_f"))
        | ((pl.col("suite") == "tgbi-hi") & (pl.col("metric") == "tgbi"))
    ).select("system", "suite", "subset", "metric", "value", "ci_low", "ci_high")
    frames = []
    for k in range(4):
        shift = 0.01 * ((k * 7) % 3 - 1)
        drop = (k >= 2) & (pl.col("system") == "google") & (pl.col("metric") == "acc")
        frame = headline.with_columns(
            pl.lit(f"monitor-{k}").alias("run_id"),
            pl.lit(base + timedelta(days=7 * k)).alias("created_at"),
            *(pl.when(drop).then(pl.col(c) - 0.08).otherwise(pl.col(c) + shift).alias(c)
              for c in ("value", "ci_low", "ci_high")),
        )
        significant = (pl.lit(k == 2) & (pl.col("system") == "google") & (pl.col("metric") == "acc"))
        frame = frame.with_columns(
            pl.lit(None if k == 0 else shift, dtype=pl.Float64).alias("change"),
            pl.lit(None if k == 0 else shift - 0.02, dtype=pl.Float64).alias("change_low"),
            pl.lit(None if k == 0 else shift + 0.02, dtype=pl.Float64).alias("change_high"),
            pl.lit(None if k == 0 else 0.5, dtype=pl.Float64).alias("mcnemar_p"),
            significant.alias("significant"),
        ).with_columns(
            pl.when(significant).then(-0.08).otherwise(pl.col("change")).alias("change"),
            pl.when(significant).then(-0.11).otherwise(pl.col("change_low")).alias("change_low"),
            pl.when(significant).then(-0.05).otherwise(pl.col("change_high")).alias("change_high"),
            pl.when(significant).then(1e-6).otherwise(pl.col("mcnemar_p")).alias("mcnemar_p"),
            pl.when(significant).then(pl.lit("drift")).otherwise(pl.lit("ok")).alias("status"),
        )
        frames.append(frame)
    return pl.concat(frames).select("run_id", "created_at", "system", "suite", "subset", "metric", "value", "ci_low",
                                    "ci_high", "change", "change_low", "change_high", "mcnemar_p", "significant", "status")


def _chromium(args: list[str], workdir: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run headless Chromium once with a fresh profile and HOME under ``workdir``; afterwards no
    process of it is left (its own session, and the crash handler's, which starts another session)."""
    marker = workdir / f"chromium-{uuid.uuid4().hex[:8]}"
    home = marker / "home"
    home.mkdir(parents=True)
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_CACHE_HOME": str(home / ".cache")}
    command = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={marker / 'profile'}", *args]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_sessions(({proc.pid} | sessions_matching(str(marker))) - {os.getsid(0)}, timeout=10)
        out, err = proc.communicate()
        pytest.fail(f"chromium did not finish within {timeout} s: {err.decode(errors='replace')[-2000:]}")
    finally:
        sessions = ({proc.pid} | sessions_matching(str(marker))) - {os.getsid(0)}
        assert kill_sessions(sessions, timeout=10) == [], "chromium processes survived"
    assert sessions_matching(str(marker)) == set(), "a chromium process is still running"
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


# --- fixtures -------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def chromium() -> str:
    if not (Path(CHROMIUM).exists() and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(f"Chromium is not installed ({CHROMIUM} not found): the report.html test opens the page in "
                    "headless Chromium. Install Debian's package: apt-get install chromium "
                    "(CI installs it in .ci/run).", pytrace=False)
    return CHROMIUM


@pytest.fixture(scope="module")
def run(data_dir, ray_local, paper_config, tmp_path_factory) -> Path:
    summary = sweep(paper_config, tmp_path_factory.mktemp("html") / "run", systems=SYSTEMS)
    return summary.run.root


# --- tests ----------------------------------------------------------------------------------------

def test_report_html_opens_in_chromium(chromium, run, tmp_path):
    metrics = pl.read_parquet(run / "metrics.parquet")
    history = _history(metrics)
    page = render_html(run, history)
    path = run / "report.html"
    path.write_text(page, encoding="utf-8")
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copyfile(path, ARTIFACTS / "report.html")

    # Self-contained: no script, no stylesheet link, no URL anywhere but in-page anchors and data: URIs.
    assert "http://" not in page and "https://" not in page
    source = _Dom(page)
    assert not {"link", "iframe", "object", "embed"} & source.tags
    assert source.scripts == [FILTERS_JS]  # one script, inline: the examples' filters
    assert all(u.startswith(("data:image/png;base64,", "#")) for u in source.urls), source.urls
    assert all(link[1:] in source.ids for link in source.links if link.startswith("#")), "a contents link has no target"

    shot = ARTIFACTS / "report-screenshot.png"
    shot.unlink(missing_ok=True)
    url = path.resolve().as_uri()
    dumped = _chromium(["--dump-dom", url], tmp_path)
    assert dumped.returncode == 0, dumped.stderr.decode(errors="replace")[-2000:]
    taken = _chromium([f"--screenshot={shot}", "--window-size=1280,6000", url], tmp_path)
    assert taken.returncode == 0, taken.stderr.decode(errors="replace")[-2000:]

    dom_text = dumped.stdout.decode("utf-8")
    assert "http://" not in dom_text and "https://" not in dom_text
    dom = _Dom(dom_text)
    text = " ".join(dom.text)
    # the header: run id, config hash, systems with their versions, suites with their dataset commit
    info = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert info["run_id"] in text and info["config_hash"] in text
    for system in SYSTEMS:
        assert info["systems"][system]["version"] in text
    assert info["suites"]["winomt-hi"]["commit"][:12] in text
    # the tables: published comparisons, per-suite metrics, paired tests, drift
    for table in ("published suite-tgbi-hi", "published suite-otsc-hi", "published suite-winomt-hi",
                  "metrics suite-tgbi-hi", "metrics suite-otsc-hi", "metrics suite-winomt-hi",
                  "pairwise suite-winomt-hi", "systems", "suites", "drift"):
        assert table in dom.tables, (table, dom.tables)
    assert "Known differences between the paper's print and its recorded data" in text
    # Google is more accurate than both others on WinoMT-Hindi (69.0 against 57.7 and 49.9), AWS less
    assert "google is significantly more accurate than every other system" in text
    assert "aws is significantly less accurate than every other system" in text
    # figures: TGBI, OTSC, WinoMT, and a trend per suite; each an inline PNG
    assert len(dom.images) >= 6
    for src in dom.images:
        assert src.startswith("data:image/png;base64,")
        data = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert data.startswith(PNG) and len(data) > 5000
    assert "Drift over time" in text and "monitor-2" in text

    # the screenshot: a 1280 × 6000 PNG (tall enough for the suites below the drift section) with something drawn on it
    from PIL import Image

    data = shot.read_bytes()
    assert data.startswith(PNG) and len(data) > 50_000
    with Image.open(shot) as image:
        assert image.size == (1280, 6000)
        pixels = np.asarray(image.convert("RGB").resize((160, 750))).reshape(-1, 3).astype(int)
    assert len({tuple(px) for px in pixels}) > 200
    assert (pixels.sum(axis=1) < 300).sum() > 500  # text and bars, not a blank page


def test_pairwise_rows_are_the_pipelines_and_right(run):
    """The paired tests the report reads (and its "significantly more accurate" claims rest on) are
    the ones scoring wrote, and they agree with McNemar's test done here from the labels."""
    metrics = pl.read_parquet(run / "metrics.parquet")
    got = (metrics.filter((pl.col("suite") == "winomt-hi") & pl.col("subset").str.starts_with("vs/"))
           .select("system", "subset", "metric", "value", "n").sort("system", "subset", "metric"))
    expected = _expected_pairwise(run).sort("system", "subset", "metric")
    assert got.height == len(SYSTEMS) * (len(SYSTEMS) - 1) * 2 == expected.height
    assert got.select("system", "subset", "metric", "n").equals(expected.select("system", "subset", "metric", "n"))
    assert got["value"].to_list() == pytest.approx(expected["value"].to_list(), rel=1e-9, abs=1e-12)
    # and they say what the report claims: Google ahead of both others, AWS behind both, all at p < 0.05
    p = {(r["system"], r["subset"]): r["value"] for r in got.filter(pl.col("metric") == "mcnemar_p").iter_rows(named=True)}
    d = {(r["system"], r["subset"]): r["value"] for r in got.filter(pl.col("metric") == "diff_correct").iter_rows(named=True)}
    for other in ("microsoft", "aws"):
        assert p[("google", f"vs/{other}")] < 0.05 and d[("google", f"vs/{other}")] > 0
    assert p[("aws", "vs/microsoft")] < 0.05 and d[("aws", "vs/microsoft")] < 0


def test_report_without_history_has_no_drift(run):
    page = render_html(run)
    dom = _Dom(page)
    assert "drift" not in dom.tables and "Drift over time" not in page
    assert "published suite-winomt-hi" in dom.tables


def test_significance_marks_need_every_comparison():
    def rows(pairs):
        out = []
        for a, b, p, d in pairs:
            out += [{"system": a, "suite": "w", "subset": f"vs/{b}", "metric": "mcnemar_p", "value": p, "n": 10,
                     "ci_low": None, "ci_high": None},
                    {"system": a, "suite": "w", "subset": f"vs/{b}", "metric": "diff_correct", "value": d, "n": 10,
                     "ci_low": None, "ci_high": None}]
        return metric_frame([tuple(r.values()) for r in out])

    three = [("a", "b", 0.001, 0.2), ("b", "a", 0.001, -0.2), ("a", "c", 0.01, 0.1), ("c", "a", 0.01, -0.1),
             ("b", "c", 0.2, -0.1), ("c", "b", 0.2, 0.1)]
    assert significance(rows(three), "w") == {"a": "best"}  # b and c do not differ from each other
    three[4:] = [("b", "c", 0.04, -0.1), ("c", "b", 0.04, 0.1)]
    assert significance(rows(three), "w") == {"a": "best", "b": "worst"}
    # a and c were never compared: no claim about either; b lost to both
    assert significance(rows(three[:2] + three[4:]), "w") == {"b": "worst"}
    assert significance(rows(three), "other") == {}


def test_occupation_and_embedding_sections(tmp_path):
    """A template-suite run's per-occupation bars and correlations, and a word-list run's scatter, bins
    and gender shift, from small frames shaped like the scorer's."""
    root = tmp_path / "run"
    (root / "plots").mkdir(parents=True)
    occupations = {"nurse": 89.0, "engineer": 16.0, "teacher": 70.0, "carpenter": 2.0}
    info = {"run_id": "otsc-20260101T000000Z-abc", "config_hash": "c0ffee", "biaseval_version": "0.1.0",
            "created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-01-01T00:00:00+00:00",
            "config": {"name": "otsc", "description": "", "suites": ["otsc-en", "words"], "published": None,
                       "metrics": {"confidence": 0.95, "bootstrap": 100, "seed": 1}},
            "suites": {"otsc-en": {"size": 16, "fingerprint": "f" * 24, "commit": None, "dataset": None, "version": 1, "path": "x.yaml"},
                       "words": {"size": 4, "fingerprint": "e" * 24, "commit": None, "dataset": None, "version": 1, "path": None}},
            "systems": {s: {"backend": "identity", "version": f"{s} v1", "suites": ["otsc-en", "words"]} for s in ("one", "two")}}
    (root / "run.json").write_text(json.dumps(info), encoding="utf-8")
    rows = []
    for k, system in enumerate(("one", "two")):
        for i, (occupation, share) in enumerate(occupations.items()):
            pf = min(1.0, share / 100 * (0.5 + k))
            rows.append((system, "otsc-en", f"es/occupation/{occupation}", "p_f", pf, 4, max(pf - 0.1, 0), min(pf + 0.1, 1)))
        rows += [(system, "otsc-en", "es/her", "p_f", 0.4, 8, 0.3, 0.5), (system, "otsc-en", "es/her", "p_m", 0.6, 8, 0.5, 0.7),
                 (system, "otsc-en", "es", "r_female_share", 0.9 - k, 4, 0.5, 1.0),
                 (system, "otsc-en", "es", "rho_female_share", 0.8, 4, 0.4, 1.0),
                 (system, "words", "it", "mean_intensity_tgt", 0.01, 4, 0.005, 0.02),
                 (system, "words", "it/shift/neutral", "to_masculine", 0.75, 4, 0.5, 1.0)]
    metric_frame(rows).write_parquet(root / "metrics.parquet")
    pl.DataFrame({"item_id": [f"i{i}" for i in range(4)], "suite": "otsc-en", "occupation": list(occupations),
                  "female_share": list(occupations.values())}).write_parquet(root / "items.parquet")
    features = pl.DataFrame({"suite": "words", "system": "one", "tgt_lang": "it", "src_lang": "en",
                             "word": ["nurse", "king", "queen", "house"],
                             "gender_class": ["neutral", "masculine", "feminine", "neutral"],
                             "translation": ["infermiere", "re", "regina", "casa"],
                             "tgt_gender": ["masculine", "masculine", "feminine", "feminine"],
                             "cos_src_f": [0.5, 0.2, 0.6, 0.3], "cos_src_m": [0.4, 0.5, 0.2, 0.3],
                             "cos_tgt_f": [0.3, 0.1, 0.5, 0.2], "cos_tgt_m": [0.5, 0.6, 0.3, 0.2],
                             "direction_src": [0.1, -0.3, 0.4, 0.0], "direction_tgt": [-0.2, -0.5, 0.2, 0.0]})
    features.write_parquet(root / "embedding_bias.parquet")
    [scatter] = plots.embedding_scatter(features, root / "plots")
    pl.DataFrame({"suite": "words", "system": [None, "one"], "side": ["source", "target"], "language": ["en", "it"],
                  "feature": "intensity", "bin": 1, "lo": 0.0, "hi": 0.5, "count": 4, "share": 1.0,
                  "examples": "queen, king"}).write_parquet(root / "embedding_bins.parquet")
    pl.DataFrame({"suite": "words", "system": "one", "tgt_lang": "it", "gender_class": ["neutral", "neutral"],
                  "tgt_gender": ["masculine", "feminine"], "count": [1, 1], "share": [0.5, 0.5]}
                 ).write_parquet(root / "gender_shift.parquet")

    page = render_html(root)
    dom = _Dom(page)
    assert {"correlations suite-otsc-en", "occupations suite-otsc-en", "bins suite-words", "shift suite-words",
            "words suite-words", "metrics suite-otsc-en", "metrics suite-words"} <= set(dom.tables), dom.tables
    assert scatter.name in page and "carpenter" in page and "Spearman ρ" in page
    # bars per occupation, p_m/p_f per set, and the embedding scatter already in plots/
    assert len(dom.images) == 3
    scatter_b64 = base64.b64encode(scatter.read_bytes()).decode()
    assert any(src.endswith(scatter_b64) for src in dom.images)
    assert "http://" not in page and "https://" not in page


def test_proportion_chart_draws_at_most_forty_sets_and_the_table_has_all(tmp_path):
    """A template suite with 45 sets: the p_m/p_f chart draws the first 40 (a chart of a thousand sets
    took half a minute to draw, unreadable) and says so; the metrics table lists all 45."""
    root = tmp_path / "run"
    root.mkdir()
    info = {"run_id": "otsc-20260101T000000Z-abc", "config_hash": "c0ffee", "biaseval_version": "0.1.0",
            "created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-01-01T00:00:00+00:00",
            "config": {"name": "otsc", "description": "", "suites": ["otsc-en"], "published": None,
                       "metrics": {"confidence": 0.95, "bootstrap": 100, "seed": 1}},
            "suites": {"otsc-en": {"size": 90, "fingerprint": "f" * 24, "commit": None, "dataset": None,
                                   "version": 1, "path": "x.yaml"}},
            "systems": {"one": {"backend": "identity", "version": "v1", "suites": ["otsc-en"]}}}
    (root / "run.json").write_text(json.dumps(info), encoding="utf-8")
    sets = [f"es/variant-{k:02d}" for k in range(45)]
    rows = [("one", "otsc-en", s, m, 0.5, 2, 0.4, 0.6) for s in sets for m in ("p_m", "p_f")]
    metric_frame(rows).write_parquet(root / "metrics.parquet")

    page = render_html(root)
    assert "The first\n40 of 45 sets are drawn" in page
    assert all(s in page for s in sets)  # every set in the table
    frame = metric_frame(rows)
    png, drawn = plots.proportion_bars(frame, {"one": "#1f77b4"}, limit=40)
    assert png.startswith(PNG) and drawn == 40
    assert plots.proportion_bars(frame.filter(pl.col("subset").is_in(sets[:3])), {"one": "#1f77b4"})[1] == 3


def test_headline_panels():
    def frame(pairs):
        return pl.DataFrame({"subset": [s for s, _ in pairs], "metric": [m for _, m in pairs]})

    assert headline_panels(frame([("formal", "P"), ("all", "tgbi")])) == [("all", "tgbi")]
    assert headline_panels(frame([("all", "acc"), ("all", "delta_s"), ("pro", "acc"), ("all", "delta_g")])) == [
        ("all", "acc"), ("all", "delta_g"), ("all", "delta_s")]
    assert headline_panels(frame([("es/her", "p_f"), ("es/her", "p_m"), ("es/occupation/nurse", "p_f"),
                                  ("es/him", "p_f")])) == [("es/her", "p_f"), ("es/him", "p_f")]


def test_tables_are_plain_data():
    """The statistics behind the page's tables come as strings and Values, not markup."""
    assert value_cell(None, None, None, "acc") is None
    assert value_cell(float("nan"), None, None, "r_female_share") == Value("NaN", nan=True)
    assert value_cell(0.5, 0.4, 0.6, "acc") == Value("50.0", "[40.0, 60.0]")
    assert value_cell(0.5, None, None, "tgbi") == Value("0.500")
    assert value_cell(-0.0312, -0.05, -0.01, "delta_g") == Value("-3.1", "[-5.0, -1.0]")
    part = metric_frame([("a", "w", "all", "acc", 0.7, 10, 0.6, 0.8), ("b", "w", "all", "acc", 0.5, 12, 0.4, 0.6),
                         ("a", "w", "vs/b", "mcnemar_p", 0.01, 9, None, None),
                         ("a", "w", "vs/b", "diff_correct", 0.2, 9, None, None)])
    assert metric_rows(part, ["a", "b"]) == [{"subset": "all", "metric": "acc (%)", "n": "10–12",
                                              "cells": [Value("70.0", "[60.0, 80.0]"), Value("50.0", "[40.0, 60.0]")]}]
    assert pairwise_grid(part, ["a", "b"]) == {"names": ["a"], "rows": [{"system": "a", "cells": [None]}]}
    part = pl.concat([part, metric_frame([("b", "w", "vs/a", "mcnemar_p", 0.01, 9, None, None),
                                          ("b", "w", "vs/a", "diff_correct", -0.2, 9, None, None)])])
    grid = pairwise_grid(part, ["a", "b"])
    assert grid["names"] == ["a", "b"]
    assert grid["rows"][0]["cells"] == [None, {"text": "+20.0 pp", "p": "p = 0.010", "n": 9, "significant": True,
                                               "kind": "sig-better"}]
    assert grid["rows"][1]["cells"][0]["kind"] == "sig-worse"


def test_names_and_messages_from_the_data_are_escaped(chromium, tmp_path):
    """Systems, suites, occupations, run ids and error messages holding markup (``<script>``, ``&``,
    quotes) reach the page escaped, in text and in attributes alike: the page has no script element,
    and the browser shows the names as they are."""
    one, two = '<script>alert("one")</script>', "R&D 'two'"
    wino, otsc = "wino & <b>co</b>", 'otsc<i>"x"</i>'
    nurse, engineer = "<b>nurse</b>", "R&D engineer"
    error = "<script>alert('error')</script> & timed out"
    root = tmp_path / "run"
    root.mkdir()
    info = {"run_id": "<run&1>", "config_hash": "c0ffee", "biaseval_version": "0.1.0",
            "created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-01-01T00:00:00+00:00",
            "config": {"name": "<script>name</script>", "description": "Tom & Jerry <img src=x>", "suites": [wino, otsc],
                       "published": None, "metrics": {"confidence": 0.95, "bootstrap": 100, "seed": 1}},
            "suites": {wino: {"size": 8, "fingerprint": "<f>" * 8, "commit": "<c>&" * 10, "dataset": "<d>",
                              "version": 1, "path": None},
                       otsc: {"size": 8, "fingerprint": "e" * 24, "commit": None, "dataset": None, "version": 1,
                              "path": "<p>.yaml"}},
            "systems": {s: {"backend": "<b>", "version": f"{s} v1", "suites": [wino, otsc]} for s in (one, two)}}
    (root / "run.json").write_text(json.dumps(info), encoding="utf-8")
    rows = []
    for k, (system, other) in enumerate(((one, two), (two, one))):
        rows += [(system, wino, "all", "acc", 0.7 - 0.2 * k, 8, 0.6 - 0.2 * k, 0.8 - 0.2 * k),
                 (system, wino, "all", "delta_g", 0.1, 8, 0.0, 0.2),
                 (system, wino, "all", "delta_s", 0.1, 8, 0.0, 0.2),
                 (system, wino, f"vs/{other}", "mcnemar_p", 0.001, 8, None, None),
                 (system, wino, f"vs/{other}", "diff_correct", 0.2 - 0.4 * k, 8, None, None),
                 (system, otsc, f"es/occupation/{nurse}", "p_f", 0.8, 4, 0.7, 0.9),
                 (system, otsc, f"es/occupation/{engineer}", "p_f", 0.2, 4, 0.1, 0.3),
                 (system, otsc, "es/<her>", "p_f", 0.4, 8, 0.3, 0.5), (system, otsc, "es/<her>", "p_m", 0.6, 8, 0.5, 0.7)]
    metric_frame(rows).write_parquet(root / "metrics.parquet")
    pl.DataFrame({"system": [one, one], "suite": [otsc, otsc], "item_id": ["i1", "i2"], "label": [None, None],
                  "error": [error, error]}, schema_overrides={"label": pl.String}).write_parquet(root / "labels.parquet")
    history = pl.DataFrame({"run_id": ["<run&0>", "<run&1>"],
                            "created_at": [datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 8, tzinfo=UTC)],
                            "system": [one, one], "suite": [wino, wino], "subset": ["all", "all"], "metric": ["acc", "acc"],
                            "value": [0.8, 0.7], "ci_low": [0.75, 0.65], "ci_high": [0.85, 0.75], "change": [None, -0.1],
                            "change_low": [None, -0.15], "change_high": [None, -0.05], "mcnemar_p": [None, 0.001],
                            "significant": [False, True], "status": ["ok", "<drift>"]})

    page = render_html(root, history)
    source = _Dom(page)
    # one script, the page's own (the examples' filters): none from the data
    assert page.lower().count("<script") == 1 and source.scripts == [FILTERS_JS]
    assert "<b>" not in page and "<img src=x" not in page
    unquoted = page.replace("&#34;", '"').replace("&#39;", "'")  # quotes may be escaped too, as numeric references
    for raw in (one, two, wino, otsc, nurse, engineer, error, info["run_id"], "<drift>", "Tom & Jerry <img src=x>"):
        assert html.escape(raw, quote=False) in unquoted, raw
    # every table, including those whose class names a suite, and the significance sentence
    assert {"systems", "suites", "failures", f"metrics suite-{wino}", f"metrics suite-{otsc}", f"pairwise suite-{wino}",
            f"occupations suite-{otsc}", "drift"} <= set(source.tables), source.tables
    assert all(u.startswith(("data:image/png;base64,", "#")) for u in source.urls), source.urls
    assert all(link[1:] in source.ids for link in source.links if link.startswith("#"))

    path = root / "report.html"
    path.write_text(page, encoding="utf-8")
    dumped = _chromium(["--dump-dom", path.resolve().as_uri()], tmp_path)
    assert dumped.returncode == 0, dumped.stderr.decode(errors="replace")[-2000:]
    dom = _Dom(dumped.stdout.decode("utf-8"))
    text = " ".join(dom.text)
    assert dom.scripts == [FILTERS_JS]  # the page's own script only
    assert "b" not in dom.tags and "img" in dom.tags  # the figures' images only
    for raw in (one, two, wino, otsc, nurse, engineer, error, "<run&1>", "<drift>", "Tom & Jerry <img src=x>"):
        assert raw in text, raw
    assert f"{one} is significantly more accurate than every other system" in text
    assert f"{two} is significantly less accurate than every other system" in text
