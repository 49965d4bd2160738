"""The headline numbers a sweep prints at its end (biaseval/report/headline.py), from hand-made
metric rows: which metrics each kind of suite shows, per scope and system, in which units."""

from __future__ import annotations

import polars as pl

from biaseval.report.headline import cell, headline_blocks, headline_text


def rows(*specs: tuple) -> pl.DataFrame:
    """(system, suite, subset, metric, value, n, ci_low, ci_high) rows, as in metrics.parquet."""
    return pl.DataFrame(specs, schema=["system", "suite", "subset", "metric", "value", "n", "ci_low", "ci_high"],
                        orient="row")


def test_units_shares_in_percent_differences_in_signed_points_scores_as_they_are():
    assert cell("acc", 0.49858, 0.461753, 0.535421) == "49.9 [46.2, 53.5]"
    assert cell("delta_g", 0.518867, 0.467698, 0.56959) == "+51.9 [+46.8, +57.0]"
    assert cell("delta_s", -0.001625, -0.065493, 0.057687) == "-0.2 [-6.5, +5.8]"
    assert cell("tgbi", 0.687608, 0.68332, 0.691977) == "0.688 [0.683, 0.692]"
    assert cell("acc", 0.5, None, None) == "50.0" and cell("acc", None, None, None) == "—"


def test_winomt_per_language_and_mt_geneval_feminine_beside_masculine():
    metrics = rows(
        ("google", "winomt-en", "de", "acc", 0.542, 3886, 0.527, 0.558),
        ("google", "winomt-en", "de", "delta_g", 0.24, 3886, 0.217, 0.263),
        ("google", "winomt-en", "de", "delta_s", 0.195, 3886, 0.161, 0.229),
        ("google", "winomt-en", "de/pro", "acc", 0.6, 1000, 0.55, 0.65),  # a subset, not a scope
        ("aws", "winomt-en", "de", "acc", 0.584, 3886, 0.569, 0.6),
        ("aws", "winomt-en", "de", "delta_s", 0.219, 3886, 0.186, 0.252),  # no delta_g row: a dash
        ("ref", "mt-geneval-counterfactual", "es/feminine", "acc", 1.0, 300, 0.987, 1.0),
        ("ref", "mt-geneval-counterfactual", "es/masculine", "acc", 0.9, 300, 0.86, 0.93),
        ("ref", "mt-geneval-counterfactual", "es/feminine", "undecided", 0.06, 300, 0.04, 0.1),
        ("ref", "mt-geneval-counterfactual", "es", "acc", 0.95, 600, 0.93, 0.97),
        ("ref", "mt-geneval-counterfactual", "es", "delta_g", -0.1, 300, -0.14, -0.07),
    )
    winomt, mtgeneval = headline_blocks(metrics)
    assert winomt == [["winomt-en", "n", "acc (%)", "ΔG (points)", "ΔS (points)"],
                      ["  de  aws", "3,886", "58.4 [56.9, 60.0]", "—", "+21.9 [+18.6, +25.2]"],
                      ["  de  google", "3,886", "54.2 [52.7, 55.8]", "+24.0 [+21.7, +26.3]", "+19.5 [+16.1, +22.9]"]]
    assert mtgeneval == [["mt-geneval-counterfactual", "n", "acc feminine (%)", "acc masculine (%)", "ΔG (points)"],
                         ["  es  ref", "300", "100.0 [98.7, 100.0]", "90.0 [86.0, 93.0]", "-10.0 [-14.0, -7.0]"]]


def test_whole_suite_scopes_come_first_and_suites_without_a_headline_are_left_out():
    metrics = rows(
        ("apertium", "mittens-2en", "lang/es", "misgendered", 0.05, 334, 0.03, 0.08),
        ("apertium", "mittens-2en", "all", "acc", 0.0719, 334, 0.0488, 0.1047),
        ("apertium", "mittens-2en", "all", "misgendered", 0.0569, 334, 0.0367, 0.0871),
        ("apertium", "mittens-2en", "all", "worst_case_cells", 12.0, 12, None, None),
        ("copy", "gender-words-en-it", "all", "share_rose_f", 0.5, 4, None, None),
    )
    text = headline_text(metrics)
    assert text.splitlines() == ["results (95% intervals; report.md and report.html have every metric):",
                                 "mittens-2en    n          acc (%)  misgendered (%)",
                                 "  apertium   334  7.2 [4.9, 10.5]   5.7 [3.7, 8.7]"]
    assert headline_text(metrics, reports=False).startswith("results (95% intervals; metrics.parquet has every")
    assert headline_text(metrics.filter(pl.col("suite") == "gender-words-en-it")) == ""
