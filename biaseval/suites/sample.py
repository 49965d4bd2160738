"""A suite narrowed to a fixed, seeded, stratified sample of its items, and how many items a paired
comparison needs.

How many: two runs of one system on the same n items differ on a share ψ of them (discordant pairs);
a real shift of d adds d one-way flips to a background churn ψ₀ that flips either way, so ψ = ψ₀ + d.
McNemar's statistic (b − c)/√(b + c) is about normal: under no change b − c has mean 0 and variance
nψ; under the shift mean nd and variance n(ψ − d²). A two-sided test at α has power 1 − β when

    √n · d = z₁₋α/₂ · √ψ + z₁₋β · √(ψ − d²)

which gives the sample size for a change d, and, solved for d at a given n, the smallest change the
run detects (``detectable_change``).

Which items: a sample of n is spread over the strata (target language × subset × occupation) in
proportion to their sizes (largest remainders), drawn in each stratum with a seeded generator, and
kept in the suite's order. The same suite data, size and seed give the same items in every run, so
two monitoring runs stay paired item by item.
"""

from __future__ import annotations

import hashlib
import math
from statistics import NormalDist

import numpy as np
import polars as pl

from biaseval.suites.base import SuiteData

STRATA = ("tgt_lang", "subset", "occupation")
GAP = 4096  # items between two sampled ones beyond which they are read apart


def _z(q: float) -> float:
    return NormalDist().inv_cdf(q)


def paired_power(n: int, change: float, alpha: float, churn: float) -> float:
    """Power of the two-sided McNemar test on n items for a one-way shift ``change`` over ``churn``."""
    psi = churn + change
    if n <= 0 or change <= 0 or psi <= change * change:
        return 0.0 if change <= 0 or n <= 0 else 1.0
    return NormalDist().cdf((math.sqrt(n) * change - _z(1 - alpha / 2) * math.sqrt(psi)) / math.sqrt(psi - change ** 2))


def paired_sample_size(change: float, alpha: float, power: float, churn: float) -> int:
    """Items needed to detect a shift of ``change`` with the given power (the formula above)."""
    psi = churn + change
    root = _z(1 - alpha / 2) * math.sqrt(psi) + _z(power) * math.sqrt(max(psi - change ** 2, 0.0))
    return math.ceil((root / change) ** 2)


def detectable_change(n: int, alpha: float, power: float, churn: float) -> float:
    """The smallest shift that n paired items detect with the given power (bisection on the power)."""
    if n <= 0:
        return float("nan")
    low, high = 0.0, 1.0 - churn
    if paired_power(n, high, alpha, churn) < power:
        return float("nan")
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if paired_power(n, mid, alpha, churn) < power else (low, mid)
    return high


def allocate(sizes: list[int], total: int) -> list[int]:
    """``total`` spread over groups in proportion to their sizes: floors, then one more to each of the
    largest remainders (ties to the earlier group)."""
    whole = sum(sizes)
    quota = [s * total / whole for s in sizes]
    take = [math.floor(q) for q in quota]
    order = sorted(range(len(sizes)), key=lambda k: (-(quota[k] - take[k]), k))
    for k in order[:total - sum(take)]:
        take[k] += 1
    return take


def stratified_indices(strata: pl.DataFrame, size: int, seed: int) -> np.ndarray:
    """Sorted row indices of a proportional stratified sample of ``size`` rows of ``strata``. Its
    columns are nested levels (e.g. target, subset, occupation): the sample is spread over the first
    level's groups, then within each over the next level's, so every level keeps its proportions to
    within one item; rows are drawn at random (seeded) within the innermost groups."""
    if size >= strata.height:
        return np.arange(strata.height)
    rng = np.random.default_rng(seed)
    chosen = []

    def spread(rows: pl.DataFrame, n: int, level: int) -> None:
        if level == len(strata.columns):
            chosen.append(rng.choice(rows["_i"].to_numpy(), size=n, replace=False))
            return
        groups = rows.partition_by(strata.columns[level], maintain_order=True)
        for group, k in zip(groups, allocate([g.height for g in groups], n)):
            if k:
                spread(group, k, level + 1)

    spread(strata.with_row_index("_i"), size, 0)
    return np.sort(np.concatenate(chosen))


class SampledData(SuiteData):
    """``inner`` seen through a fixed set of its item indices (in the suite's order)."""

    def __init__(self, inner: SuiteData, indices: np.ndarray, seed: int):
        self.inner = inner
        self.indices = np.asarray(indices, dtype=np.int64)
        self.suite = inner.suite
        self.size = len(self.indices)
        self.commit = inner.commit
        self.full_size = inner.size
        digest = hashlib.sha256(self.indices.tobytes()).hexdigest()[:12]
        self.fingerprint = hashlib.sha256(f"{inner.fingerprint}|sample:{seed}:{digest}".encode()).hexdigest()[:24]

    def slice(self, start: int, stop: int) -> pl.DataFrame:
        wanted = self.indices[start:stop]
        if len(wanted) == 0:
            return self.inner.slice(0, 0)
        # runs of nearby items read as one span each: a sparse sample of a generated suite does not
        # generate the whole suite
        cuts = np.flatnonzero(np.diff(wanted) > GAP) + 1
        parts = []
        for run in np.split(wanted, cuts):
            first = int(run[0])
            parts.append(self.inner.slice(first, int(run[-1]) + 1)[(run - first).tolist()])
        return pl.concat(parts) if len(parts) > 1 else parts[0]

    def subset_sizes(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for batch in self.batches():
            for subset, n in batch.group_by("subset").len().iter_rows():
                counts[subset] = counts.get(subset, 0) + n
        return counts

    def target_ranges(self) -> dict[str, tuple[int, int]]:
        return {t: (int(np.searchsorted(self.indices, a)), int(np.searchsorted(self.indices, b)))
                for t, (a, b) in self.inner.target_ranges().items()}


def sample_suite(data: SuiteData, size: int, seed: int) -> SuiteData:
    """``data`` narrowed to a stratified sample of ``size`` items (``data`` itself when it has no more)."""
    if size >= data.size:
        return data
    strata = pl.concat([b.select(STRATA) for b in data.batches()]).with_columns(pl.all().fill_null(""))
    return SampledData(data, stratified_indices(strata, size, seed), seed)
