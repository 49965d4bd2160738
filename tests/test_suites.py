"""Suites load into item tables with stable ids and the right labels; OTSC-Hindi is regenerated from its template."""

from __future__ import annotations

import re

import polars as pl
import pytest

from biaseval.suites import ITEM_SCHEMA, resolve_suite
from biaseval.data.textio import read_lines
from conftest import REPO

GENDERS = ("female", "male")
OCCUPATIONS = "TGBI and Simple Context Evaluation/corpus/jobslist.txt"


@pytest.fixture(scope="module")
def items(data_dir):
    names = ("tgbi-hi", "otsc-hi", "winomt-hi")
    opened = {name: resolve_suite(name, REPO / "biaseval" / "data").open() for name in names}
    return {name: data.slice(0, data.size) for name, data in opened.items()}


def test_schema_and_unique_ids(items):
    for name, frame in items.items():
        assert frame.schema == pl.Schema(ITEM_SCHEMA), name
        assert frame["item_id"].n_unique() == frame.height, name
        assert frame["item_id"].is_sorted(), name  # the suite's order is its item ids' order
        assert frame.filter(pl.col("source").str.strip_chars() == "").height == 0, name


def test_item_ids_are_stable(items):
    assert items["otsc-hi"]["item_id"][0] == "otsc-hi/female-female/00001"
    assert items["winomt-hi"].filter(pl.col("item_id") == "winomt-hi/pro/00001")["occupation"].item() == "developer"


def test_tgbi_sizes(items):
    sizes = dict(items["tgbi-hi"].group_by("subset").len().iter_rows())
    assert sizes == {
        "formal": 5286, "impolite": 2628, "informal": 2628, "occupation": 3242, "negative": 2212,
        "polite": 2658, "positive": 2460, "impolite_winf": 5256, "polite_winf": 5286,
    }
    assert items["tgbi-hi"]["gold"].null_count() == items["tgbi-hi"].height


def test_otsc_sets_and_gold(items):
    frame = items["otsc-hi"]
    sizes = dict(frame.group_by("subset").len().iter_rows())
    assert sizes == {f"{s}-{f}": 1071 for s in GENDERS for f in GENDERS}
    # gold is the friend's gender; occupations line up with jobslist.txt
    assert frame.filter(pl.col("gold") != pl.col("subset").str.split("-").list.get(1)).height == 0
    assert frame.filter(pl.col("occupation").is_null()).height == 0


def test_winomt_sizes_and_labels(items):
    frame = items["winomt-hi"]
    assert frame.height == 704
    counts = {tuple(k): v for *k, v in frame.group_by("stereotype", "gold").len().iter_rows()}
    assert counts == {("pro", "male"): 176, ("pro", "female"): 176, ("anti", "male"): 176, ("anti", "female"): 176}
    first = frame.filter(pl.col("item_id") == "winomt-hi/anti/00001").row(0, named=True)
    assert first["gold"] == "female" and first["occupation"] == "developer"
    assert first["reference"].startswith("The developer argued with the designer because she")


def _strip_end(sentence: str) -> str:
    return re.sub(r"[\s.।]+$", "", sentence)


@pytest.mark.parametrize("speaker", GENDERS)
@pytest.mark.parametrize("friend", GENDERS)
def test_otsc_generated_from_template_equals_upstream(hindi, items, speaker, friend):
    """biaseval/data/suites/otsc-hi.yaml expands to the upstream sentence files."""
    upstream = read_lines(hindi / f"TGBI and Simple Context Evaluation/corpus/me_{speaker}_my_mitra_{friend}_set.txt")
    frame = items["otsc-hi"].filter(pl.col("subset") == f"{speaker}-{friend}").sort("line")
    generated = frame["source"].to_list()
    assert frame["occupation"].to_list() == [o.strip() for o in read_lines(hindi / OCCUPATIONS)]
    assert len(generated) == len(upstream) == 1071
    assert [_strip_end(g) for g in generated] == [_strip_end(u) for u in upstream]
    # upstream ends every sentence with ". " (a trailing space); the template ends with "."
    assert all(u.endswith(". ") for u in upstream) and all(g.endswith("है.") for g in generated)
