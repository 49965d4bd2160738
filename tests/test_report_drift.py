"""The drift part of report.html without a browser: trend figures on fixed scales with the baseline
and the latest run's interval drawn, colours that follow a system's name, category labels that do
not overlap, and the monitoring run's rows (verdict, changes, flips) from what the monitor wrote."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import matplotlib.colors as mcolors
import polars as pl
import pytest

from biaseval.report import plots
from biaseval.report.drift import change_rows, flip_rows, suite_rows, verdict
from biaseval.report.tables import when
from biaseval.report.trends import fixed_limits, trend_figure

START = datetime(2026, 3, 2, 6, 30, 15, tzinfo=UTC)


def _history() -> pl.DataFrame:
    """Five weekly runs of two systems, each compared with a fixed baseline of 0.60 (Acc) and 0.05
    (ΔS): the baseline is value − change."""
    rows = []
    for k in range(5):
        for system, acc, ds in (("google", 0.62 + 0.01 * k, 0.04), ("deepl", 0.70, -0.03 - 0.01 * k)):
            for metric, value, base in (("acc", acc, 0.60), ("delta_s", ds, 0.05)):
                rows.append({"run_id": f"r{k}", "created_at": START + timedelta(weeks=k), "system": system,
                             "suite": "winomt-hi", "subset": "all", "metric": metric, "value": value,
                             "ci_low": value - 0.03, "ci_high": value + 0.03, "change": value - base,
                             "significant": k == 4 and system == "google" and metric == "acc"})
    return pl.DataFrame(rows)


def test_trend_figure_draws_baseline_and_latest_interval_on_fixed_scales():
    colours = plots.system_colours(["google", "deepl"])
    fig = trend_figure(_history(), colours, [("all", "acc"), ("all", "delta_s")])
    acc, ds = fig.axes[:2]
    assert acc.get_ylim() == (0.0, 100.0)  # a share: all of 0–100 %, not the data's 59–72
    # ΔS reaches 10 points (deepl's last run, −7 with its CI to −10): ±5·⌈10·1.1/5⌉ = ±15, around 0
    assert ds.get_ylim() == (-15.0, 15.0)
    for ax, metric, baseline in ((acc, "acc", 60.0), (ds, "delta_s", 5.0)):
        dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
        assert len(dashed) == 2  # the baseline of each system
        for line in dashed:
            assert list(line.get_ydata()) == pytest.approx([baseline] * 5)
        for system in ("google", "deepl"):
            latest = _history().filter((pl.col("system") == system) & (pl.col("metric") == metric)
                                       & (pl.col("run_id") == "r4")).row(0, named=True)
            bands = [p for p in ax.patches if mcolors.to_hex(p.get_facecolor()) == colours[system].lower()]
            assert len(bands) == 1, system  # the latest run's CI as a band across the panel
            assert bands[0].get_y() == pytest.approx(100 * latest["ci_low"])
            assert bands[0].get_y() + bands[0].get_height() == pytest.approx(100 * latest["ci_high"])


def test_fixed_limits():
    assert fixed_limits("p_f", [3.0, 4.0]) == (0.0, 100.0)
    assert fixed_limits("tgbi", [0.6]) == (0.0, 1.0)
    assert fixed_limits("delta_g", [-2.0, 31.0]) == (-35.0, 35.0)  # 31·1.1 = 34.1 -> 35
    assert fixed_limits("delta_s", []) == (-5.0, 5.0)
    assert fixed_limits("mean_intensity_tgt", [0.1]) is None


def test_a_system_keeps_its_colour_whatever_else_is_drawn():
    alone = plots.system_colours(["google"])["google"]
    assert plots.system_colours(["aws", "google", "deepl"])["google"] == alone
    assert plots.system_colours(["deepl", "google"])["google"] == alone  # not its position
    assert alone in plots.SYSTEM_PALETTE and "#555555" not in plots.SYSTEM_PALETTE
    # two names hashing to one slot: the later one (sorted) moves to the next free slot; both differ
    names = [f"system-{k}" for k in range(60)]
    slot = {n: plots.SYSTEM_PALETTE.index(plots.system_colours([n])[n]) for n in names}
    a, b = next((x, y) for x in names for y in names if x < y and slot[x] == slot[y])
    both = plots.system_colours([b, a])
    assert both[a] == plots.system_colours([a])[a] and both[b] != both[a]
    size = len(plots.SYSTEM_PALETTE)
    assert len(set(plots.system_colours(names[:size]).values())) == size  # as many as the palette holds


def test_category_labels_never_overlap():
    fig = plots.figure((10, 8))  # off-screen, as the report draws it
    top, side = fig.subplots(2, 1)
    groups = [f"a long category name {k}" for k in range(40)]
    top.bar(range(40), range(40))
    top.set_xticks(range(40), groups)
    side.barh(range(120), range(120))
    side.set_yticks(range(120), [f"occupation {k}" for k in range(120)], fontsize=9)
    renderer = fig.canvas.get_renderer()

    def overlapping(axis, horizontal):
        boxes = [t.get_window_extent(renderer) for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
        return plots._overlaps(boxes, horizontal), len(boxes)

    assert overlapping(top.xaxis, True)[0] and overlapping(side.yaxis, False)[0]  # as drawn: a jumble
    assert plots.unclutter(fig)
    (x_overlap, x_shown), (y_overlap, y_shown) = overlapping(top.xaxis, True), overlapping(side.yaxis, False)
    assert not x_overlap and not y_overlap
    assert all(t.get_rotation() == 90 for t in top.get_xticklabels())
    assert x_shown == 40 and 10 <= y_shown < 120  # upright fits all 40; of the 120 rows every k-th


SUMMARY = {
    "run_id": "m-1", "created_at": "2026-11-30T06:00:07+00:00", "alarm": True,
    "statistics": {"tests": 14, "correction": "holm", "alpha": 0.05, "power": 0.8},
    "systems": [
        {"system": "google", "status": "drift", "message": "", "baseline": "system google-2023 (this run)",
         "significant_changes": [
             {"suite": "winomt-hi", "subset": "all", "metric": "acc", "value": 0.60, "baseline_value": 0.69,
              "change": -0.09, "change_low": -0.12, "change_high": -0.06, "test": "outcome", "p": 1e-9,
              "p_adjusted": 1.4e-8},
             {"suite": "winomt-hi", "subset": "anti", "metric": "delta_s", "value": 0.1, "baseline_value": 0.13,
              "change": -0.03, "change_low": -0.05, "change_high": -0.01, "test": "interval:delta_s", "p": 0.004,
              "p_adjusted": 0.0123}],
         "suites": []},
        {"system": "aws", "status": "unavailable", "message": "704 of 704 items failed", "baseline": "",
         "significant_changes": [], "suites": []}],
}


def test_verdict_and_changes_rows():
    v = verdict(SUMMARY)
    assert v["alarm"] and v["created_at"] == "2026-11-30 06:00:07 UTC" and v["tests"] == 14
    assert v["correction"].startswith("Holm")
    assert [(s["system"], s["status"], s["changes"]) for s in v["systems"]] == [("google", "drift", 2),
                                                                               ("aws", "unavailable", 0)]
    rows = change_rows(SUMMARY)
    # the largest change first; a change of a share, or of a difference of shares, in percentage points
    assert [r["metric"] for r in rows] == ["acc (%)", "delta_s (pp)"]
    assert rows[0]["change"] == "-9.0 pp" and rows[0]["interval"] == "[-12.0, -6.0] pp"
    assert rows[0]["p"] == "p < 0.001" and rows[1]["p_adjusted"] == "p = 0.012"
    assert when(datetime(2026, 1, 2, 3, 4, 5, 999, tzinfo=UTC)) == "2026-01-02 03:04:05 UTC"


def test_flip_rows_show_both_texts():
    flips = pl.DataFrame({"system": ["g"] * 3, "suite": ["s"] * 3, "item_id": ["s/a/3", "s/a/1", "s/a/2"],
                          "source": ["x3", "x1", "x2"], "label_base": ["male"] * 3, "label": ["female"] * 3,
                          "translation_base": ["he 3", "he 1", "he 2"], "translation": ["she 3", "she 1", "she 2"]})
    rows, total = flip_rows(flips, limit=2)
    assert total == 3 and [r["item_id"] for r in rows] == ["s/a/1", "s/a/2"]
    assert rows[0]["before"] == "he 1" and rows[0]["after"] == "she 1" and rows[0]["source"] == "x1"
    assert flip_rows(None) == ([], 0)


def test_suite_rows_say_when_the_items_are_a_sample():
    summary = {"systems": [{"system": "g", "suites": [
        {"suite": "winomt-hi", "items": 150, "flipped": 3, "flipped_share": 0.02, "better": 1, "worse": 2,
         "mcnemar_p": 0.62, "mcnemar_p_adjusted": 1.0, "detectable_change": 0.0634, "significant": False}]}]}
    sampled = suite_rows(summary, {"winomt-hi": {"size": 150, "population": 704}})
    assert sampled[0]["n_items"] == "150 (sample of 704)" and sampled[0]["detectable"] == "6.3 pp"
    assert sampled[0]["flipped"] == "3 (2.0%)" and sampled[0]["p"] == "p = 0.620"
    assert suite_rows(summary, {"winomt-hi": {"size": 704, "population": 704}})[0]["n_items"] == "150"
    assert suite_rows(summary)[0]["n_items"] == "150"
