"""The report's table of items without a translation is the same every time it is written."""

from __future__ import annotations

import polars as pl

from biaseval.report.markdown import read_failures


def test_most_common_error_ties_are_broken_the_same_way_every_time(tmp_path):
    labels = tmp_path / "labels.parquet"
    pl.DataFrame({
        "system": ["a"] * 5 + ["b"] * 3, "suite": ["s"] * 8,
        "label": [None] * 4 + ["male"] + [None] * 3,
        "error": ["zeta", "alpha", "zeta", "alpha", None, "timeout", "timeout", "quota"],
    }).write_parquet(labels)
    tables = [read_failures(labels) for _ in range(20)]
    assert all(t.equals(tables[0]) for t in tables)
    assert tables[0].rows() == [("a", "s", 4, "alpha"), ("b", "s", 3, "timeout")]
