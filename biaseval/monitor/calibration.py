"""How often the monitor cries wolf, and how often it catches a real shift: monitoring comparisons
simulated through the code a monitoring run uses — the same metric functions (``gender_shares``,
``per_occupation``, ``winomt``), the same paired tests and changes (``compare.compare_items``,
``compare.metric_changes``) and the same family, correction and decision (``compare.judge``) — on
suites whose labels are drawn, not translated.

Two shapes of suite (``Shape``): otsc-en's (``languages`` × ``occupations`` × her/him items, gold
female/male; p_m, p_f, p_n per subset and occupation: labels tests), optionally a fixed sample of
``keep`` items so that some occupations have one item; and WinoMT's (``occupations`` pro- and as many
anti-stereotypical items, gold alternating; Acc and N per set and overall: outcome and labels tests,
ΔG and ΔS: interval tests from the bootstrap). Each item has a usual label: its gold with probability
``right``, else another. Two runs of an unchanged system differ by churn: each item is, with
probability ``churn``, discordant — one run gives its usual label and the other a different one,
which run is which a coin flip — so nothing moves on average and every test's null hypothesis
holds. A real shift of ``d`` adds ``d · n`` one-way flips: items right in the baseline and left alone
by churn come out wrong now. Seeded: the same arguments give the same rates.
``tests/test_monitor_calibration.py`` runs a few hundred comparisons, ``python -m benchmarks --only
drift`` thousands; the rates in docs/monitoring.md are the benchmark's.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import polars as pl

from biaseval.config import MonitorConfig
from biaseval.metrics.occupations import per_occupation
from biaseval.metrics.proportions import gender_shares
from biaseval.metrics.winomt import winomt
from biaseval.monitor.compare import compare_items, judge, metric_changes
from biaseval.monitor.verdict import SystemDrift

SUITE, SYSTEM = "sim", "sim-system"
LABELS = ("male", "female", "neutral")


@dataclass(frozen=True)
class Shape:
    """The simulated suite (module docstring)."""

    kind: str = "otsc"  # or "winomt"
    languages: int = 2  # otsc
    occupations: int = 40
    right: float = 0.8  # an item's usual label is its gold with this probability
    keep: int | None = None  # a fixed random sample of this many items (as ``monitor.sample``)
    n_boot: int = 20  # bootstrap replicates of the metrics that have no closed-form interval

    @property
    def items(self) -> int:
        whole = self.occupations * 2 * (self.languages if self.kind == "otsc" else 1)
        return whole if self.keep is None else min(self.keep, whole)

    def describe(self) -> str:
        if self.kind == "winomt":
            return f"WinoMT-shaped, {self.items} items (pro/anti)"
        sample = f", a sample of {self.keep}" if self.keep is not None else ""
        return f"otsc-shaped, {self.languages} × {self.occupations} occupations × her/him{sample}: {self.items} items"


def suite(shape: Shape) -> pl.DataFrame:
    """The items: item_id, subset, tgt_lang, occupation, female_share, stereotype, gold, source (``keep``
    of them, the same ones for every comparison)."""
    rows = []
    if shape.kind == "winomt":
        for subset in ("pro", "anti"):
            for o in range(shape.occupations):
                rows.append({"item_id": f"{SUITE}/{subset}/{o:05d}", "subset": subset, "tgt_lang": "en",
                             "occupation": None, "female_share": None, "stereotype": subset,
                             "gold": "female" if o % 2 else "male", "source": f"{subset} {o}"})
    else:
        for lang in (f"l{k}" for k in range(shape.languages)):
            for variant, gold in (("her", "female"), ("him", "male")):
                for o in range(shape.occupations):
                    rows.append({"item_id": f"{SUITE}/{lang}/{variant}/{o:05d}", "subset": f"{lang}/{variant}",
                                 "tgt_lang": lang, "occupation": f"occupation {o}", "female_share": float(o % 101),
                                 "stereotype": None, "gold": gold, "source": f"{variant} {o}"})
    items = pl.DataFrame(rows, schema={"item_id": pl.String, "subset": pl.String, "tgt_lang": pl.String,
                                       "occupation": pl.String, "female_share": pl.Float64, "stereotype": pl.String,
                                       "gold": pl.String, "source": pl.String})
    if shape.keep is not None and shape.keep < items.height:
        chosen = np.sort(np.random.default_rng(0).choice(items.height, shape.keep, replace=False))
        items = items[chosen.tolist()]
    return items


def draw(items: pl.DataFrame, shape: Shape, churn: float, shift: float,
         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(baseline labels, current labels) of one comparison, as indices into ``LABELS``."""
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


def _metrics(items: pl.DataFrame, shape: Shape, runs: dict[str, np.ndarray], seed: int) -> dict[str, pl.DataFrame]:
    """Each run's metrics as scoring computes them for the suite's shape, every run a system of one
    call: p_m, p_f, p_n per subset and per occupation with the correlations (otsc-en), or WinoMT's."""
    labelled = pl.concat([items.with_columns(pl.Series("label", [LABELS[k] for k in labels]), pl.lit(name).alias("system"),
                                             pl.lit(SUITE).alias("suite"))
                          for name, labels in runs.items()])
    if shape.kind == "winomt":
        metrics = winomt(labelled, basis="macro_f1", n_boot=shape.n_boot, seed=seed)
    else:
        metrics = pl.concat([gender_shares(labelled, n_boot=shape.n_boot, seed=seed),
                             per_occupation(labelled, n_boot=shape.n_boot, seed=seed)])
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
                corrections: tuple[str, ...] = ("bh", "holm"), batch: int = 50) -> dict:
    """Of ``runs`` simulated comparisons, the share that raise the alarm under each correction, and
    the share of the family's tests whose raw p is below alpha (each test's own false-positive rate,
    when nothing changed); with the family's size and the detectable change the monitor reports."""
    rng = np.random.default_rng(seed)
    items = suite(shape)
    alarms = dict.fromkeys(corrections, 0)
    tests = raw_hits = raw_total = 0
    detectable = float("nan")
    for start in range(0, runs, batch):
        drawn = [draw(items, shape, monitor.churn, shift, rng) for _ in range(min(batch, runs - start))]
        metrics = _metrics(items, shape, {f"{k}/{which}": labels for k, pair in enumerate(drawn)
                                          for which, labels in zip(("base", "current"), pair)}, seed)
        for k, (base, cur) in enumerate(drawn):
            compared = comparison(items, base, cur, {w: metrics[f"{k}/{w}"] for w in ("base", "current")}, monitor)
            for correction in corrections:
                judged = copy.deepcopy(compared)
                tests = judge([judged], monitor.model_copy(update={"correction": correction}))
                alarms[correction] += judged.status == "drift"
                detectable = judged.suites[0]["detectable_change"]
            raw = _raw_p(compared, monitor)
            raw_hits += sum(p < monitor.alpha for p in raw)
            raw_total += len(raw)
    return {"runs": runs, "items": shape.items, "tests": tests, "detectable_change": detectable,
            "raw_below_alpha": raw_hits / raw_total if raw_total else float("nan"),
            **{c: alarms[c] / runs for c in corrections}}


def _raw_p(compared: SystemDrift, monitor: MonitorConfig) -> list[float]:
    from biaseval.monitor.compare import family

    return list(family([compared], monitor.watch).values())
