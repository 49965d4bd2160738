"""One unit per kind of number (report/numbers.py), and the summary's and the examples' pure parts:
shares in percent with one decimal, differences of shares in signed percentage points, counts as
integers, indices with three decimals, everywhere the same; the compact letter display; the
deciding words marked in a translation."""

from __future__ import annotations

import re

import polars as pl
import pytest

from biaseval.report import numbers
from biaseval.report.examples import choose, cue_words, segments
from biaseval.report.summary import letters, plain, summary
from metric_rows import metric_frame

NAN = float("nan")


@pytest.mark.parametrize("metric, value, shown, with_unit", [
    ("acc", 0.56666, "56.7", "56.7%"),
    ("p_f", 1.0, "100.0", "100.0%"),
    ("undecided", 0.2567, "25.7", "25.7%"),  # a share is a share, whichever metric
    ("misgendered", 0.0, "0.0", "0.0%"),
    ("delta_g", 0.0312, "+3.1", "+3.1 pp"),
    ("delta_s", -0.0375, "-3.8", "-3.8 pp"),  # rounded from the value, not from rounded shares
    ("diff_correct", 0.0, "+0.0", "+0.0 pp"),
    ("worst_case_cells", 12.0, "12", "12"),  # a count, not "12.0000"
    ("tgbi", 0.74208, "0.742", "0.742"),
    ("P", 1.0, "1.000", "1.000"),
    ("r_female_share", 0.8432, "0.84", "0.84"),
    ("mean_intensity_tgt", 0.0042, "4.20e-03", "4.20e-03"),
    ("acc", None, "—", "—"),
    ("acc", NAN, "NaN", "NaN"),
])
def test_each_kind_of_number(metric, value, shown, with_unit):
    assert numbers.number(value, metric) == shown
    assert numbers.text(value, metric) == with_unit


def test_units_headers_and_intervals():
    assert [numbers.unit(m) for m in ("acc", "delta_g", "tgbi", "worst_case_cells")] == ["%", "pp", "", ""]
    assert numbers.header("ΔG", "delta_g") == "ΔG (pp)" and numbers.header("Acc", "acc") == "Acc (%)"
    assert numbers.header("TGBI", "tgbi") == "TGBI"
    assert numbers.interval(0.4, 0.6, "acc") == "[40.0, 60.0]"
    assert numbers.interval(-0.05, 0.01, "delta_s") == "[-5.0, +1.0]"
    assert numbers.interval(None, None, "acc") is None and numbers.interval(NAN, NAN, "acc") is None
    assert numbers.count(1234567) == "1,234,567" and numbers.p_value(0.0004) == "< 0.001"
    assert numbers.scale("acc") == numbers.scale("delta_g") == 100.0 and numbers.scale("tgbi") == 1.0


def test_changes_are_points_for_shares_and_own_terms_otherwise():
    assert numbers.change(-0.09, "acc", -0.12, -0.06) == "-9.0 [-12.0, -6.0] pp"
    assert numbers.change(0.02, "delta_s") == "+2.0 pp"  # a change of a difference of shares: points too
    assert numbers.change(-0.012, "tgbi") == "-0.012"
    assert numbers.change_interval(-0.12, -0.06, "acc") == "[-12.0, -6.0] pp"
    assert numbers.change(None, "acc") == "—"


def test_every_kind_keeps_its_decimals_whatever_the_value():
    """The same decimals everywhere: a share never shows two decimals here and one there."""
    for value in (0.0, 0.001, 0.5, 0.99999, 1.0):
        assert re.fullmatch(r"\d+\.\d", numbers.number(value, "acc"))
        assert re.fullmatch(r"[+-]\d+\.\d", numbers.number(value - 0.5, "delta_g"))


def test_a_published_value_at_its_tables_precision():
    assert numbers.at_precision(0.6206, 1, 3) == "0.621" and numbers.at_precision(0.97291, 100, 2) == "97.29"


def test_letters_group_the_systems_that_do_not_differ():
    values = {"a": 0.9, "b": 0.5, "c": 0.7}
    assert letters(values, set()) == {}  # nothing differs: no letters at all
    assert letters(values, {frozenset("ab")}) == {"a": "a", "b": "b", "c": "ab"}
    assert letters(values, {frozenset("ab"), frozenset("ac"), frozenset("bc")}) == {"a": "a", "c": "b", "b": "c"}
    # every pair that differs shares no letter; every pair that does not, shares one
    four = {"a": 0.9, "b": 0.5, "c": 0.7, "d": 0.6}
    different = {frozenset("ab"), frozenset("ad")}
    marks = letters(four, different)
    for x in four:
        for y in four:
            if x < y:
                assert bool(set(marks[x]) & set(marks[y])) == (frozenset((x, y)) not in different), (x, y, marks)


def test_the_summary_marks_only_differences_on_shared_items_and_the_printed_values():
    rows = [("a", "w", "all", "acc", 0.70, 200, 0.63, 0.76), ("b", "w", "all", "acc", 0.50, 200, 0.43, 0.57),
            ("a", "w", "all", "delta_g", 0.10, 200, 0.02, 0.18), ("b", "w", "all", "delta_g", 0.30, 200, 0.2, 0.4),
            ("a", "w", "all", "delta_s", 0.0, 200, -0.1, 0.1), ("b", "w", "all", "delta_s", 0.0, 200, -0.1, 0.1),
            ("a", "w", "vs/b", "mcnemar_p", 0.001, 200, None, None), ("b", "w", "vs/a", "mcnemar_p", 0.001, 200, None, None)]
    published = {("w", "all", "acc", "a"): ("70.0", 100, 1, False), ("w", "all", "acc", "b"): ("48.9", 100, 1, False),
                 ("w", "all", "delta_g", "b"): ("31.0", 100, 1, True)}
    result = summary(metric_frame(rows), ["w"], ["a", "b"], published)
    [table] = result.tables
    [group] = table.groups
    assert [c.label for c in group.columns] == ["Acc (%)", "ΔG (pp)", "ΔS (pp)"]
    acc_a, acc_b = group.cells["a"][0], group.cells["b"][0]
    assert (acc_a.value, acc_a.ci, acc_a.n, acc_a.letters) == ("70.0", "[63.0, 76.0]", 200, "a")
    assert acc_b.letters == "b" and group.cells["a"][1].letters == ""  # letters on shares the tests compare only
    assert (acc_a.paper, acc_a.differs, acc_b.paper, acc_b.differs) == ("70.0", False, "48.9", True)
    gap_b = group.cells["b"][1]  # differs from the print for a known reason: an erratum, not ≠
    assert (gap_b.paper, gap_b.differs, gap_b.erratum) == ("31.0", False, True)
    text = plain(result)  # for a terminal: the same cells, aligned
    assert text[0].split() == ["w", "Acc", "(%)", "ΔG", "(pp)", "ΔS", "(pp)"]
    assert text[1].split()[:4] == ["a", "70.0", "a", "[63.0,"] and "+10.0 [+2.0, +18.0]" in text[1]
    not_significant = summary(metric_frame(rows[:6] + [(s, "w", f"vs/{o}", "mcnemar_p", 0.2, 200, None, None)
                                                       for s, o in (("a", "b"), ("b", "a"))]), ["w"], ["a", "b"])
    assert not not_significant.lettered


def test_deciding_words_are_marked_whole_and_by_side():
    assert cue_words("-la -nueva +el") == {"la": "other", "nueva": "other", "el": "cue"}
    assert cue_words("cirujana:f nato:m ...", gold="female") == {"cirujana": "cue", "nato": "other"}
    assert segments("La nueva presidenta, la de ella.", "-la -nueva") == [
        ("La", "other"), (" ", None), ("nueva", "other"), (" presidenta, ", None), ("la", "other"), (" de ella.", None)]
    assert segments("Shell she said", "she") == [("Shell ", None), ("she", "cue"), (" said", None)]  # whole words
    assert "".join(p for p, _ in segments("Él es médico", "médico")) == "Él es médico"
    assert segments(None, "x") == [("", None)] and segments("text", None) == [("text", None)]


def test_choose_filters_and_puts_the_wrong_first():
    frame = pl.DataFrame({"system": ["a", "a", "b", "b"], "suite": ["s"] * 4, "item_id": ["1", "2", "3", "4"],
                          "language": ["es", "fr", "es", "es"], "outcome": ["right", "wrong", "wrong", "unscored"],
                          "order": [0, 0, 1, 0]})
    assert choose(frame)["item_id"].to_list() == ["2", "3", "1", "4"]
    assert choose(frame, system="b", outcome="wrong")["item_id"].to_list() == ["3"]
    assert choose(frame, language="es", limit=1)["item_id"].to_list() == ["3"]
