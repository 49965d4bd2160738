"""The fast interval paths against the plain ones: ``MetricRows`` blocks against one percentile call
over every bootstrapped row and statsmodels' Wilson interval for every share, and
``per_occupation``'s counting in polars against counting row by row in Python — on inputs not shaped
for the fast paths (NaN rows, one replicate, huge counts, Unicode names, nulls, labels outside the
three classes)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from biaseval.metrics.bootstrap import intervals, resample_rows, rng_for
from biaseval.metrics.occupations import _rank, _share_ranks, pearson, per_occupation
from biaseval.metrics.proportions import CLASS_INDEX, gender_shares
from biaseval.metrics.tidy import MetricRows


def float_shares(counts: np.ndarray, n: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n[:, None] > 0, counts / np.maximum(n, 1)[:, None], np.nan)


def wilson(counts, n, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """statsmodels' Wilson interval (the reference), NaN for an empty set."""
    from statsmodels.stats.proportion import proportion_confint

    counts, n = np.asarray(counts, dtype=float), np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        low, high = proportion_confint(counts, np.where(n > 0, n, 1), alpha=1 - confidence, method="wilson")
    return np.where(n > 0, low, np.nan), np.where(n > 0, high, np.nan)


def test_metric_rows_blocks_give_one_percentile_call_over_all_rows():
    """Float rows with undefined replicates (nanpercentile) mixed with share rows (Wilson's
    interval), in any order."""
    rng = np.random.default_rng(3)
    n = np.array([4, 0, 30])
    counts = rng.binomial(n[:, None], 0.3, size=(3, 50))  # only their shape matters now
    with_nan = rng.uniform(size=(2, 50))
    with_nan[0, ::7] = np.nan
    rows = MetricRows(seed=3)
    rows.add("s", "x", "a", "m1", 0.1, 5, with_nan[0])
    rows.add_shares("s", "x", ["b", "c", "d"], "p", [0.25, np.nan, 0.3], n)
    rows.add("s", "x", "e", "m2", 0.4, 6, with_nan[1])
    frame = rows.frame(0.9)
    low, high = intervals(np.vstack([with_nan[:1], float_shares(counts, n), with_nan[1:]]), 0.9)
    share_low, share_high = wilson([1, 0, 9], n, 0.9)
    low[1:4], high[1:4] = share_low, share_high
    assert frame["subset"].to_list() == ["a", "b", "c", "d", "e"]
    assert np.allclose(frame["ci_low"].to_numpy(), low, rtol=1e-12, atol=1e-15, equal_nan=True)
    assert np.allclose(frame["ci_high"].to_numpy(), high, rtol=1e-12, atol=1e-15, equal_nan=True)
    assert frame["n"].to_list() == [5, 4, 0, 30, 6]
    # each row's record of how its interval was made
    assert frame["interval"].to_list() == ["bootstrap", "wilson", "wilson", "wilson", "bootstrap"]
    assert frame["resamples"].to_list() == [50, None, None, None, 50]
    assert frame["seed"].to_list() == [3, None, None, None, 3]
    with pytest.raises(ValueError, match="seed"):
        MetricRows().add("s", "x", "a", "m1", 0.1, 5, with_nan[0])  # replicates without their seed: refused


def plain_per_occupation(labelled: pl.DataFrame, n_boot: int, seed: int, confidence: float = 0.95) -> pl.DataFrame:
    """The reference: counted row by row in Python; p_m and p_f with statsmodels' Wilson interval, the
    correlations' replicates from float shares, one percentile call."""
    groups: dict = {}
    for row in labelled.sort("female_share", nulls_last=True).iter_rows(named=True):
        if row["occupation"] is None or row["female_share"] is None:
            continue
        share, counts = groups.setdefault((row["system"], row["suite"], row["tgt_lang"]), {}).setdefault(
            row["occupation"], (row["female_share"], np.zeros(3, np.int64)))
        if row["label"] is not None:
            counts[CLASS_INDEX[row["label"]]] += 1
    out, replicates, shares = [], [], []
    for (system, suite, tgt), occupations in sorted(groups.items()):
        names = sorted(occupations)
        x = np.array([occupations[o][0] for o in names], float)
        counts = np.array([occupations[o][1] for o in names])
        n = counts.sum(axis=1)
        point = float_shares(counts, n)
        for k, metric in ((0, "p_m"), (1, "p_f")):
            low, high = wilson(counts[:, k], n, confidence)
            for i, name in enumerate(names):
                out.append((system, suite, f"{tgt}/occupation/{name}", metric, point[i, k], int(n[i])))
                shares.append((low[i], high[i]))
        if len(names) >= 3:
            reps = resample_rows(counts, n_boot, rng_for(seed, system, suite, tgt, "occupations"))
            y_boot = float_shares(reps[:, :, 1], n).T
            out.append((system, suite, tgt, "r_female_share", float(pearson(x, point[None, :, 1])[0]), len(names)))
            replicates.append(pearson(x, y_boot))
            rx = _rank(x[None, :])[0]
            out.append((system, suite, tgt, "rho_female_share", float(pearson(rx, _rank(point[None, :, 1]))[0]),
                        len(names)))
            replicates.append(pearson(rx, _rank(y_boot)))
    booted, shared = iter(zip(*intervals(np.stack(replicates), confidence))), iter(shares)
    bounds = [next(shared) if r[3] in ("p_m", "p_f") else next(booted) for r in out]
    return pl.DataFrame([(*r, lo, hi) for r, (lo, hi) in zip(out, bounds)], orient="row",
                        schema=["system", "suite", "subset", "metric", "value", "n", "ci_low", "ci_high"])


def test_per_occupation_equals_row_by_row_counting():
    rng = np.random.default_rng(5)
    size = 3000
    occupations = ["Ärztin", "nurse", "ingeniero/a", "名前", "a, b", "", "x" * 300, None, "pilot", "chef"]
    labels = ["male", "female", "neutral", "ambiguous", "unknown", None]
    shares = {o: float(k * 11 % 101) for k, o in enumerate(occupations)}
    occupation = rng.choice(len(occupations), size)
    labelled = pl.DataFrame({
        "system": rng.choice(["sys-a", "sys-β"], size).tolist(),
        "suite": "otsc",
        "tgt_lang": rng.choice(["es", "de", "hi"], size).tolist(),
        "occupation": [occupations[k] for k in occupation],
        # a share missing on some rows, and one occupation whose rows disagree on its share
        "female_share": [None if k % 97 == 0 else (shares[occupations[o]] + (k % 2) * (occupations[o] == "chef"))
                         for k, o in enumerate(occupation)],
        "label": [labels[k] for k in rng.choice(len(labels), size, p=[0.3, 0.3, 0.2, 0.08, 0.07, 0.05])],
    })
    fast = per_occupation(labelled, n_boot=300, seed=4)
    plain = plain_per_occupation(labelled, n_boot=300, seed=4)
    assert fast.select(plain.columns).drop("ci_low", "ci_high").equals(plain.drop("ci_low", "ci_high"))
    for column in ("ci_low", "ci_high"):  # Wilson's closed form here and in statsmodels: equal to rounding
        assert np.allclose(fast[column].to_numpy(), plain[column].to_numpy(), rtol=1e-12, atol=1e-15, equal_nan=True)
    # counted frames (a ``count`` column, as scoring passes them) give the same rows
    counted = labelled.group_by(labelled.columns).len("count")
    assert per_occupation(counted, n_boot=300, seed=4).equals(fast)


def test_per_occupation_names_a_label_outside_the_classes():
    labelled = pl.DataFrame({"system": "s", "suite": "x", "tgt_lang": "es", "occupation": ["a", "b"],
                             "female_share": [1.0, 2.0], "label": ["male", "mascuIine"]})
    with pytest.raises(Exception, match="mascuIine"):
        per_occupation(labelled, n_boot=10)


def test_gender_shares_are_counted_with_wilson_intervals_per_row():
    rng = np.random.default_rng(9)
    size = 2000
    labelled = pl.DataFrame({"system": rng.choice(["a", "b"], size).tolist(), "suite": "x",
                             "subset": rng.choice(["s1", "s2", "ß/ü", "empty"], size).tolist(),
                             "label": rng.choice(["male", "female", "neutral", "ambiguous", None], size).tolist()})
    labelled = labelled.with_columns(pl.when(pl.col("subset") == "empty").then(None).otherwise(pl.col("label")).alias("label"))
    got = gender_shares(labelled, n_boot=250, seed=2)
    for system in ("a", "b"):  # all of a system's sets are drawn at once, in subset order
        subsets = sorted(set(labelled.filter(pl.col("system") == system)["subset"]))
        counts = np.zeros((len(subsets), 3), np.int64)
        for row in labelled.filter(pl.col("system") == system).iter_rows(named=True):
            if row["label"] is not None:
                counts[subsets.index(row["subset"]), CLASS_INDEX[row["label"]]] += 1
        n = counts.sum(axis=1)
        for k, metric in enumerate(("p_m", "p_f", "p_n")):
            low, high = wilson(counts[:, k], n)
            for i, subset in enumerate(subsets):
                row = got.filter((pl.col("system") == system) & (pl.col("subset") == subset) & (pl.col("metric") == metric))
                value = counts[i, k] / n[i] if n[i] else np.nan
                assert np.allclose(row.select("value", "ci_low", "ci_high").row(0), [value, low[i], high[i]],
                                   rtol=1e-12, atol=1e-15, equal_nan=True)
    assert got.filter(pl.col("subset") == "empty")["n"].to_list() == [0] * 6
    assert got["metric"].to_list()[:3] == ["p_m", "p_f", "p_n"]


def plain_rank(row: list[float]) -> list[float]:
    """0-based ranks, ties sharing their mean rank; NaNs after the numbers, each on its own (in order)."""
    order = sorted(range(len(row)), key=lambda i: (np.isnan(row[i]), 0.0 if np.isnan(row[i]) else row[i], i))
    ranks = [0.0] * len(row)
    k = 0
    while k < len(order):
        end = k
        while (end + 1 < len(order) and not np.isnan(row[order[k]])
               and row[order[end + 1]] == row[order[k]]):
            end += 1
        for j in range(k, end + 1):
            ranks[order[j]] = (k + end) / 2
        k = end + 1
    return ranks


def test_rank_equals_plain_ranking_with_ties_and_nan():
    rng = np.random.default_rng(8)
    for _ in range(300):
        rows, n = int(rng.integers(1, 5)), int(rng.integers(1, 30))
        values = rng.integers(0, int(rng.integers(1, 6)), size=(rows, n)) / 3
        values[rng.random((rows, n)) < 0.15] = np.nan
        values[rng.random((rows, n)) < 0.1] = -0.0  # equal to 0.0
        expected = np.array([plain_rank(list(r)) for r in values])
        assert np.array_equal(_rank(values), expected), values


def test_share_ranks_by_counting_equal_plain_ranking():
    """Ranks of replicate shares count / n by counting: the plain ranks, ties of equal fractions
    (1/2 and 2/4) included; None (left to _rank) where a set is empty or the fractions are many."""
    rng = np.random.default_rng(9)
    for _ in range(300):
        rows, occupations = int(rng.integers(1, 6)), int(rng.integers(1, 25))
        n = rng.integers(1, int(rng.integers(2, 9)), size=occupations)
        counts = np.minimum(rng.integers(0, 9, size=(rows, occupations)), n[None, :])
        expected = np.array([plain_rank(list(r)) for r in counts / n[None, :]])
        assert np.array_equal(_share_ranks(counts, n), expected), (counts, n)
    assert _share_ranks(np.zeros((2, 3), dtype=int), np.array([3, 0, 2])) is None
    assert _share_ranks(np.zeros((1, 2), dtype=int), np.array([5000, 4999])) is None


def test_winomt_metrics_on_replicate_tables_equal_plain_sums():
    """The WinoMT metrics add their few confusion cells by hand: the same numbers as numpy's sums."""
    from biaseval.metrics.winomt import all_metrics, set_metrics

    rng = np.random.default_rng(12)
    strata = rng.integers(0, 6, size=(4, 50, 3, 3, 4))
    strata[0] = 0  # an empty table: undefined shares, F1 0
    strata[1, :, 1] = 0  # no anti items

    def plain_f1(conf, k):
        tp = conf[..., k, k]
        denom = 2 * tp + (conf[..., :, k].sum(axis=-1) - tp) + (conf[..., k, :].sum(axis=-1) - tp)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)

    def plain_share(conf, part):
        total = conf.sum(axis=(-1, -2))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, part / np.maximum(total, 1), np.nan)

    conf = strata.sum(axis=-3)
    acc = lambda c: plain_share(c, c[..., 0, 0] + c[..., 1, 1] + c[..., 2, 2])  # noqa: E731
    expected = {"acc": acc(conf), "f1_male": plain_f1(conf, 0), "f1_female": plain_f1(conf, 1),
                "delta_g": plain_f1(conf, 0) - plain_f1(conf, 1),
                "delta_s": acc(strata[..., 0, :, :]) - acc(strata[..., 1, :, :]),
                "neutral": plain_share(conf, conf[..., :, 2].sum(axis=-1)),
                "unknown": plain_share(conf, conf[..., :, 3].sum(axis=-1))}
    got = all_metrics(strata, "acc")
    assert set(got) == set(expected)
    for name in expected:
        assert np.array_equal(got[name], expected[name], equal_nan=True), name
    pro = strata[..., 0, :, :]
    macro = set_metrics(pro)["macro_f1"]
    assert np.array_equal(macro, (plain_f1(pro, 0) + plain_f1(pro, 1)) / 2)
    assert np.array_equal(all_metrics(strata, "macro_f1")["delta_s"], macro - set_metrics(strata[..., 1, :, :])["macro_f1"])


SHARES = {"p_m", "p_f", "p_n", "acc", "neutral", "unknown", "control_acc", "control_unknown", "control_unasked"}


@pytest.mark.property
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["pro", "anti"]), st.sampled_from(["o1", "o2", "o3"]),
                          st.sampled_from(["male", "female"]),
                          st.sampled_from(["male", "female", "neutral", "ambiguous", "unknown", None])),
                min_size=1, max_size=40))
def test_no_share_of_any_scorer_has_a_point_interval(rows):
    """Whatever the labels — all one class, one item per set — every share the scorers report has an
    interval wider than a point that holds it (Wilson's), where it has items at all."""
    from biaseval.metrics.control import control, control_counts
    from biaseval.metrics.winomt import winomt

    labelled = pl.DataFrame(rows, schema={c: pl.String for c in ("system", "subset", "occupation", "gold", "label")},
                            orient="row").with_columns(
        pl.lit("x").alias("suite"), pl.col("subset").alias("stereotype"), pl.lit("es").alias("tgt_lang"),
        pl.lit(50.0).alias("female_share"))
    frames = [gender_shares(labelled, n_boot=5), per_occupation(labelled, n_boot=5), winomt(labelled, n_boot=5),
              control(control_counts(labelled), {"a": "female"}, {"a": "b"})]
    shares = pl.concat(frames).filter(pl.col("metric").is_in(list(SHARES)) & (pl.col("n") > 0))
    assert (shares["ci_high"] > shares["ci_low"]).all()
    assert ((shares["ci_low"] <= shares["value"]) & (shares["value"] <= shares["ci_high"])).all()
