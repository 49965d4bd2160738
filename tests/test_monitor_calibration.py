"""The monitor's alarm, calibrated by simulation through its own code (``monitor/calibration.py``:
the metric functions, compare_items, metric_changes, judge): an unchanged system raises it at most
alpha of the time under BH and under Holm, and a shift of the detectable change the monitor reports
is caught at least with the configured power. Seeded, so deterministic; 100 comparisons per case, so
each rate is checked against a 99% binomial bound: a false-alarm rate of alpha would give at most
``ABOVE`` alarms in 99% of such simulations, a detection rate of the power at least ``BELOW``.
``python -m benchmarks --only drift`` runs thousands (docs/monitoring.md quotes it)."""

from __future__ import annotations

import pytest
from scipy.stats import binom

from biaseval.config import MonitorConfig
from biaseval.monitor.calibration import Shape, alarm_rates

pytestmark = pytest.mark.slow  # about 10 s of CPU: 700 comparisons through the monitor's code

RUNS = 100
ALPHA, POWER = 0.05, 0.8
ABOVE = binom.ppf(0.99, RUNS, ALPHA) / RUNS  # 0.10
BELOW = binom.ppf(0.01, RUNS, POWER) / RUNS  # 0.70
SHAPES = {
    # otsc-en into French, a sample of 79 of its 80 items: an occupation has one item (issue 24's first finding)
    "otsc-sample": Shape("otsc", languages=1, occupations=40, keep=79),
    # Acc and N (paired), ΔG and ΔS (interval tests on the bootstrap)
    "winomt": Shape("winomt", occupations=100, n_boot=100),
}


@pytest.mark.parametrize("name", SHAPES)
def test_an_unchanged_system_raises_the_alarm_at_most_alpha_of_the_time(name):
    """Heavy churn (30% of items flip either way) and no threshold, so only the tests stand between
    churn and an alarm: corrected, at most alpha; uncorrected, the family cries wolf — the simulation
    sees a false alarm when there is one."""
    monitor = MonitorConfig(store="x", alpha=ALPHA, threshold=0.0, churn=0.3)
    rates = alarm_rates(SHAPES[name], monitor, 0.0, RUNS, seed=3, corrections=("none", "bh", "holm"))
    assert rates["bh"] <= ABOVE and rates["holm"] <= ABOVE, rates
    assert rates["raw_below_alpha"] <= ALPHA, rates  # each test on its own: at most alpha
    assert rates["none"] > ALPHA, rates


@pytest.mark.parametrize("name", SHAPES)
def test_the_detectable_change_is_caught_with_the_configured_power(name):
    monitor = MonitorConfig(store="x", alpha=ALPHA, power=POWER)  # churn 0.02, threshold 0.05
    quiet = alarm_rates(SHAPES[name], monitor, 0.0, 1, seed=4)
    change = quiet["detectable_change"]  # the test's, or the threshold where that is larger
    rates = alarm_rates(SHAPES[name], monitor, change, RUNS, seed=5)
    assert rates["bh"] >= BELOW and rates["holm"] >= BELOW, (change, rates)
    half = alarm_rates(SHAPES[name], monitor.model_copy(update={"threshold": 0.0}), change / 2, 40, seed=6)
    assert half["bh"] < POWER and half["holm"] < POWER, (change, half)  # the number means something
