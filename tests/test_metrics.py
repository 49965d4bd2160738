"""Metric functions on small frames with hand-computed values, and the bootstrap's behaviour."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from biaseval.metrics import gender_shares, tgbi, winomt
from biaseval.metrics.bootstrap import intervals, resample_counts, rng_for


def frame(system="s", suite="x", **cols) -> pl.DataFrame:
    n = len(next(iter(cols.values())))
    return pl.DataFrame({"system": [system] * n, "suite": [suite] * n, **cols})


def metric(tidy: pl.DataFrame, subset: str, name: str, system: str = "s") -> dict:
    rows = tidy.filter((pl.col("subset") == subset) & (pl.col("metric") == name) & (pl.col("system") == system))
    assert rows.height == 1, (subset, name)
    return rows.row(0, named=True)


def test_shares_fold_ambiguous_into_neutral():
    labelled = frame(subset=["a"] * 10, label=["male"] * 5 + ["female"] * 2 + ["neutral"] * 2 + ["ambiguous"])
    out = gender_shares(labelled, n_boot=200)
    assert metric(out, "a", "p_m")["value"] == 0.5
    assert metric(out, "a", "p_f")["value"] == 0.2
    assert metric(out, "a", "p_n")["value"] == pytest.approx(0.3)
    assert metric(out, "a", "p_m")["n"] == 10


def test_tgbi_formula_and_mean_over_index_sets():
    labelled = pl.concat([
        frame(subset=["s1"] * 4, label=["male", "male", "female", "neutral"]),  # sqrt(.5*.25+.25)
        frame(subset=["s2"] * 2, label=["neutral", "neutral"]),  # 1
        frame(subset=["extra"] * 1, label=["male"]),  # 0, not in the index
    ])
    out = tgbi(labelled, index_sets=("s1", "s2"), n_boot=200)
    p1 = math.sqrt(0.5 * 0.25 + 0.25)
    assert metric(out, "s1", "P")["value"] == pytest.approx(p1)
    assert metric(out, "s2", "P")["value"] == 1.0
    assert metric(out, "extra", "P")["value"] == 0.0
    assert metric(out, "all", "tgbi")["value"] == pytest.approx((p1 + 1) / 2)
    # no index row when a set is missing
    assert tgbi(labelled, index_sets=("s1", "s3"), n_boot=10).filter(pl.col("metric") == "tgbi").height == 0


def _wino(gold, pred, stereo):
    return frame(gold=gold, label=pred, stereotype=stereo, subset=stereo)


def test_winomt_hand_computed():
    # pro: 4 items, anti: 4 items
    gold = ["male", "male", "female", "female", "male", "male", "female", "female"]
    pred = ["male", "male", "female", "male", "female", "neutral", "female", "ambiguous"]
    stereo = ["pro"] * 4 + ["anti"] * 4
    out = winomt(_wino(gold, pred, stereo), n_boot=200)
    # all: correct = 2+1 (pro) + 1 (anti) = 4 of 8
    assert metric(out, "all", "acc")["value"] == 0.5
    # male: tp=2, fp=1 (female gold predicted male), fn=2 -> F1 = 4/(4+1+2)
    assert metric(out, "all", "f1_male")["value"] == pytest.approx(4 / 7)
    # female: tp=2, fp=1, fn=2 -> 4/7
    assert metric(out, "all", "f1_female")["value"] == pytest.approx(4 / 7)
    assert metric(out, "all", "delta_g")["value"] == pytest.approx(0.0)
    assert metric(out, "all", "neutral")["value"] == pytest.approx(2 / 8)  # neutral + ambiguous
    # pro: male F1 = 2*2/(4+1+0)=0.8, female F1 = 2/(2+0+1)=2/3; anti: male 0 (tp 0), female 2/(2+1+1)=0.5
    assert metric(out, "pro", "macro_f1")["value"] == pytest.approx((0.8 + 2 / 3) / 2)
    assert metric(out, "anti", "macro_f1")["value"] == pytest.approx((0 + 0.5) / 2)
    assert metric(out, "all", "delta_s")["value"] == pytest.approx((0.8 + 2 / 3) / 2 - 0.25)
    acc_basis = winomt(_wino(gold, pred, stereo), basis="acc", n_boot=10)
    assert metric(acc_basis, "all", "delta_s")["value"] == pytest.approx(3 / 4 - 1 / 4)
    # on the accuracy basis ΔS is a difference of two shares of independent sets: Newcombe's interval
    from biaseval.metrics.wilson import difference_interval

    delta_s = metric(acc_basis, "all", "delta_s")
    assert (delta_s["ci_low"], delta_s["ci_high"]) == pytest.approx(difference_interval(3, 4, 1, 4))
    every_one_right = winomt(_wino(gold, gold, stereo), basis="acc", n_boot=10)
    right = metric(every_one_right, "all", "delta_s")
    assert right["value"] == 0 and right["ci_low"] < 0 < right["ci_high"]  # 4 of 4 against 4 of 4: not a point
    with pytest.raises(ValueError):
        winomt(_wino(gold, pred, stereo), basis="f1")


def test_bootstrap_is_seeded_shares_are_wilson_and_both_bracket_the_value():
    labelled = frame(subset=["a"] * 300, label=(["male"] * 200 + ["female"] * 60 + ["neutral"] * 40))
    first = tgbi(labelled, index_sets=["a"], n_boot=500, seed=7)
    again = tgbi(labelled, index_sets=["a"], n_boot=500, seed=7)
    other = tgbi(labelled, index_sets=["a"], n_boot=500, seed=8)
    assert first.equals(again)
    booted = pl.col("metric").is_in(["P", "tgbi"])
    assert not first.filter(booted).equals(other.filter(booted))  # P and TGBI: a seeded bootstrap
    assert first.filter(~booted).equals(other.filter(~booted))  # the shares: Wilson's closed form
    assert first.filter(~booted).equals(gender_shares(labelled, n_boot=500, seed=7))
    for row in first.iter_rows(named=True):
        assert row["ci_low"] < row["value"] < row["ci_high"]
    # the normal approximation for p_m = 2/3 at n = 300: half-width ~ 1.96 * sqrt(p(1-p)/n) = 0.053
    pm = metric(first, "a", "p_m")
    assert (pm["ci_high"] - pm["ci_low"]) / 2 == pytest.approx(1.96 * math.sqrt(2 / 3 / 3 / 300), rel=0.15)


def test_adding_a_system_does_not_change_another_systems_interval():
    """(Sets of one system and suite share a generator; systems never do.)"""
    a = frame(system="a", subset=["x"] * 50, label=["male"] * 30 + ["female"] * 20)
    b = frame(system="b", subset=["x"] * 50, label=["male"] * 10 + ["female"] * 40)
    alone = gender_shares(a, n_boot=300, seed=1)
    together = gender_shares(pl.concat([a, b]), n_boot=300, seed=1).filter(pl.col("system") == "a")
    assert alone.equals(together)


def test_multinomial_resampling_matches_item_resampling():
    """Drawing counts from Multinomial(n, shares) is the item bootstrap: compare the two in distribution."""
    outcomes = np.array([0] * 70 + [1] * 20 + [2] * 10)
    counts = np.bincount(outcomes, minlength=3)
    rng = np.random.default_rng(0)
    by_items = np.array([np.bincount(rng.choice(outcomes, outcomes.size), minlength=3) for _ in range(4000)])
    by_counts = resample_counts(counts, 4000, rng_for(0, "t"))
    assert by_counts.sum(axis=1).tolist() == [100] * 4000
    np.testing.assert_allclose(by_items.mean(axis=0), by_counts.mean(axis=0), rtol=0.03)
    np.testing.assert_allclose(by_items.std(axis=0), by_counts.std(axis=0), rtol=0.08)


def test_intervals_ignore_undefined_replicates():
    low, high = intervals(np.array([[np.nan, 1.0, 1.0], [np.nan, np.nan, np.nan], [0.0, 1.0, 2.0]]))
    assert (low[0], high[0]) == (1.0, 1.0)
    assert math.isnan(low[1]) and math.isnan(high[1])
    assert low[2] == pytest.approx(0.05) and high[2] == pytest.approx(1.95)


def test_row_wise_resampling_matches_the_multinomial():
    from biaseval.metrics.bootstrap import resample_rows

    counts = np.array([[70, 20, 10], [5, 0, 5], [0, 0, 0]])
    reps = resample_rows(counts, 5000, rng_for(0, "rows"))
    assert reps.shape == (3, 5000, 3)
    assert (reps.sum(axis=2) == counts.sum(axis=1)[:, None]).all()
    assert (reps[1, :, 1] == 0).all() and (reps[2] == 0).all()
    direct = resample_counts(counts[0], 5000, rng_for(1, "direct"))
    np.testing.assert_allclose(reps[0].mean(axis=0), direct.mean(axis=0), rtol=0.03)
    np.testing.assert_allclose(reps[0].std(axis=0), direct.std(axis=0), rtol=0.08)


def test_row_wise_resampling_is_the_binomial_chain_drawn_in_order():
    """The stream is pinned (intervals must not move between versions): class by class, then row by
    row, then replicate by replicate, one binomial of what is left — checked against scalar draws."""
    from biaseval.metrics.bootstrap import resample_rows

    counts = np.array([[3, 2, 0], [0, 0, 0], [1, 0, 4], [0, 7, 1], [2, 2, 2]])
    n_boot = 6
    reps = resample_rows(counts, n_boot, rng_for(3, "chain"))
    rng = rng_for(3, "chain")
    left = np.repeat(counts.sum(axis=1)[:, None], n_boot, axis=1)
    rest = counts.sum(axis=1).astype(float)
    expected = np.zeros((len(counts), n_boot, 3), dtype=np.int64)
    for k in range(2):
        for g in range(len(counts)):
            p = counts[g, k] / rest[g] if rest[g] > 0 else 0.0
            for b in range(n_boot):
                expected[g, b, k] = rng.binomial(left[g, b], p)
                left[g, b] -= expected[g, b, k]
        rest = rest - counts[:, k]
    expected[:, :, 2] = left
    assert reps.shape == expected.shape
    assert (reps == expected).all()


def test_mcnemar_exact():
    from biaseval.metrics.paired import mcnemar_p

    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(5, 5) == 1.0
    # b=0, c=6: 2 * 0.5**6
    assert mcnemar_p(0, 6) == pytest.approx(2 * 0.5 ** 6)
    # b=2, c=10: 2 * sum_{k<=2} C(12,k) / 2**12
    assert mcnemar_p(2, 10) == pytest.approx(2 * (1 + 12 + 66) / 4096)
    assert mcnemar_p(10, 2) == mcnemar_p(2, 10)
    assert 0 < mcnemar_p(400, 500) < 0.01  # large counts stay finite


def test_pairwise_rows():
    from biaseval.metrics.paired import pairwise

    outcomes = pl.DataFrame({
        "item_id": [f"i{k}" for k in range(10)] * 2,
        "system": ["a"] * 10 + ["b"] * 10,
        "outcome": [True] * 10 + [True] * 4 + [False] * 6,
    })
    out = pairwise(outcomes, "s")
    a = {r["metric"]: r for r in out.filter(pl.col("system") == "a").iter_rows(named=True)}
    assert a["mcnemar_p"]["subset"] == "vs/b" and a["mcnemar_p"]["value"] == pytest.approx(2 * 0.5 ** 6)
    assert a["diff_correct"]["value"] == pytest.approx(0.6) and a["diff_correct"]["n"] == 10
    assert out.filter(pl.col("system") == "b").filter(pl.col("metric") == "diff_correct")["value"].item() == pytest.approx(-0.6)
    assert out["interval"].null_count() == out.height  # a p-value and a difference without an interval


def test_pairwise_compares_shared_items_only_and_each_group():
    """No row for a pair (or a group) with no item in common: "p = 1, n = 0" says nothing. Each group
    is compared on its own items as well as the suite as a whole."""
    from biaseval.metrics.paired import pairwise, split_pair_subset

    outcomes = pl.DataFrame({
        "item_id": ["e1", "e2", "e3", "f1", "f2", "e1", "e2", "e3", "f1", "f2", "g1"],
        "system": ["a"] * 5 + ["b"] * 5 + ["c"],
        "outcome": [True, True, None, True, False, False, True, False, False, False, True],
        "group": ["es"] * 3 + ["fr"] * 2 + ["es"] * 3 + ["fr"] * 2 + ["de"],
    })
    out = pairwise(outcomes, "s")
    assert out.filter(pl.col("n") == 0).height == 0
    assert set(out["system"]) == {"a", "b"}  # c shares no item with a or b: no comparison at all
    rows = {(r["system"], r["subset"], r["metric"]): r for r in out.iter_rows(named=True)}
    # e3 has no outcome for a: the pair shares e1, e2 in es (a right once where b is wrong), f1, f2 in fr
    assert rows[("a", "vs/b", "diff_correct")]["n"] == 4
    assert rows[("a", "vs/b/es", "diff_correct")]["n"] == 2
    assert rows[("a", "vs/b/es", "diff_correct")]["value"] == pytest.approx(0.5)
    assert rows[("a", "vs/b/fr", "diff_correct")]["value"] == pytest.approx(0.5)
    assert rows[("b", "vs/a/fr", "mcnemar_p")]["value"] == 1.0
    assert split_pair_subset("vs/b/es/feminine") == ("b", "es/feminine")
    assert split_pair_subset("vs/b") == ("b", None)


def test_suite_outcome_is_the_headline_definition():
    """The outcome paired tests compare is what each suite's headline share counts: out of English, a
    MiTTenS passage the reader could not read is left out (as its accuracy leaves it out), not wrong;
    into English a passage without a pronoun is wrong (as in its accuracy)."""
    from biaseval.metrics.paired import suite_outcome

    frame = pl.DataFrame({"label": ["female", "male", "unknown", "ambiguous", "male", None],
                          "gold": ["female"] * 6,
                          "reason": ["cues", "cues", None, "tie", "no-reader", None]})
    out = frame.select(xx=suite_outcome("mittens", {"direction": "2xx"}), en=suite_outcome("mittens", {"direction": "2en"}))
    assert out["xx"].to_list() == [True, False, None, False, None, None]
    assert out["en"].to_list() == [True, False, False, False, False, None]


# -- differences of shares: Newcombe's intervals ----------------------------------------------------

def test_a_difference_of_shares_at_the_edges_is_never_a_point():
    from biaseval.metrics.wilson import difference_interval, paired_difference_interval

    low, high = paired_difference_interval(300, 0, 0, 0)  # every sentence right in both versions
    assert low < 0 < high and high - low > 0.02
    low, high = difference_interval(300, 300, 300, 300)
    assert low < 0 < high
    # without correlation (φ = 0) the paired interval is the unpaired one of the same two shares
    a, b, c, d = 25, 25, 25, 25  # p1 = p2 = 0.5, φ = 0
    assert paired_difference_interval(a, b, c, d) == pytest.approx(difference_interval(a + b, 100, a + c, 100))
    # agreeing pairs narrow it
    wide, narrow = paired_difference_interval(25, 25, 25, 25), paired_difference_interval(45, 5, 5, 45)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]


@pytest.mark.parametrize("n, p_first, p_second, rho", [(30, 0.9, 0.8, 0.5), (100, 0.6, 0.5, 0.2), (300, 0.97, 0.95, 0.6)])
def test_newcombes_paired_interval_covers_the_difference(n, p_first, p_second, rho):
    """Simulated pairs with a known difference: the 95% interval holds it in about 95% of samples
    (Newcombe's method 10 is a little conservative; 4,000 samples: ±0.7 points of Monte-Carlo error)."""
    from biaseval.metrics.wilson import paired_difference_interval

    # a 2×2 distribution with these margins and correlation
    cov = rho * np.sqrt(p_first * (1 - p_first) * p_second * (1 - p_second))
    both = p_first * p_second + cov
    cells = np.array([both, p_first - both, p_second - both, 1 - p_first - p_second + both])
    rng = np.random.default_rng(11)
    counts = rng.multinomial(n, cells, size=4000)
    low, high = paired_difference_interval(*counts.T)
    covered = np.mean((low <= p_first - p_second) & (p_first - p_second <= high))
    assert 0.93 <= covered <= 0.99, covered


def test_examples_pick_every_wrong_output_up_to_its_cap_in_a_fixed_order():
    """metrics/examples.py: per system × language × outcome the first CAPS outputs in the hash order; the
    same picks from the whole group as from any split of it (the order is the items', not the rows');
    a group over the limit is looked at through a stride."""
    from biaseval.metrics.examples import CAPS, pick

    n = 600
    frame = pl.DataFrame({
        "system": ["a"] * n, "item_id": [f"s/es/{k:05d}" for k in range(n)], "tgt_lang": ["es"] * n,
        "gold": ["female"] * n, "translation": [f"t{k}" for k in range(n)],
        "label": ["male" if k % 3 == 0 else "female" if k % 3 == 1 else None for k in range(n)],
        "reason": [None] * n, "evidence": [None] * n})
    picked = pick(frame, "otsc", {}, limit=None)
    counts = dict(picked.group_by("outcome").len().iter_rows())
    assert counts == {"wrong": CAPS["wrong"], "right": CAPS["right"]}  # 200 of each: capped; no label, no pick
    assert (picked.filter(pl.col("outcome") == "wrong")["label"] == "male").all()
    halves = pl.concat([pick(frame.head(300), "otsc", {}, limit=None), pick(frame.tail(300), "otsc", {}, limit=None)])
    best = halves.sort("_order").group_by("outcome", maintain_order=True).head(100)
    assert set(best.filter(pl.col("outcome") == "wrong")["item_id"]) == set(picked.filter(pl.col("outcome") == "wrong")["item_id"])
    strided = pick(frame, "otsc", {}, limit=150)  # every 4th row looked at: 50 wrong, 50 right, 50 without a label
    assert dict(strided.group_by("outcome").len().iter_rows()) == {"wrong": 50, "right": 25}
    assert (strided["item_id"].str.slice(5).cast(pl.Int64) % 4 == 0).all()
