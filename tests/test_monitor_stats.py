"""The monitor's statistics by hand: multiplicity corrections, the paired label-distribution test,
the Wald p of an interval, the detectable change (checked by simulation) and the stratified sample
that keeps runs paired."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from biaseval.metrics.paired import mcnemar_p
from biaseval.monitor import stats
from biaseval.monitor.stats import adjust, stuart_maxwell_p, wald_p
from biaseval.suites.base import SuiteData
from biaseval.suites.power import detectable_shift, expected_tests, level_per_test, mcnemar_power, sample_size
from biaseval.suites.sample import SampledData, sample_suite


def test_benjamini_hochberg_and_holm_by_hand():
    p = [0.01, 0.04, 0.03, 0.005]
    # BH: sorted 0.005, 0.01, 0.03, 0.04 -> p·4/rank = 0.02, 0.02, 0.04, 0.04 (then monotone from the top)
    assert adjust(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # Holm: 0.005·4, 0.01·3, 0.03·2, 0.04·1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.02, 0.03, 0.06, 0.06
    assert adjust(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust(p, "none") == p
    assert adjust([0.9, 0.8], "bh") == pytest.approx([0.9, 0.9])  # capped at the largest
    assert adjust([0.6, 0.7], "holm") == [1.0, 1.0]
    with pytest.raises(ValueError, match="unknown correction"):
        adjust([0.1], "bonferoni")


def test_stuart_maxwell_by_hand(monkeypatch):
    # 3×3 table (rows: before, columns: after) over male, female, neutral
    table = {("male", "male"): 40, ("male", "female"): 10, ("male", "neutral"): 5, ("female", "male"): 2,
             ("female", "female"): 30, ("female", "neutral"): 3, ("neutral", "male"): 1, ("neutral", "female"): 4,
             ("neutral", "neutral"): 20}
    before = [b for (b, _), n in table.items() for _ in range(n)]
    after = [a for (_, a), n in table.items() for _ in range(n)]
    # categories sorted: female, male, neutral; margins: rows f 35 m 55 n 25; columns f 44 m 43 n 28
    d = np.array([35 - 44, 55 - 43])
    s = np.array([[35 + 44 - 60, -(2 + 10)], [-(10 + 2), 55 + 43 - 80]], dtype=float)
    chi2 = d @ np.linalg.inv(s) @ d
    exact = stuart_maxwell_p(before, after)  # 25 flips: the exact distribution (test_monitor_paired.py)
    monkeypatch.setattr(stats, "EXACT_LIMIT", 0)  # the chi-square with 2 degrees of freedom
    assert stuart_maxwell_p(before, after) == pytest.approx(math.exp(-chi2 / 2)) != pytest.approx(exact)
    # two categories: McNemar's exact test on the discordant pairs
    assert stuart_maxwell_p(["male"] * 9 + ["female"], ["female"] * 7 + ["male"] * 3) == mcnemar_p(7, 1)
    assert stuart_maxwell_p(["male"] * 5, ["male"] * 5) == 1.0


def test_wald_p_agrees_with_the_interval():
    # an interval that just excludes 0 at 95% gives p just under 0.05, and one that just includes it above
    assert wald_p(0.10, 0.0001, 0.2, 0.95) < 0.05 < wald_p(0.10, -0.0001, 0.2, 0.95)
    assert wald_p(-0.05, -0.09, -0.0001) < 0.05 < wald_p(-0.05, -0.09, 0.0001)
    assert wald_p(0.0, -0.1, 0.1) == pytest.approx(1.0)
    assert math.isnan(wald_p(0.1, float("nan"), 0.2))
    assert wald_p(1.0, 1.0, 1.0) == wald_p(-1.0, -1.0, -1.0) == 1.0  # a zero-width interval says nothing


def test_sample_size_is_the_fewest_items_with_the_power():
    # the exact test's power at d = 0.03 over churn 0.02 (alpha 0.05): the normal approximation's
    # (1.95996·√0.05 + 0.84162·√(0.05 − 0.0009))² / 0.0009 = 434 items fall short of it
    n = sample_size(0.03, 0.05, 0.8, 0.02)
    assert mcnemar_power(n, 0.03, 0.05, 0.02) >= 0.8 > mcnemar_power(n - 1, 0.03, 0.05, 0.02)
    assert n > 434 and mcnemar_power(434, 0.03, 0.05, 0.02) < 0.8
    assert detectable_shift(n, 0.05, 0.8, 0.02) <= 0.03 < detectable_shift(n // 2, 0.05, 0.8, 0.02)
    assert detectable_shift(4 * n, 0.05, 0.8, 0.02) < 0.03 / 1.5  # more items, smaller changes
    assert math.isnan(detectable_shift(0, 0.05, 0.8, 0.02))
    assert sample_size(0.03, 0.05 / 100, 0.8, 0.02) > n  # a stricter level needs more items


def test_the_level_of_each_test_and_the_tests_a_run_makes():
    assert level_per_test(0.05, 169, "bh") == level_per_test(0.05, 169, "holm") == pytest.approx(0.05 / 169)
    assert level_per_test(0.05, 169, "none") == 0.05
    items = pl.DataFrame({"item_id": ["a", "b", "c", "d"], "subset": ["es/her", "es/her", "es/him", "it/him"],
                          "tgt_lang": ["es", "es", "es", "it"], "occupation": ["nurse", "nurse", "nurse", None]})
    # all, es/her, es/him, it/him, es, it, es/occupation/nurse: 7 groups, and the suite's outcome test
    assert expected_tests([items], 2) == 2 * (7 + 1)


@pytest.mark.parametrize("n, churn", [(400, 0.02), (1500, 0.05)])
def test_detectable_change_has_its_power_in_simulation(n, churn):
    """Runs drawn with a real shift of the detectable change: McNemar's exact test (what the monitor
    runs) finds it in about 80% of them (its exact power is 0.8 there)."""
    d = detectable_shift(n, 0.05, 0.8, churn)
    rng = np.random.default_rng(7)
    draws = rng.multinomial(n, [churn / 2 + d, churn / 2, 1 - churn - d], size=2000)
    hits = sum(mcnemar_p(int(worse), int(better)) < 0.05 for worse, better, _ in draws)
    assert 0.74 <= hits / 2000 <= 0.86, (d, hits / 2000)
    # and half the change is found far less often: the number means something
    half = rng.multinomial(n, [churn / 2 + d / 2, churn / 2, 1 - churn - d / 2], size=2000)
    assert sum(mcnemar_p(int(w), int(b)) < 0.05 for w, b, _ in half) / 2000 < 0.5


class _Table(SuiteData):
    """A suite's data held whole: two targets, subsets and occupations of unequal sizes."""

    def __init__(self):
        rows = []
        for tgt in ("es", "it"):
            for subset, per in (("pro", 300), ("anti", 100)):
                for k in range(per):
                    rows.append({"item_id": f"s/{tgt}/{subset}/{k:05d}", "subset": subset, "tgt_lang": tgt,
                                 "occupation": ["nurse", "pilot", "baker", None][k % 4], "line": k + 1})
        self.table = pl.DataFrame(rows)
        self.size = self.table.height
        self.fingerprint = "f"
        self.commit = None
        self.suite = None

    def slice(self, start, stop):
        return self.table.slice(start, stop - start)

    def subset_sizes(self):
        return dict(self.table.group_by("subset").len().iter_rows())

    def target_ranges(self):
        return {"es": (0, 400), "it": (400, 800)}


def test_stratified_sample_is_proportional_fixed_and_paired():
    data = _Table()
    sample = sample_suite(data, 200, seed=3)
    assert isinstance(sample, SampledData) and sample.size == 200 and sample.full_size == 800
    items = sample.slice(0, sample.size)
    counts = {(a, b, c): n for a, b, c, n in items.group_by("tgt_lang", "subset", "occupation").len().iter_rows()}
    # nested: 100 per target; in each 75 pro and 25 anti (300 : 100); then per occupation a quarter:
    # 18.75 -> 19, 19, 19, 18 and 6.25 -> 7, 6, 6, 6 (which group rounds up is random: tests/test_sample.py)
    per_set = items.group_by("tgt_lang", "subset").len()
    assert sorted(per_set["len"].to_list()) == [25, 25, 75, 75]
    for tgt in ("es", "it"):
        assert sorted(n for (t_, s, _), n in counts.items() if t_ == tgt and s == "pro") == [18, 19, 19, 19]
        assert sorted(n for (t_, s, _), n in counts.items() if t_ == tgt and s == "anti") == [6, 6, 6, 7]
    position = {item: k for k, item in enumerate(data.table["item_id"])}
    assert sorted(position[i] for i in items["item_id"]) == [position[i] for i in items["item_id"]]  # suite order
    again = sample_suite(_Table(), 200, seed=3)
    assert again.slice(0, 200)["item_id"].to_list() == items["item_id"].to_list()  # the same items run to run
    assert again.fingerprint == sample.fingerprint != sample_suite(_Table(), 200, seed=4).fingerprint
    assert sample.slice(50, 60).equals(items.slice(50, 10))
    assert sample.slice(0, 200).equals(data.table[sample.indices.tolist()])  # the sampled rows, whole
    ranges = sample.target_ranges()
    assert ranges == {"es": (0, 100), "it": (100, 200)}
    assert set(sample.slice(*ranges["it"])["tgt_lang"]) == {"it"}
    assert sample_suite(data, 5000, seed=3) is data


def test_a_sparse_sample_reads_only_spans_near_its_items(monkeypatch):
    """A sample spread thinly over a large suite reads runs of nearby items, not the whole range."""
    import biaseval.suites.sample as sample_module

    data = _Table()
    read = []
    original = _Table.slice
    monkeypatch.setattr(_Table, "slice", lambda self, a, b: read.append(b - a) or original(self, a, b))
    monkeypatch.setattr(sample_module, "GAP", 10)
    sample = SampledData(data, np.array([3, 5, 400, 405, 790]), seed=0)
    assert sample.slice(0, 5)["item_id"].to_list() == data.table[[3, 5, 400, 405, 790]]["item_id"].to_list()
    assert read == [3, 6, 1]  # 3..5, 400..405, 790: 10 rows read, not 788


def _changes(rows: list[tuple]) -> pl.DataFrame:
    from biaseval.monitor.compare import CHANGE_SCHEMA

    return pl.DataFrame([{"suite": "s", "subset": subset, "metric": metric, "value": 0.5 + change,
                          "baseline_value": 0.5, "change": change, "change_low": change - 0.01,
                          "change_high": change + 0.01, "test": test, "p": p, "p_adjusted": None,
                          "significant": False} for subset, metric, change, test, p in rows], schema=CHANGE_SCHEMA)


def test_the_run_is_one_family_and_a_label_shift_counts_once():
    """p_m and p_f of the same items share one test (one p, counted once); the family spans the
    systems; BH and Holm adjust it as computed here by hand."""
    from biaseval.config import MonitorConfig
    from biaseval.monitor.compare import judge
    from biaseval.monitor.verdict import SystemDrift

    def systems():
        a = SystemDrift("a", "ok", changes=_changes([
            ("all", "p_m", -0.05, "labels", 0.004), ("all", "p_f", 0.05, "labels", 0.004),
            ("all", "acc", 0.04, "outcome", 0.03), ("all", "delta_g", 0.03, "interval:delta_g", 0.02),
            ("all", "f1_male", 0.2, "interval:f1_male", 1e-9)]),  # not watched: outside the family
            suites=[{"suite": "s", "items": 400, "mcnemar_p": 0.03, "flipped_share": 0.05}])
        b = SystemDrift("b", "ok", changes=_changes([("all", "acc", 0.04, "outcome", 0.04)]),
                        suites=[{"suite": "s", "items": 400, "mcnemar_p": 0.04, "flipped_share": 0.05}])
        return [a, b]

    watch = ("acc", "p_m", "p_f", "delta_g")
    bh = systems()
    assert judge(bh, MonitorConfig(store="x", watch=watch, threshold=0.02)) == 4  # labels, a's outcome, ΔG, b's outcome
    # sorted p: 0.004, 0.02, 0.03, 0.04 -> BH 0.016, 0.04, 0.04, 0.04
    got = {(r["metric"]): r["p_adjusted"] for r in bh[0].changes.iter_rows(named=True)}
    assert got["p_m"] == got["p_f"] == pytest.approx(0.016)
    assert got["acc"] == got["delta_g"] == pytest.approx(0.04) and got["f1_male"] is None
    assert bh[0].status == bh[1].status == "drift" and bh[1].suites[0]["mcnemar_p_adjusted"] == pytest.approx(0.04)
    holm = systems()
    judge(holm, MonitorConfig(store="x", watch=watch, threshold=0.02, correction="holm"))
    # Holm: 0.004·4, 0.02·3, 0.03·2, 0.04·1 -> 0.016, 0.06, 0.06, 0.06
    got = {(r["metric"]): r["p_adjusted"] for r in holm[0].changes.iter_rows(named=True)}
    assert got["p_f"] == pytest.approx(0.016) and got["acc"] == pytest.approx(0.06)
    assert set(holm[0].changes.filter(pl.col("significant"))["metric"]) == {"p_m", "p_f"}
    assert holm[1].status == "ok"  # 0.04 alone would pass; in the family it does not
    small = systems()
    judge(small, MonitorConfig(store="x", watch=watch, threshold=0.06))  # significant, but smaller than it matters
    assert small[0].status == "ok" and not small[0].changes["significant"].any()
