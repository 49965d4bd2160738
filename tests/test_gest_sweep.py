"""GEST end to end on a local Ray: two of the recorded systems (Google Translate, DeepL) replayed into two
languages (Belarusian, read through Apertium; Slovak, by rules), labelled by the speaker reader, scored
and reported. The metrics are checked against the masculine rates counted here from labels.parquet, and
both reports against the metric rows: the summary's f_m and f_s per language, the per-stereotype chart
(embedded in report.html, linked from report.md), f_m and f_s beside the paper's values."""

from __future__ import annotations

import re

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.pipeline import sweep
from conftest import REPO

PNG = b"\x89PNG\r\n\x1a\n"
SYSTEMS = ("deepl", "google")  # DeepL has no Belarusian: one system × language is missing, as in the paper
LANGS = ("be", "sk")


@pytest.fixture(scope="module")
def run(data_dir, ray_local, tmp_path_factory):
    spec = yaml.safe_load((REPO / "conf" / "gest-recorded.yaml").read_text(encoding="utf-8"))
    spec["systems"] = {name: spec["systems"][name] for name in SYSTEMS}
    spec["targets"] = {"gest": list(LANGS)}
    spec["metrics"] = {"bootstrap": 200, "seed": 3}
    config = tmp_path_factory.mktemp("config") / "gest.yaml"
    config.write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")
    return sweep(config, tmp_path_factory.mktemp("gest") / "run")


def test_one_label_per_output_and_no_language_a_system_lacks(run):
    labels = pl.read_parquet(run.run.labels)
    assert dict(labels.group_by("system").len().iter_rows()) == {"google": 2 * 3565, "deepl": 3565}
    assert labels.filter(pl.col("system") == "deepl")["item_id"].str.starts_with("gest/sk/").all()
    assert labels["label"].null_count() == 0 and set(labels["label"]) <= {"male", "female", "ambiguous", "unknown"}
    read = labels.filter(pl.col("label").is_in(["male", "female"]))
    assert read["evidence"].null_count() == 0  # every reading names the words it was read from


def _counted(run) -> pl.DataFrame:
    """p_i per system × language × stereotype, counted here from labels.parquet and items.parquet."""
    items = pl.read_parquet(run.run.items).select("item_id", "subset")
    labels = pl.read_parquet(run.run.labels).join(items, on="item_id")
    return (labels.filter(pl.col("label").is_in(["male", "female"]))
            .group_by("system", "subset").agg((pl.col("label") == "male").mean().alias("p"), pl.len().alias("n"))
            .with_columns(pl.col("subset").str.slice(0, 2).alias("lang"),
                          pl.col("subset").str.slice(3).cast(pl.Int32).alias("stereotype")))


def test_the_metrics_are_the_papers_definition_of_the_labels(run):
    m = run.metrics.filter(pl.col("suite") == "gest")
    got = {(r["system"], r["subset"], r["metric"]): r for r in m.iter_rows(named=True)}
    counted = _counted(run)
    assert counted.height == 3 * 16
    for system, subset, p, n in counted.select("system", "subset", "p", "n").iter_rows():
        row = got[(system, subset, "masculine_rate")]
        assert (row["value"], row["n"], row["interval"]) == (pytest.approx(p), n, "wilson")
    for (system, lang), part in counted.group_by("system", "lang"):
        p_f = part.filter(pl.col("stereotype") <= 7)["p"].mean()
        p_m = part.filter(pl.col("stereotype") >= 8)["p"].mean()
        f_m, f_s = got[(system, lang, "f_m")], got[(system, lang, "f_s")]
        assert f_m["value"] == pytest.approx((p_f + p_m) / 2) and f_s["value"] == pytest.approx(p_m - p_f)
        assert f_m["n"] == part["n"].sum() and f_m["ci_low"] < f_m["value"] < f_m["ci_high"]
        assert (f_s["interval"], f_s["resamples"], f_s["seed"]) == ("bootstrap", 200, 3)
        assert got[(system, lang, "f_m_ac")]["interval"] is None
    assert ("deepl", "be", "f_m") not in got
    assert (m["dataset_commit"] == "7dd908cae11720ee5d95e43a4ab94fb410c8b790").all()
    assert m["detector"].str.contains("be:gest-speaker@1+speaker-be@", literal=True).all()


def test_the_reports_show_gest_in_the_papers_shape(run):
    root = run.run.root
    text = (root / "report.md").read_text(encoding="utf-8")
    summary = text.split("\n## Summary\n", 1)[1].split("\n## ", 1)[0]
    assert "| system | gest · be: f_m (%) | gest · be: f_s (pp) | gest · sk: f_m (%) | gest · sk: f_s (pp) |" in summary
    f_m = run.metrics.filter((pl.col("system") == "google") & (pl.col("subset") == "be")
                             & (pl.col("metric") == "f_m")).row(0, named=True)
    cell = f"{100 * f_m['value']:.1f} [{100 * f_m['ci_low']:.1f}, {100 * f_m['ci_high']:.1f}], n = {f_m['n']:,}"
    assert f"| google | {cell} |" in summary
    part = text.split("\n## GEST (Pikuliak et al. 2024)", 1)[1].split("\n## ", 1)[0]
    assert "![gest: masculine rate per stereotype, language and system](plots/gest-gest.png)" in part
    assert (root / "plots" / "gest-gest.png").read_bytes().startswith(PNG)
    assert "Pikuliak et al. (2024), Findings of EMNLP 2024" in part and "seed 3 (f_m, f_s)" in part
    google_be = next(line for line in part.splitlines() if line.startswith("| google | be |"))
    assert re.fullmatch(r"\| google \| be \| [\d.]+ \[[\d.]+, [\d.]+\] \| [\d.]+ \| 87\.1 \| \+[\d.]+ \[.*\] \| "
                        r"\+[\d.]+ \| \+9\.1 \| [\d,]+ \([\d.]+%\) \| 2,555 \|", google_be), google_be
    page = (root / "report.html").read_text(encoding="utf-8")
    section = page.split('<section class="suite" data-suite="gest">', 1)[1].split("</section>", 1)[0]
    assert section.count('src="data:image/png;base64,') >= 2  # the chart per stereotype, f_m against f_s
    assert "Masculine rate per stereotype (GEST)" in section and "<td>be</td>" in section


def test_the_chart_command_draws_the_reports_chart(run, tmp_path):
    out = tmp_path / "chart.png"
    result = CliRunner().invoke(main, ["gest", "chart", "--run", str(run.run.root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == (run.run.root / "plots" / "gest-gest.png").read_bytes()
