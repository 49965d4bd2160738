"""`make sweep`'s config reproduces every published cell of Singh (2023) Tables 1-3.

The sweep runs once for the module, on a real local Ray, from the recorded outputs. Each published
cell is asserted at the printed precision; for each known erratum the recomputed value is asserted
instead, with the reason beside it.
"""

from __future__ import annotations

import re

import polars as pl
import pytest

from biaseval.report import published
from biaseval.metrics import METRIC_SCHEMA
from biaseval.pipeline import sweep
from conftest import SHARED

SYSTEMS = ("indictrans", "google", "microsoft", "aws")

# (suite, subset, metric, scale, decimals, [IT, GT, MS, AWS]) as printed in the paper.
PUBLISHED = [
    ("tgbi-hi", "formal", "P", 1, 3, [0.787, 0.708, 0.724, 0.691]),
    ("tgbi-hi", "impolite", "P", 1, 3, [0.620, 0.534, 0.394, 0.656]),
    ("tgbi-hi", "informal", "P", 1, 3, [0.623, 0.623, 0.467, 0.682]),
    ("tgbi-hi", "occupation", "P", 1, 3, [0.569, 0.531, 0.574, 0.411]),
    ("tgbi-hi", "negative", "P", 1, 3, [0.819, 0.763, 0.673, 0.803]),
    ("tgbi-hi", "polite", "P", 1, 3, [0.926, 0.862, 0.951, 0.725]),
    ("tgbi-hi", "positive", "P", 1, 3, [0.848, 0.788, 0.720, 0.845]),
    ("tgbi-hi", "all", "tgbi", 1, 3, [0.742, 0.687, 0.643, 0.688]),
    ("otsc-hi", "female-female", "p_m", 100, 2, [98.41, 1.68, 98.97, 95.61]),
    ("otsc-hi", "female-female", "p_f", 100, 2, [1.59, 98.32, 1.03, 4.39]),
    ("otsc-hi", "female-male", "p_m", 100, 2, [99.25, 90.66, 99.72, 95.70]),
    ("otsc-hi", "female-male", "p_f", 100, 2, [0.75, 9.34, 0.28, 4.30]),
    ("otsc-hi", "male-female", "p_m", 100, 2, [99.35, 2.43, 66.01, 99.29]),
    ("otsc-hi", "male-female", "p_f", 100, 2, [0.65, 97.57, 33.99, 2.71]),
    ("otsc-hi", "male-male", "p_m", 100, 2, [99.91, 96.45, 98.60, 97.48]),
    ("otsc-hi", "male-male", "p_f", 100, 2, [0.09, 3.55, 1.40, 2.52]),
    ("winomt-hi", "all", "acc", 100, 1, [48.9, 69.0, 57.7, 49.9]),
    ("winomt-hi", "all", "delta_g", 100, 1, [48.5, 10.6, 32.9, 51.9]),
    ("winomt-hi", "all", "delta_s", 100, 1, [-0.1, -3.8, 0.2, -0.2]),
    ("winomt-hi", "all", "neutral", 100, 1, [6.2, 5.3, 4.1, 2.8]),
]

# Where the recorded data gives another value than the print, at the printed precision.
ERRATA = {
    # P = 0.6206: the paper truncated instead of rounding.
    ("tgbi-hi", "impolite", "P", "indictrans"): 0.621,
    # The paper's Google notebook read IndicTrans' informal file; Google's own outputs give 0.644 ...
    ("tgbi-hi", "informal", "P", "google"): 0.644,
    # ... and so a mean of 0.690 instead of 0.687.
    ("tgbi-hi", "all", "tgbi", "google"): 0.690,
    # Typo in the paper (99.29 + 2.71 > 100): the data gives 97.29.
    ("otsc-hi", "male-female", "p_m", "aws"): 97.29,
    # ΔS = -3.748 from counts; the paper subtracted rounded macro-F1 values.
    ("winomt-hi", "all", "delta_s", "google"): -3.7,
    # ΔG = 32.96; the paper truncated it.
    ("winomt-hi", "all", "delta_g", "microsoft"): 33.0,
    # The paper scored an earlier IndicTrans output that is not in the repository; these are the
    # repository's stereo_indictrans files.
    ("winomt-hi", "all", "acc", "indictrans"): 48.2,
    ("winomt-hi", "all", "delta_g", "indictrans"): 50.0,
    ("winomt-hi", "all", "delta_s", "indictrans"): -1.6,
    ("winomt-hi", "all", "neutral", "indictrans"): 7.5,
}


@pytest.fixture(scope="module")
def run(data_dir, ray_local, paper_config, tmp_path_factory):
    return sweep(paper_config, tmp_path_factory.mktemp("paper") / "run")


@pytest.fixture(scope="module")
def metrics(run) -> pl.DataFrame:
    return pl.read_parquet(run.run.metrics)


def _value(metrics, suite, subset, metric, system) -> float:
    rows = metrics.filter(
        (pl.col("suite") == suite) & (pl.col("subset") == subset) & (pl.col("metric") == metric) & (pl.col("system") == system)
    )
    assert rows.height == 1, (suite, subset, metric, system)
    return rows["value"].item()


CELLS = [(suite, subset, metric, scale, decimals, system, value)
         for suite, subset, metric, scale, decimals, values in PUBLISHED
         for system, value in zip(SYSTEMS, values)]


@pytest.mark.parametrize("suite, subset, metric, scale, decimals, system, printed", CELLS,
                         ids=[f"{c[0]}/{c[1]}/{c[2]}/{c[5]}" for c in CELLS])
def test_published_cell(metrics, suite, subset, metric, scale, decimals, system, printed):
    ours = round(_value(metrics, suite, subset, metric, system) * scale, decimals)
    expected = ERRATA.get((suite, subset, metric, system), printed)
    assert ours == pytest.approx(expected, abs=10 ** -(decimals + 3))


def test_exact_values_behind_the_errata(metrics):
    assert _value(metrics, "tgbi-hi", "impolite", "P", "indictrans") == pytest.approx(0.6206, abs=5e-5)
    assert _value(metrics, "winomt-hi", "all", "delta_s", "google") == pytest.approx(-0.03748, abs=5e-6)
    assert _value(metrics, "winomt-hi", "all", "delta_g", "microsoft") == pytest.approx(0.32961, abs=5e-6)


def test_watson_is_in_the_run(metrics):
    watson = metrics.filter(pl.col("system") == "watson")
    assert set(watson["suite"]) == {"tgbi-hi", "otsc-hi"}  # no WinoMT-Hindi outputs were recorded
    assert _value(metrics, "tgbi-hi", "all", "tgbi", "watson") == pytest.approx(0.6602, abs=5e-5)


def test_metrics_table_shape_and_provenance(metrics, run):
    for column, dtype in METRIC_SCHEMA.items():
        assert metrics.schema[column] == dtype
    for column in ("run_id", "dataset", "dataset_commit", "config_hash", "created_at", "system_version", "detector", "signature"):
        assert metrics[column].null_count() == 0, column
    assert metrics.select(pl.struct("system", "suite", "subset", "metric").n_unique()).item() == metrics.height
    fractions = metrics.filter(pl.col("metric").is_in(["p_m", "p_f", "p_n", "acc", "neutral", "P", "tgbi"]))
    assert fractions["value"].is_between(0, 1).all()
    assert (metrics["ci_low"] <= metrics["value"] + 1e-12).all() and (metrics["value"] <= metrics["ci_high"] + 1e-12).all()
    assert metrics["dataset_commit"].unique().to_list() == ["408ee8f14347d362a80bfc5857a8796074378b2d"]
    info = run.run.read_run()
    assert metrics["run_id"].unique().to_list() == [info["run_id"]]


def test_one_label_per_item_and_system(run):
    labels = pl.read_parquet(run.run.labels)
    items = pl.read_parquet(run.run.items)
    sizes = dict(items.group_by("suite").len().iter_rows())
    expected = 4 * sum(sizes.values()) + sizes["tgbi-hi"] + sizes["otsc-hi"]  # watson has no winomt-hi
    assert labels.height == expected
    assert labels.select(pl.struct("system", "item_id").n_unique()).item() == expected
    assert labels["label"].null_count() == 0


def test_report_marks_errata_and_matches(run):
    text = run.run.report.read_text(encoding="utf-8")
    assert "**0.644** (paper 0.623)" in text
    assert "**97.29** (paper 99.29)" in text
    assert "0.787 ✓" in text
    assert text.count("≠") == 0  # every difference from the print is a known erratum
    assert "watson" in text


def _reference_cells() -> dict[tuple[str, str, str, str], float]:
    """Published values parsed from ../shared/reference/singh2023-tables.md."""
    text = (SHARED / "reference" / "singh2023-tables.md").read_text(encoding="utf-8")
    tgbi_rows = {"S1": "formal", "S2": "impolite", "S3": "informal", "S4": "occupation", "S5": "negative",
                 "S6": "polite", "S7": "positive", "TGBI": "all"}
    otsc_rows = {"female, female": "female-female", "female, male": "female-male",
                 "male, female": "male-female", "male, male": "male-male"}
    wino_systems = {"IT": "indictrans", "GT": "google", "MS": "microsoft", "AWS": "aws"}
    cells = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if len(parts) < 5 or parts[0] in ("set", "system", "set (speaker, friend)") or parts[0].startswith("---"):
            continue
        head = parts[0].split()[0]
        if head in tgbi_rows and re.match(r"^\d\.\d{3}$", parts[-1]):
            subset = tgbi_rows[head]
            metric = "tgbi" if subset == "all" else "P"
            for system, v in zip(SYSTEMS, parts[-4:]):
                cells[("tgbi-hi", subset, metric, system)] = float(v)
        elif parts[0] in otsc_rows:
            for system, v in zip(SYSTEMS, parts[1:5]):
                pm, pf = (float(x) for x in v.split("/"))
                cells[("otsc-hi", otsc_rows[parts[0]], "p_m", system)] = pm
                cells[("otsc-hi", otsc_rows[parts[0]], "p_f", system)] = pf
        elif parts[0] in wino_systems:
            for metric, v in zip(("acc", "delta_g", "delta_s", "neutral"), parts[1:5]):
                cells[("winomt-hi", "all", metric, wino_systems[parts[0]])] = float(v)
    return cells


def test_published_values_match_the_shared_reference():
    reference = _reference_cells()
    assert len(reference) == len(CELLS) == 80
    ours = {(c.suite, c.subset, c.metric, c.system): c.value for c in published.load("singh2023").cells()}
    assert ours == reference
    assert {(s, b, m, y): v for s, b, m, _, _, y, v in CELLS} == reference
