"""The tests of a monitoring run and their correction for multiplicity (pure functions).

One run makes many tests. Per system × suite × subset group of items that both runs translated
(docs/monitoring.md, "The statistics"):

- ``labels``: the items' labels in the two runs, paired — marginal homogeneity (Stuart–Maxwell; with
  one kind of flip, McNemar), behind every metric that is a function of the group's label
  distribution (``LABEL_METRICS``: p_m, p_f, p_n, N, ...): a move from male to female changes p_m
  and p_f at once, and is one change, not two;
- ``outcome``: the items' binary outcome (right, or neutral for gender-neutral sets), McNemar's
  exact test, behind Acc and the suite's alarm;

and every other watched metric (ΔG, ΔS, TGBI, ...) by the Wald p of its change's interval, which is 1
when the interval carries no information (zero width). The run's family is every distinct test
behind a watched metric, corrected together (``adjust``): Benjamini–Hochberg (``bh``, false
discovery rate), Holm (``holm``, family-wise error) or ``none``.

Exact where counts are small: McNemar always (the binomial on the discordant pairs); marginal
homogeneity over more than two labels by enumerating every way the discordant items could have
flipped (``EXACT_LIMIT``), else Stuart–Maxwell's chi-square. Maintained implementations where they
fit: scipy's binomial and chi-square distributions. Computed here, for measured reasons, and checked
against statsmodels in tests/test_monitor_paired.py: Stuart–Maxwell's statistic (statsmodels'
``homogeneity`` gives NaN whenever a label never flips, which is common, and p = 0 below 1e-16) and
the corrections (``adjust``).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import polars as pl

from biaseval.metrics.paired import adjust, mcnemar_p  # noqa: F401 - adjust: monitor's correction, kept here for its callers

# metrics that are functions of a group's label distribution: tested by the group's labels test
LABEL_METRICS = frozenset({"p_m", "p_f", "p_n", "neutral", "unknown", "P", "control_acc", "control_unknown"})
OUTCOME_METRICS = frozenset({"acc"})  # the share of items whose outcome is right
# the exact test enumerates the product over kinds of flip of (flips of that kind + 1) outcomes; above
# this many it is Stuart–Maxwell's chi-square (by then each kind has tens of flips or more)
EXACT_LIMIT = 1 << 18


def _pairs(flows: dict[tuple[str, str], int]) -> dict[tuple[str, str], tuple[int, int]]:
    """Discordant items by kind of flip: (a, b) with a < b -> (items a -> b, items b -> a)."""
    pairs: dict[tuple[str, str], list[int]] = {}
    for (before, after), n in flows.items():
        if before != after and n:
            key = (before, after) if before < after else (after, before)
            pairs.setdefault(key, [0, 0])[0 if before < after else 1] += int(n)
    return {k: (f, b) for k, (f, b) in pairs.items()}


def marginal_homogeneity_p(flows: dict[tuple[str, str], int]) -> float:
    """p of "the two runs' label distributions on these items are the same", from the items that
    flipped (``flows``: (label before, label after) -> items; items that kept their label do not
    enter). One kind of flip (male <-> female, say): McNemar's exact test. More: Stuart–Maxwell's
    statistic dᵀ S⁺ d (d: the flows out of each label minus the flows in; S: its covariance under no
    change), whose distribution is enumerated exactly when the flips are few — each discordant item
    as likely to have gone either way, the flips of each kind Binomial(flips, 1/2) — and is
    chi-square with rank(S) degrees of freedom when they are many (``EXACT_LIMIT``)."""
    pairs = _pairs(flows)
    if not pairs:
        return 1.0
    if len(pairs) == 1:
        (forth, back), = pairs.values()
        return mcnemar_p(forth, back)
    labels = sorted({label for pair in pairs for label in pair})
    index = {label: k for k, label in enumerate(labels)}
    incidence = np.zeros((len(labels), len(pairs)))  # d = incidence @ x, x: forth − back per kind
    for e, (a, b) in enumerate(pairs):
        incidence[index[a], e], incidence[index[b], e] = 1.0, -1.0
    totals = np.array([f + b for f, b in pairs.values()], dtype=float)
    observed = np.array([f - b for f, b in pairs.values()], dtype=float)
    s = incidence @ np.diag(totals) @ incidence.T  # S_ii = flips touching i, S_ij = −(n_ij + n_ji)
    form = incidence.T @ np.linalg.pinv(s) @ incidence  # the statistic as a quadratic form in x
    statistic = float(observed @ form @ observed)
    if math.prod(int(t) + 1 for t in totals) <= EXACT_LIMIT:
        return _exact_p(totals.astype(int), form, statistic)
    from scipy.stats import chi2

    return float(chi2.sf(statistic, int(np.linalg.matrix_rank(s))))


def _exact_p(totals: np.ndarray, form: np.ndarray, statistic: float) -> float:
    """P(statistic >= observed) when each kind's flips split Binomial(total, 1/2) ways, independently."""
    from scipy.special import gammaln

    values = [np.arange(-t, t + 1, 2, dtype=float) for t in totals]  # forth − back
    weights = []
    for t in totals:  # Binomial(t, 1/2) probabilities (a ufunc: scipy's distribution objects cost more)
        k = np.arange(t + 1)
        weights.append(np.exp(gammaln(t + 1) - gammaln(k + 1) - gammaln(t - k + 1) - t * math.log(2)))
    grid = np.stack(np.meshgrid(*values, indexing="ij"), axis=-1).reshape(-1, len(totals))
    weight = np.ones(1)
    for w in weights:
        weight = np.multiply.outer(weight, w).ravel()
    statistics = ((grid @ form) * grid).sum(axis=1)
    at_least = statistics >= statistic - 1e-9 * max(1.0, statistic)  # ties in exact arithmetic count
    return float(min(1.0, weight[at_least].sum()))


def stuart_maxwell_p(before: list[str], after: list[str]) -> float:
    """``marginal_homogeneity_p`` of two paired lists of labels (the same items in two runs)."""
    flows: dict[tuple[str, str], int] = {}
    for b, a in zip(before, after):
        flows[(b, a)] = flows.get((b, a), 0) + 1
    return marginal_homogeneity_p(flows)


def label_tests(flows: pl.DataFrame) -> dict[str, float]:
    """Per group, the p of its labels test (``marginal_homogeneity_p``), from ``flows``: group, before,
    after, n — the items of each group whose label went from ``before`` to ``after`` (before !=
    after). A group with one kind of flip, the common case, is tested with the others in one
    vectorised McNemar; groups absent from ``flows`` had no flip (p = 1)."""
    if flows.height == 0:
        return {}
    forth = pl.col("before") < pl.col("after")
    pairs = (flows.with_columns(pl.when(forth).then(pl.col("before")).otherwise(pl.col("after")).alias("low"),
                                pl.when(forth).then(pl.col("after")).otherwise(pl.col("before")).alias("high"),
                                forth.alias("forth"))
             .group_by("group", "low", "high")
             .agg(pl.col("n").filter(pl.col("forth")).sum().alias("f"), pl.col("n").filter(~pl.col("forth")).sum().alias("b")))
    kinds = pairs.group_by("group").len()
    single = pairs.join(kinds.filter(pl.col("len") == 1), on="group", how="semi")
    out = dict(zip(single["group"].to_list(), np.atleast_1d(mcnemar_p(single["f"].to_numpy(), single["b"].to_numpy())).tolist()))
    several: dict[str, dict[tuple[str, str], int]] = {}
    for group, low, high, f, b in pairs.join(kinds.filter(pl.col("len") > 1), on="group", how="semi").select(
            "group", "low", "high", "f", "b").iter_rows():
        flows_of = several.setdefault(group, {})
        flows_of[(low, high)], flows_of[(high, low)] = f, b
    out.update((group, marginal_homogeneity_p(flows_of)) for group, flows_of in several.items())
    return out


def wald_p(change, low, high, confidence: float = 0.95):
    """Two-sided p of a change from its interval: the standard error is read off the half of the
    interval that faces 0, so the p is below 1 − confidence exactly when the interval excludes 0. A
    half of zero width carries no information: p = 1 (never 0: a bootstrap of a degenerate set, say
    every item right, has no spread, and that is not certainty). NaN where any input is missing;
    scalars give a float, arrays an array."""
    from scipy.special import ndtr

    change, low, high = (np.asarray(np.where(np.equal(x, None), np.nan, x), dtype=float) for x in (change, low, high))
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    half = np.where(change >= 0, change - low, high - change)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(half > 0, 2 * ndtr(-np.abs(change) * z / np.where(half > 0, half, 1.0)), 1.0)
    p = np.where(np.isnan(change) | np.isnan(low) | np.isnan(high), np.nan, p)
    return float(p) if p.ndim == 0 else p
