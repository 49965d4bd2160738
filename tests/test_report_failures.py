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


def test_the_failures_section_says_what_a_rerun_does_with_each_kind():
    """A rerun sends failed texts again; a reply rejected as not a translation is final (the store
    keeps it and a rerun reuses it): the report must not promise that rerunning retries it."""
    from biaseval.report.markdown import failures_section

    failures = pl.DataFrame({"system": ["llm", "llm"], "suite": ["otsc-en", "winomt-hi"], "items": [3, 1],
                             "error": ["not a translation (refusal)", "gave up after 6 attempts: timeout"]})
    text = " ".join(failures_section(failures))
    assert "retries them" not in text
    assert "sends the texts that failed again" in text
    assert "not a translation" in text and "final" in text and "not sent again" in text
    assert "--refresh" in text  # the only way to ask again, and it sends every text
