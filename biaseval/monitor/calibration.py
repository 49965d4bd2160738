"""How often the monitor cries wolf, and how often it catches a real shift: monitoring comparisons
simulated through the code a monitoring run uses — the same metric functions (``gender_shares``,
``per_occupation``), the same paired tests and changes (``compare.compare_items``,
``compare.metric_changes``) and the same family, correction and decision (``compare.judge``) — on
suites whose labels are drawn, not translated.

The simulated suite has the shape of otsc-en: ``languages`` × ``occupations`` × her/him items, gold
female/male, each item a usual label (right with probability ``right``, else another). Two runs of
an unchanged system differ by churn: each item is, with probability ``churn``, discordant — one run
gives its usual label and the other a different one, which run is which a coin flip — so nothing
moves on average and every test's null hypothesis holds. A real shift of ``d`` adds ``d · n`` one-way
flips: items right in the baseline and left alone by churn come out wrong now. Seeded: the same
arguments give the same rates. ``tests/test_monitor_calibration.py`` runs a few hundred comparisons;
``python -m benchmarks --only drift`` many more, and the rates in docs/monitoring.md are its.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import polars as pl

from biaseval.config import MonitorConfig
from biaseval.metrics.occupations import per_occupation
from biaseval.metrics.proportions import gender_shares
from biaseval.monitor.compare import compare_items, judge, metric_changes
from biaseval.monitor.verdict import SystemDrift

SUITE, SYSTEM = "sim", "sim-system"
LABELS = ("male", "female", "neutral")


@dataclass(frozen=True)
class Shape:
    """The simulated suite: ``languages`` × ``occupations`` × her/him items."""

    languages: int = 2
    occupations: int = 40
    right: float = 0.8  # an item's usual label is its gold with this probability

    @property
    def items(self) -> int:
        return self.languages * self.occupations * 2


def suite(shape: Shape) -> pl.DataFrame:
    """The items: item_id, subset (``<lang>/her``), tgt_lang, occupation, female_share, gold, source."""
    rows = []
    for lang in (f"l{k}" for k in range(shape.languages)):
        for variant, gold in (("her", "female"), ("him", "male")):
            for o in range(shape.occupations):
                rows.append({"item_id": f"{SUITE}/{lang}/{variant}/{o:05d}", "subset": f"{lang}/{variant}",
                             "tgt_lang": lang, "occupation": f"occupation {o}", "female_share": float(o % 101),
                             "gold": gold, "source": f"{variant} {o}"})
    return pl.DataFrame(rows)


def draw(items: pl.DataFrame, shape: Shape, churn: float, shift: float,
         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(baseline labels, current labels) of one comparison (module docstring)."""
    n = items.height
    gold = np.array([LABELS.index(g) for g in items["gold"]])
    other = (gold + rng.integers(1, len(LABELS), n)) % len(LABELS)
    usual = np.where(rng.random(n) < shape.right, gold, other)
    different = (usual + rng.integers(1, len(LABELS), n)) % len(LABELS)
    discordant = rng.random(n) < churn
    current_differs = rng.random(n) < 0.5
    base = np.where(discordant & ~current_differs, different, usual)
    cur = np.where(discordant & current_differs, different, usual)
    shifted = round(shift * n)
    if shifted:
        candidates = np.flatnonzero(~discordant & (usual == gold))
        chosen = rng.choice(candidates, size=min(shifted, len(candidates)), replace=False)
        cur[chosen] = (gold[chosen] + rng.integers(1, len(LABELS), len(chosen))) % len(LABELS)
    return base, cur


def _metrics(items: pl.DataFrame, runs: dict[str, np.ndarray], n_boot: int, seed: int) -> dict[str, pl.DataFrame]:
    """Each run's metrics as scoring computes them for otsc-en (p_m, p_f, p_n per subset and per
    occupation, the correlations), every run a system of one call."""
    labelled = pl.concat([items.with_columns(pl.Series("label", [LABELS[k] for k in labels]), pl.lit(name).alias("system"),
                                             pl.lit(SUITE).alias("suite"))
                          for name, labels in runs.items()])
    metrics = pl.concat([gender_shares(labelled, n_boot=n_boot, seed=seed),
                         per_occupation(labelled, n_boot=n_boot, seed=seed)])
    return {name: part for (name,), part in metrics.partition_by("system", as_dict=True).items()}


def comparison(items: pl.DataFrame, base: np.ndarray, cur: np.ndarray, metrics: dict[str, pl.DataFrame],
               monitor: MonitorConfig) -> SystemDrift:
    """One system compared with its baseline as ``run.run_monitor`` does it (not yet judged);
    ``metrics``: the runs' metrics, "base" and "current"."""
    both = items.with_columns(pl.Series("label", [LABELS[k] for k in cur]),
                              pl.Series("label_base", [LABELS[k] for k in base]),
                              pl.col("source").alias("translation"), pl.col("source").alias("translation_base"))
    info, flips, tests = compare_items(both, SUITE, monitor)
    changes = metric_changes(metrics["current"], metrics["base"], tests)
    return SystemDrift(SYSTEM, "ok", changes=changes, suites=[info], flips=flips)


def alarm_rates(shape: Shape, monitor: MonitorConfig, shift: float, runs: int, seed: int,
                corrections: tuple[str, ...] = ("bh", "holm"), n_boot: int = 20, batch: int = 50) -> dict:
    """Share of ``runs`` simulated comparisons that raise the alarm, per correction; with the
    family's size and the detectable change the monitor reported (the first run's)."""
    rng = np.random.default_rng(seed)
    items = suite(shape)
    alarms = dict.fromkeys(corrections, 0)
    tests, detectable = 0, float("nan")
    for start in range(0, runs, batch):
        drawn = [draw(items, shape, monitor.churn, shift, rng) for _ in range(min(batch, runs - start))]
        metrics = _metrics(items, {f"{k}/{which}": labels for k, pair in enumerate(drawn)
                                   for which, labels in zip(("base", "current"), pair)}, n_boot, seed)
        for k, (base, cur) in enumerate(drawn):
            compared = comparison(items, base, cur, {w: metrics[f"{k}/{w}"] for w in ("base", "current")}, monitor)
            for correction in corrections:
                judged = copy.deepcopy(compared)
                tests = judge([judged], monitor.model_copy(update={"correction": correction}))
                alarms[correction] += judged.status == "drift"
                detectable = judged.suites[0]["detectable_change"]
    return {"runs": runs, "items": shape.items, "tests": tests, "detectable_change": detectable,
            **{c: alarms[c] / runs for c in corrections}}
