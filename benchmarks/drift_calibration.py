"""`python -m benchmarks --only drift`: the monitor's alarm calibrated by simulation, through its own
code (``biaseval/monitor/calibration.py``), and the coverage of the intervals shares get.

Per suite shape, three scenarios of ``RUNS`` comparisons each:

- unchanged, at the configured churn (2%) and threshold: how often an unchanged system alarms;
- unchanged, heavy churn (30% of items flip either way) and no threshold, so that only the tests stand
  between churn and an alarm — and without correction for comparison;
- a real one-way shift of the detectable change the monitor reports: how often it is caught.

Each rate is printed with its binomial 95% interval (Monte-Carlo error) and the bound it is held to:
false alarms at most alpha (5%), detection at least the power (80%). Then the coverage of 95%
intervals for a share of n items, percentile bootstrap against Wilson's, exact over the binomial.
"""

from __future__ import annotations

import time

import numpy as np

RUNS = 1000


def _rate(rate: float, runs: int) -> str:
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(round(rate * runs), runs, method="wilson")
    return f"{100 * rate:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def shapes():
    from biaseval.monitor.calibration import Shape

    return (Shape("otsc", languages=4, occupations=40),  # otsc-en whole: 4 languages, 320 items
            Shape("otsc", languages=1, occupations=40, keep=79),  # French, a sample of 79 (issue 24)
            Shape("winomt", occupations=352, n_boot=200))  # WinoMT-Hindi's size: 704 items


def bench_calibration(runs: int = RUNS, which=None) -> None:
    from biaseval.config import MonitorConfig
    from biaseval.monitor.calibration import alarm_rates

    default = MonitorConfig(store="x")
    for shape in which or shapes():
        start = time.perf_counter()
        quiet = alarm_rates(shape, default, 0.0, runs, seed=1)
        heavy = alarm_rates(shape, default.model_copy(update={"churn": 0.3, "threshold": 0.0}), 0.0, runs, seed=2,
                            corrections=("none", "bh", "holm"))
        change = quiet["detectable_change"]
        caught = alarm_rates(shape, default, change, runs, seed=3)
        seconds = time.perf_counter() - start
        print(f"drift calibration, {shape.describe()}, {quiet['tests']} tests a run, {runs} runs a scenario "
              f"({1000 * seconds / (3 * runs):.0f} ms a comparison):")
        print(f"  unchanged, churn {default.churn:g}, threshold {default.threshold:g}: false alarms BH "
              f"{_rate(quiet['bh'], runs)}, Holm {_rate(quiet['holm'], runs)} (bound: alpha {100 * default.alpha:g}%)")
        print(f"  unchanged, churn 0.3, no threshold: false alarms BH {_rate(heavy['bh'], runs)}, Holm "
              f"{_rate(heavy['holm'], runs)}, uncorrected {_rate(heavy['none'], runs)}; tests with raw p < alpha "
              f"{100 * heavy['raw_below_alpha']:.2f}% (bound: alpha {100 * default.alpha:g}%)")
        print(f"  shift of the detectable change, {100 * change:.1f} pts: caught BH {_rate(caught['bh'], runs)}, "
              f"Holm {_rate(caught['holm'], runs)} (bound: power {100 * default.power:g}%)")
        if change <= default.threshold:  # the threshold decided: the test's own detectable change, no threshold
            print("  " + _tests_own(shape, default, runs))


def _tests_own(shape, monitor, runs: int) -> str:
    from biaseval.monitor.calibration import alarm_rates

    bare = monitor.model_copy(update={"threshold": 0.0})
    change = alarm_rates(shape, bare, 0.0, 1, seed=1)["detectable_change"]
    caught = alarm_rates(shape, bare, change, runs, seed=4)
    return (f"shift of the test's own detectable change, {100 * change:.1f} pts, no threshold: caught BH "
            f"{_rate(caught['bh'], runs)}, Holm {_rate(caught['holm'], runs)} (bound: power {100 * monitor.power:g}%)")


def coverage(n: int, p: np.ndarray, n_boot: int = 1000, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact coverage (over k ~ Binomial(n, p)) of the percentile bootstrap (as the metrics drew it:
    seeded, ``n_boot`` replicates) and of Wilson's interval, for each p."""
    from scipy.stats import binom

    from biaseval.metrics.bootstrap import intervals, resample_rows, rng_for
    from biaseval.metrics.wilson import wilson_interval

    k = np.arange(n + 1)
    counts = np.stack([k, n - k], axis=1)
    reps = resample_rows(counts, n_boot, rng_for(0, "coverage", str(n)))[:, :, 0] / n
    boot = intervals(reps, confidence)
    wilson = wilson_interval(k / n, n, confidence)
    weights = binom.pmf(k[None, :], n, p[:, None])  # (p, k)
    covered = [((low[None, :] <= p[:, None]) & (p[:, None] <= high[None, :])) for low, high in (boot, wilson)]
    return (weights * covered[0]).sum(axis=1), (weights * covered[1]).sum(axis=1)


def bench_coverage() -> None:
    p = np.linspace(0.01, 0.99, 99)
    for n in (5, 19, 50, 200, 1000):
        boot, wilson = coverage(n, p)
        print(f"share intervals, n = {n}: 95% percentile bootstrap covers {100 * boot.mean():.1f}% on average over "
              f"p = 0.01..0.99 (worst {100 * boot.min():.1f}%); Wilson {100 * wilson.mean():.1f}% (worst "
              f"{100 * wilson.min():.1f}%)")


def bench_drift(runs: int = RUNS) -> None:
    bench_calibration(runs)
    bench_coverage()
