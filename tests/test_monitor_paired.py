"""The monitor's statistics against maintained implementations and by brute force: McNemar,
Stuart–Maxwell, BH and Holm against statsmodels; the exact marginal-homogeneity test against
enumerating every way each flipped item could have gone; Wilson's interval and Newcombe's interval of
a difference against statsmodels; the exact power of McNemar's test against its definition; and the
rules that keep a handful of flips from ever looking like certainty."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import SquareTable, mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from biaseval.config import MonitorConfig
from biaseval.metrics.paired import mcnemar_p
from biaseval.metrics.wilson import mover, wilson_interval
from biaseval.monitor import stats
from biaseval.monitor.compare import compare_items, family, judge, metric_changes
from biaseval.monitor.stats import adjust, label_tests, marginal_homogeneity_p, wald_p
from biaseval.monitor.verdict import SystemDrift
from biaseval.suites.power import detectable_shift, item_groups, mcnemar_power

LABELS = ["ambiguous", "female", "male", "neutral", "unknown"]


def test_mcnemar_is_statsmodels_exact_test_and_vectorised():
    pairs = [(0, 0), (1, 0), (0, 1), (5, 5), (0, 6), (2, 10), (400, 500), (30, 970), (0, 60), (7, 3)]
    for b, c in pairs:
        expected = mcnemar([[0, b], [c, 0]], exact=True).pvalue
        assert mcnemar_p(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-300), (b, c)
    b, c = np.array(pairs).T
    assert np.array_equal(mcnemar_p(b, c), [mcnemar_p(int(x), int(y)) for x, y in pairs])
    assert mcnemar_p(0, 0) == mcnemar_p(1, 0) == 1.0  # nothing, or one flip: no evidence


def _table(flows: dict[tuple[str, str], int], labels: list[str]) -> np.ndarray:
    return np.array([[flows.get((a, b), 0) for b in labels] for a in labels], dtype=float)


@pytest.mark.property
@given(st.dictionaries(st.tuples(st.sampled_from(LABELS[1:4]), st.sampled_from(LABELS[1:4])),
                       st.integers(1, 60), min_size=3))
def test_stuart_maxwell_chi_square_is_statsmodels_homogeneity(flows):
    """Where statsmodels' covariance is invertible (every label flips, the flips connect them), the
    chi-square path gives its p (statsmodels computes 1 − cdf: equal above its rounding)."""
    labels = sorted({x for pair in flows for x in pair})
    kinds = {tuple(sorted(pair)) for pair, n in flows.items() if pair[0] != pair[1]}
    if len(labels) != 3 or len(kinds) < 2:  # a label that never flips: statsmodels has no answer
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = SquareTable(_table(flows, labels), shift_zeros=False).homogeneity()
    original = stats.EXACT_LIMIT
    stats.EXACT_LIMIT = 0
    try:
        got = marginal_homogeneity_p(flows)
    finally:
        stats.EXACT_LIMIT = original
    assert got == pytest.approx(expected.pvalue, abs=1e-12)


def test_stuart_maxwell_where_statsmodels_gives_nan(monkeypatch):
    """A label that never flips (its row and column of the covariance are 0) and flips in two
    unconnected pairs of labels: statsmodels returns NaN; here each connected part counts."""
    monkeypatch.setattr(stats, "EXACT_LIMIT", 0)
    flows = {("male", "female"): 30, ("female", "male"): 12, ("neutral", "unknown"): 9, ("unknown", "neutral"): 2,
             ("ambiguous", "ambiguous"): 50}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(SquareTable(_table(flows, LABELS), shift_zeros=False).homogeneity().pvalue)
    from scipy.stats import chi2

    statistic = (30 - 12) ** 2 / 42 + (9 - 2) ** 2 / 11  # each part's McNemar statistic, 1 + 1 degrees
    assert marginal_homogeneity_p(flows) == pytest.approx(chi2.sf(statistic, 2), rel=1e-9)


def _brute_force(flows: dict[tuple[str, str], int]) -> float:
    """Every flipped item goes either way, each way with probability 1/2: P(Stuart–Maxwell's
    statistic >= observed), item by item. (Its covariance S depends only on how many items flipped
    between each pair of labels, which turning an item around keeps: one S for every way.)"""
    items = [pair for pair, n in flows.items() if pair[0] != pair[1] for _ in range(n)]
    labels = sorted({x for pair in items for x in pair})
    index = {x: k for k, x in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)))
    for a, b in items:
        table[index[a], index[b]] += 1
    s = -(table + table.T)
    np.fill_diagonal(s, table.sum(axis=1) + table.sum(axis=0) - 2 * np.diag(table))
    inverse = np.linalg.pinv(s)
    moves = np.array([[(x == a) - (x == b) for x in labels] for a, b in items], dtype=float)  # item -> its d
    ways = np.array(list(itertools.product((1.0, -1.0), repeat=len(items))))  # each item kept or turned round
    d = ways @ moves
    statistics = ((d @ inverse) * d).sum(axis=1)
    return float((statistics >= statistics[0] - 1e-9).mean())  # way 0 keeps every item: the observed


@pytest.mark.property
@given(st.dictionaries(st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS)).filter(lambda p: p[0] != p[1]),
                       st.integers(1, 4), min_size=1, max_size=4).filter(lambda f: sum(f.values()) <= 12))
@example({("male", "female"): 2, ("female", "neutral"): 2, ("neutral", "male"): 2})  # a cycle: d = 0, p = 1
def test_exact_test_is_the_enumeration_of_every_way_the_flips_could_have_gone(flows):
    assert marginal_homogeneity_p(flows) == pytest.approx(_brute_force(flows), abs=1e-12)


@pytest.mark.property
@given(st.dictionaries(st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS)), st.integers(0, 3), max_size=6))
def test_a_few_flips_are_never_certainty(flows):
    """An exact p is at least the chance of the observed flips or their mirror image: 2^(1 − flips)
    when anything flipped, so a group with one flip has p = 1 and one with five at least 1/16."""
    flips = sum(n for (a, b), n in flows.items() if a != b)
    p = marginal_homogeneity_p(flows)
    assert p >= min(1.0, 2.0 ** (1 - flips)) - 1e-12
    if flips <= 1:
        assert p == 1.0


def test_label_tests_per_group_equal_one_test_at_a_time():
    rng = np.random.default_rng(4)
    rows = []
    for g in range(60):
        for _ in range(int(rng.integers(0, 6))):
            before, after = rng.choice(LABELS, 2, replace=False)
            rows.append((f"group {g % 23}", before, after, int(rng.integers(1, 9))))
    flows = pl.DataFrame(rows, schema=["group", "before", "after", "n"], orient="row")
    got = label_tests(flows)
    for (group,), part in flows.partition_by("group", as_dict=True).items():
        one = {}
        for _, before, after, n in part.iter_rows():
            one[(before, after)] = one.get((before, after), 0) + n
        assert got[group] == pytest.approx(marginal_homogeneity_p(one), rel=1e-12), group
    assert label_tests(flows.clear()) == {}


@pytest.mark.property
@given(st.lists(st.floats(0, 1), min_size=1, max_size=40), st.integers(0, 5))
@example([0.01, 0.04, 0.03, 0.005], 0)
def test_benjamini_hochberg_is_statsmodels_multipletests(p, ties):
    values = np.array(p + p[:ties])  # some ties
    assert adjust(values.tolist(), "bh") == pytest.approx(multipletests(values, method="fdr_bh")[1].tolist(),
                                                          rel=1e-12, abs=1e-15)
    assert adjust(values.tolist(), "none") == values.tolist() and adjust([], "bh") == []


@pytest.mark.property
@settings(max_examples=25)  # statsmodels' Holm runs gc.collect() on every call: a second each in this process
@given(st.lists(st.floats(0, 1), min_size=1, max_size=40), st.integers(0, 5))
@example([0.01, 0.04, 0.03, 0.005], 0)
def test_holm_is_statsmodels_multipletests(p, ties):
    values = np.array(p + p[:ties])
    assert adjust(values.tolist(), "holm") == pytest.approx(multipletests(values, method="holm")[1].tolist(),
                                                            rel=1e-12, abs=1e-15)


@pytest.mark.property
@given(st.integers(1, 10_000), st.data())
@example(1, None)
def test_wilson_is_statsmodels_and_never_a_point(n, data):
    k = data.draw(st.integers(0, n)) if data is not None else 1
    low, high = wilson_interval(k / n, n)
    ref_low, ref_high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert (float(low), float(high)) == pytest.approx((max(ref_low, 0.0), min(ref_high, 1.0)), abs=1e-12)
    assert low <= k / n <= high and high - low > 0  # at 0/n and n/n too: no zero-width interval


def test_mover_of_two_wilson_intervals_is_newcombes_interval():
    for k1, n1, k2, n2 in ((1, 1, 0, 1), (19, 19, 18, 19), (0, 19, 0, 19), (30, 100, 45, 120), (5, 7, 0, 3)):
        d = k1 / n1 - k2 / n2
        cur, base = wilson_interval(k1 / n1, n1), wilson_interval(k2 / n2, n2)
        low, high = mover(d, (k1 / n1, *cur), (k2 / n2, *base))
        expected = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff")
        assert (low, high) == pytest.approx(tuple(map(float, expected)), abs=1e-12), (k1, n1, k2, n2)
        assert high - low > 0


def test_wald_p_of_a_zero_width_interval_is_one_not_zero():
    assert wald_p(1.0, 1.0, 1.0) == wald_p(-0.4, -0.4, -0.4) == 1.0
    assert wald_p(0.0, 0.0, 0.0) == 1.0
    got = wald_p(np.array([0.1, 1.0, np.nan]), np.array([0.0001, 1.0, 0.0]), np.array([0.2, 1.0, 1.0]))
    assert got[0] < 0.05 and got[1] == 1.0 and math.isnan(got[2])


def test_mcnemar_power_is_its_definition():
    """The exact power against summing over every (worse, better, same) outcome of the model."""
    from scipy.stats import multinomial

    n, change, churn, level = 30, 0.2, 0.1, 0.05
    expected = 0.0
    for worse in range(n + 1):
        for better in range(n + 1 - worse):
            if mcnemar_p(worse, better) < level:
                expected += multinomial.pmf([worse, better, n - worse - better], n,
                                            [churn / 2 + change, churn / 2, 1 - churn - change])
    assert mcnemar_power(n, change, level, churn) == pytest.approx(expected, rel=1e-9)


def test_detectable_shift_has_its_power_and_no_less():
    for n, level in ((160, 0.05), (400, 0.05 / 85), (1500, 0.001)):
        d = detectable_shift(n, level, 0.8, 0.02)
        assert mcnemar_power(n, d, level, 0.02) >= 0.8 > mcnemar_power(n, 0.97 * d, level, 0.02)
    assert math.isnan(detectable_shift(0, 0.05, 0.8, 0.02)) and math.isnan(detectable_shift(3, 1e-6, 0.8, 0.02))


def _items(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["item_id", "subset", "tgt_lang", "occupation", "gold", "label", "label_base"],
                        orient="row").with_columns(pl.col("item_id").alias("source"), pl.col("item_id").alias("translation"),
                                                   pl.col("item_id").alias("translation_base"))


def test_item_groups_are_the_subsets_metrics_report():
    items = _items([("1", "es/her", "es", "nurse", "female", None, None), ("2", "es/him", "es", "nurse", "male", None, None),
                    ("3", "fr/her", "fr", None, "female", None, None), ("4", "de", "de", "pilot", "male", None, None)])
    groups = {(r["item_id"], r["group"]) for r in item_groups(items).iter_rows(named=True)}
    assert groups == {("1", "all"), ("1", "es/her"), ("1", "es"), ("1", "es/occupation/nurse"),
                      ("2", "all"), ("2", "es/him"), ("2", "es"), ("2", "es/occupation/nurse"),
                      ("3", "all"), ("3", "fr/her"), ("3", "fr"),
                      ("4", "all"), ("4", "de"), ("4", "de/occupation/pilot")}  # "de" is a subset: its items only


def _share_rows(items: pl.DataFrame, label: str) -> pl.DataFrame:
    """p_m and p_f per item subset and occupation (what scoring reports for otsc-en), and ΔG at all."""
    from biaseval.metrics.occupations import per_occupation
    from biaseval.metrics.proportions import gender_shares

    labelled = items.with_columns(pl.col(label).alias("label"), pl.lit("s").alias("system"), pl.lit("x").alias("suite"),
                                  pl.lit(50.0).alias("female_share"))
    extra = pl.DataFrame({"system": "s", "suite": "x", "subset": "all", "metric": "delta_g", "value": 0.1, "n": 1,
                          "ci_low": 0.05, "ci_high": 0.15})
    return pl.concat([gender_shares(labelled), per_occupation(labelled, n_boot=10)], how="diagonal_relaxed").pipe(
        lambda m: pl.concat([m, extra], how="diagonal_relaxed"))


def test_the_family_is_the_groups_with_paired_data_plus_the_unpaired_metrics():
    """otsc-shaped items: 2 languages × 3 occupations × her/him. Watched p_m, p_f, ΔG: one labels test
    per group with paired items (4 subsets + 6 occupations), the suite's outcome test, ΔG's interval."""
    rows, k = [], 0
    for lang in ("es", "fr"):
        for variant, gold in (("her", "female"), ("him", "male")):
            for occupation in ("nurse", "pilot", "baker"):
                k += 1
                flipped = "male" if k in (1, 2, 3) else gold  # es/her: every friend turned male
                rows.append((f"x/{k}", f"{lang}/{variant}", lang, occupation, gold, flipped, gold))
    items = _items(rows)
    monitor = MonitorConfig(store="x", watch=("p_m", "p_f", "delta_g"), threshold=0.02)
    info, flips, tests = compare_items(items, "x", monitor)
    changes = metric_changes(_share_rows(items, "label"), _share_rows(items, "label_base"), tests)
    watched = changes.filter(pl.col("metric").is_in(["p_m", "p_f"]))
    assert set(watched["test"]) == {"labels"} and watched.select("subset").n_unique() == 4 + 6
    # p_m and p_f of a group share its one test: one p per group
    assert watched.group_by("subset").agg(pl.col("p").n_unique())["p"].max() == 1
    system = SystemDrift("s", "ok", changes=changes, suites=[info], flips=flips)
    assert len(family([system], monitor.watch)) == (4 + 6) + 1 + 1 == judge([system], monitor)
    assert info["flipped"] == 3 and tests[("x", "es/her", "labels")] == pytest.approx(0.25)  # 3 one-way flips
    assert tests[("x", "es/occupation/nurse", "labels")] == 1.0  # one flip of its two items
