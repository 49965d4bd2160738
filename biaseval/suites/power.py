"""How many items a monitor's paired comparison needs, and what n items can detect.

Two runs of one system on the same n items disagree on a share ψ of them: background churn ψ₀ that
flips either way (``monitor.churn``), plus a real one-way shift d, so ψ = ψ₀ + d. The monitor tests
the shift with McNemar's exact test on the discordant items (``biaseval.metrics.paired.mcnemar_p``),
at the level its correction gives each of the run's tests: alpha divided by their number (Holm's
first step and the smallest level Benjamini–Hochberg uses; both reject at least what it rejects), or
alpha itself without a correction. ``mcnemar_power`` is that test's exact power, ``detectable_shift``
the smallest shift n items catch with a given power, ``sample_size`` the items a shift needs.

How many tests: a run tests each group of items a watched metric reports (``item_groups``: ``all``,
each subset, each target language, each occupation in a language), each suite's outcome, and each
watched metric with no paired form (docs/monitoring.md counts them). Before anything runs,
``expected_tests`` counts every group a metric *could* report, and each suite's outcome test, per
monitored system: more than the run makes for the suites biaseval ships (WinoMT reports no
occupation groups, OTSC no language groups), so a plan's detectable change errs large and a sample
sized for ``detect`` errs on the side of more items. The same functions give the detectable change
after the run (``monitor.compare.judge``), from the run's own count.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import polars as pl


def level_per_test(alpha: float, tests: int, correction: str) -> float:
    """The level each of a run's ``tests`` is held to: alpha / tests under a correction, else alpha."""
    return alpha if correction == "none" else alpha / max(tests, 1)


def mcnemar_power(n: int, change: float, level: float, churn: float) -> float:
    """Exact power of the exact McNemar test (``mcnemar_p`` < ``level``) on n paired items when the
    two runs disagree on a share churn + change of them: background churn split evenly between better
    and worse, plus ``change`` one-way. The number of discordant items is Binomial(n, churn + change)
    and, given k of them, the worse ones Binomial(k, (churn / 2 + change) / (churn + change)); the
    test rejects when the smaller side is at most the critical count of k."""
    from scipy.stats import binom

    psi = churn + change
    if n <= 0 or change <= 0 or psi <= 0:
        return 0.0
    k = np.arange(n + 1)
    critical = binom.ppf(level / 2, k, 0.5)  # the smallest c with P(X <= c) >= level / 2 ...
    critical = np.where(2 * binom.cdf(critical, k, 0.5) < level, critical, critical - 1)  # ... or one below
    q = min(1.0, (churn / 2 + change) / psi)
    caught = np.where(critical >= 0, binom.cdf(critical, k, q) + binom.sf(k - critical - 1, k, q), 0.0)
    return float(np.clip((binom.pmf(k, n, min(psi, 1.0)) * caught).sum(), 0.0, 1.0))


@lru_cache(maxsize=4096)
def detectable_shift(n: int, level: float, power: float, churn: float) -> float:
    """The smallest one-way shift of the outcome that the exact McNemar test at ``level`` finds with
    probability ``power`` on n items (``mcnemar_power``, by bisection); NaN when none can."""
    high = 1.0 - churn
    if n <= 0 or mcnemar_power(n, high, level, churn) < power:
        return float("nan")
    low = 0.0
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if mcnemar_power(n, mid, level, churn) < power else (low, mid)
    return high


def sample_size(change: float, level: float, power: float, churn: float, most: int = 10_000_000) -> int:
    """The fewest items on which McNemar's exact test at ``level`` catches a one-way shift of
    ``change`` with probability ``power`` (``most`` when even that many do not)."""
    low, high = 1, 1
    while mcnemar_power(high, change, level, churn) < power:
        if high >= most:
            return most
        low, high = high, min(high * 2, most)
    while low < high:  # the power grows with n but for a sawtooth of a few items: the first n that reaches it
        mid = (low + high) // 2
        low, high = (mid + 1, high) if mcnemar_power(mid, change, level, churn) < power else (low, mid)
    return high


def item_groups(items: pl.DataFrame) -> pl.DataFrame:
    """item_id, group: every subset a metric reports that each item belongs to — ``all``, its own
    subset, its target language (``es``: control's per-language rows, WinoMT's per-language scores;
    not where a subset has that name) and its occupation in that language (``es/occupation/nurse``)."""
    subsets = items["subset"].unique().implode()
    parts = [items.select("item_id", pl.lit("all").alias("group")),
             items.select("item_id", pl.col("subset").alias("group")),
             items.filter(pl.col("tgt_lang").is_not_null() & ~pl.col("tgt_lang").is_in(subsets))
             .select("item_id", pl.col("tgt_lang").alias("group")),
             items.filter(pl.col("tgt_lang").is_not_null() & pl.col("occupation").is_not_null())
             .select("item_id", (pl.col("tgt_lang") + "/occupation/" + pl.col("occupation")).alias("group"))]
    return pl.concat(parts).drop_nulls().unique(maintain_order=True)


def expected_tests(suites_items: list[pl.DataFrame], systems: int) -> int:
    """The tests a monitoring run of ``systems`` systems may make on these suites' items (each suite's
    item table): a labels test per group with items (``item_groups``, whether or not a metric reports
    it) and each suite's outcome test, per system (module docstring)."""
    per_system = sum(item_groups(items)["group"].n_unique() + 1 for items in suites_items if items.height)
    return max(systems, 0) * per_system
