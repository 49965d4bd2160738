"""report.html of a run with three suites and two systems (MiTTenS both ways and MT-GenEval into Spanish;
Apertium against the suites' own references, all offline), opened in headless Chromium and driven over
the DevTools protocol (tests/cdp.py) with JavaScript on: the summary comes first with a row per system
and a group per suite, every suite has a chart, the examples' filters show exactly the rows they ask
for, the page asks for nothing but itself and its inline images, and its console stays free of errors.
The screenshot is kept in the test's temporary directory (and in test-artifacts/)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import yaml

from biaseval.pipeline import sweep
from biaseval.suites import SUITES
from cdp import Browser
from test_html_report import ARTIFACTS, CHROMIUM_FLAGS, PNG, chromium  # noqa: F401 - chromium: a fixture

SUITES_USED = ["mittens-2en", "mittens-2xx", "mt-geneval-counterfactual"]
SYSTEMS = ["apertium", "references"]


@pytest.fixture(scope="module")
def run(data_dir, ray_local, tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser")
    config = {"name": "browser", "description": "three suites, two systems, offline", "suites": SUITES_USED,
              "targets": {suite: ["es"] for suite in SUITES_USED}, "cache": {"path": str(folder / "store")},
              "systems": {"apertium": {"backend": "apertium", "version": "apertium-eng-spa (Debian)"},
                          "references": {"backend": "references", "version": "the suites' references"}},
              "metrics": {"bootstrap": 200, "seed": 7}}
    path = folder / "browser.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    # a config's targets replace the suite in the process's registry (config.resolve_suites): put the
    # suites back as they were for the modules after this one
    registered = {suite: SUITES.get(suite) for suite in SUITES_USED}
    try:
        yield sweep(path, folder / "run").run.root
    finally:
        for suite, entry in registered.items():
            SUITES.put(suite, entry)


def _select(browser: Browser, form: int, key: str, value: str) -> dict:
    """Choose ``value`` in a filter of the ``form``-th examples table, as a reader would (a change
    event); what the table then shows."""
    return browser.js(f"""(() => {{
        const form = document.querySelectorAll('form.filters')[{form}];
        const select = form.querySelector('select[data-key="{key}"]');
        select.value = {json.dumps(value)};
        select.dispatchEvent(new Event('change', {{bubbles: true}}));
        const rows = Array.from(document.getElementById(form.dataset.for).tBodies[0].rows);
        const shown = rows.filter(r => !r.hidden && r.offsetParent !== null);
        return {{shown: shown.map(r => ({{system: r.dataset.system, language: r.dataset.language,
                                           outcome: r.dataset.outcome}})),
                 rows: rows.length, counter: form.querySelector('output').textContent}};
    }})()""")


def test_the_page_in_chromium(chromium, run, tmp_path):  # noqa: F811 - the fixture
    page = run / "report.html"
    with Browser(chromium, CHROMIUM_FLAGS, tmp_path) as browser:
        browser.open(page.resolve().as_uri())

        # the summary first: the first section, a row per system, a group of columns per suite
        assert browser.js("document.querySelector('main > h2').textContent") == "Summary"
        summary = browser.js("""Array.from(document.querySelectorAll('table.summary')).map(t => ({
            groups: Array.from(t.querySelectorAll('th.group')).map(th => th.textContent),
            systems: Array.from(t.querySelectorAll('tbody th')).map(th => th.textContent.trim()),
            letters: Array.from(t.querySelectorAll('sup.letters')).map(s => s.textContent)}))""")
        groups = [g for table in summary for g in table["groups"]]
        assert {g.split(" · ")[0] for g in groups} == set(SUITES_USED), groups
        assert all(table["systems"] == SYSTEMS for table in summary)
        # Apertium and the references differ on the items both translated: letters mark it
        assert {"a", "b"} <= {x for table in summary for x in table["letters"]}

        # a chart per suite, drawn (an image with pixels)
        charts = browser.js("""Array.from(document.querySelectorAll('section.suite')).map(s => [s.dataset.suite,
            Array.from(s.querySelectorAll('figure img')).filter(i => i.complete && i.naturalWidth > 100).length])""")
        assert dict(charts) == {suite: 1 for suite in SUITES_USED}, charts

        # the examples: a table per suite with its filters; the deciding words marked
        forms = browser.js("document.querySelectorAll('form.filters').length")
        assert forms == len(SUITES_USED)
        assert browser.js("document.querySelectorAll('table.examples mark').length") > 10
        for form in range(forms):
            everything = _select(browser, form, "system", "")
            assert len(everything["shown"]) == everything["rows"] > 0
            assert everything["counter"] == f"{everything['rows']} of {everything['rows']} shown"
            for system in SYSTEMS:
                mine = _select(browser, form, "system", system)
                assert mine["shown"] and {r["system"] for r in mine["shown"]} == {system}
                assert mine["counter"] == f"{len(mine['shown'])} of {mine['rows']} shown"
            wrong = _select(browser, form, "outcome", "wrong")  # and still only the last system chosen
            assert {(r["system"], r["outcome"]) for r in wrong["shown"]} <= {(SYSTEMS[-1], "wrong")}
            _select(browser, form, "system", "")
            wrong = _select(browser, form, "outcome", "wrong")
            assert wrong["shown"] and {r["outcome"] for r in wrong["shown"]} == {"wrong"}
            assert {r["language"] for r in _select(browser, form, "language", "es")["shown"]} <= {"es"}
            _select(browser, form, "outcome", "")
            _select(browser, form, "language", "")

        # nothing but the page itself and its inline images; no error in the console
        assert {url.split(":", 1)[0] for url in browser.requests()} <= {"file", "data"}, browser.requests()
        assert browser.errors() == []
        shot = browser.screenshot(tmp_path / "report.png")
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copyfile(tmp_path / "report.png", ARTIFACTS / "report-browser.png")

    from io import BytesIO

    from PIL import Image

    assert shot.startswith(PNG)
    with Image.open(BytesIO(shot)) as image:
        assert image.size == (1400, 6000)
        pixels = np.asarray(image.convert("RGB").resize((175, 750))).reshape(-1, 3).astype(int)
    assert len({tuple(px) for px in pixels}) > 200 and (pixels.sum(axis=1) < 600).sum() > 2000  # drawn, not blank


def test_the_examples_behind_the_numbers(run):
    """examples.parquet holds item, source, translation, gold, label and the deciding words together; the
    wrong ones are those the headline share counts wrong; biaseval examples lists them, filtered."""
    import polars as pl
    from click.testing import CliRunner

    from biaseval.cli import main

    examples = pl.read_parquet(run / "examples.parquet")
    assert {"item_id", "source", "translation", "gold", "label", "evidence", "outcome"} <= set(examples.columns)
    assert set(examples["suite"]) == set(SUITES_USED) and examples["source"].null_count() == 0
    counts = examples.group_by("system", "suite", "language", "outcome").len()
    assert counts["len"].max() <= 100  # bounded per system × suite × language × outcome
    metrics = pl.read_parquet(run / "metrics.parquet")
    acc = metrics.filter((pl.col("system") == "apertium") & (pl.col("suite") == "mittens-2en")
                         & (pl.col("subset") == "all") & (pl.col("metric") == "acc"))
    mine = examples.filter((pl.col("system") == "apertium") & (pl.col("suite") == "mittens-2en"))
    wrong = acc["n"].item() - round(acc["value"].item() * acc["n"].item())
    assert mine.filter(pl.col("outcome") == "wrong").height == min(wrong, 100)

    result = CliRunner().invoke(main, ["examples", "--run", str(run), "--system", "apertium", "--suite",
                                       "mittens-2xx", "--outcome", "wrong", "--format", "jsonl", "--limit", "5"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert 0 < len(lines) <= 5
    assert all((r["system"], r["suite"], r["outcome"]) == ("apertium", "mittens-2xx", "wrong") for r in lines)
    assert all(r["source"] and r["translation"] for r in lines)
    text = CliRunner().invoke(main, ["examples", "--run", str(run), "--suite", "mt-geneval-counterfactual",
                                     "--limit", "3"])
    assert text.exit_code == 0 and text.output.count("WRONG") == 3 and "⟦" in text.output
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "## Summary" in report.split("## Run")[0] and "## Translations behind the numbers" in report


def test_comparisons_use_the_headline_definition(run):
    """MiTTenS out of English: the paired comparison counts only passages both systems had read, as its
    accuracy does; no comparison row has n = 0."""
    import polars as pl

    metrics = pl.read_parquet(run / "metrics.parquet")
    pairs = metrics.filter(pl.col("subset").str.starts_with("vs/"))
    assert pairs.height and pairs.filter(pl.col("n") == 0).height == 0
    read = metrics.filter((pl.col("suite") == "mittens-2xx") & (pl.col("subset") == "all") & (pl.col("metric") == "acc"))
    compared = pairs.filter((pl.col("suite") == "mittens-2xx") & (pl.col("subset") == "vs/references")
                            & (pl.col("metric") == "diff_correct"))
    assert compared["n"].item() <= read["n"].min()  # no unread passage in the comparison
    # per group: MT-GenEval's comparisons per language and gender, the columns its summary marks
    assert {"vs/references/es/feminine", "vs/references/es/masculine"} <= set(pairs["subset"].to_list())
