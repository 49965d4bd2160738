"""Per-occupation results: how often each occupation's friend comes out female (p_f) or male (p_m)
per system and target language, and whether that follows labour statistics — the correlation of
p_f with the occupation's female share (Pearson r and Spearman rho) across occupations.

Subsets are ``<tgt>/occupation/<occupation>`` (p_m, p_f) and ``<tgt>`` (r_female_share,
rho_female_share, n = occupations). Intervals: Wilson's for p_m and p_f (an occupation has few
items: its bootstrap would be a point at 0/n and n/n); for the correlations the items of each
occupation are resampled (a seeded bootstrap; one generator per system × suite × language, all
occupations drawn at once) and the correlation is recomputed on every replicate.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from biaseval.metrics.bootstrap import CONFIDENCE, resample_rows, rng_for
from biaseval.metrics.proportions import CLASS_INDEX, CLASSES, shares
from biaseval.metrics.tidy import MetricRows


def _rank(values: np.ndarray) -> np.ndarray:
    """Ranks (0-based) within each row of a 2-D array, ties sharing their mean rank (vectorised; each
    NaN ranks on its own, after the numbers)."""
    rows, n = values.shape
    if values.size == 0:
        return np.zeros(values.shape)
    order = np.argsort(values, axis=1, kind="stable")
    ordered = np.take_along_axis(values, order, axis=1)
    starts = np.ones(ordered.shape, dtype=bool)  # where a run of equal values begins (every row begins one)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.flatnonzero(starts)  # of each run, in the flattened rows
    size = np.diff(np.append(first, starts.size))
    mean = (2 * (first % n) + size - 1) / 2  # (first + last) / 2 within its row
    ranks = np.empty(values.size)
    ranks[(order + (np.arange(rows) * n)[:, None]).ravel()] = np.repeat(mean, size)
    return ranks.reshape(values.shape)


def _share_ranks(counts: np.ndarray, n: np.ndarray) -> np.ndarray | None:
    """``_rank`` of the shares ``counts[b, o] / n[o]`` within each row b (ties sharing their mean
    rank), by counting instead of sorting: each share is one of the few fractions k / n, numbered in
    order, and a row's ranks follow from how many of its shares fall on each number. The same ranks
    as ``_rank`` (equal shares are equal floats either way); None where the fractions would be many
    or a set is empty (then ``_rank`` does it)."""
    sizes = np.unique(n)
    if counts.size == 0 or sizes[0] <= 0 or len(sizes) * (int(sizes[-1]) + 1) > max(counts.size, 4096):
        return None
    steps = np.arange(int(sizes[-1]) + 1)
    table = steps[None, :] / sizes[:, None]  # (sizes, k): each possible share, as the replicates compute it
    values = np.unique(table[steps[None, :] <= sizes[:, None]])
    numbers = np.searchsorted(values, table)  # share -> its place among all possible shares
    ids = numbers[np.searchsorted(sizes, n)[None, :], counts]  # (rows, O)
    rows, width = ids.shape[0], len(values)
    flat = ids + (np.arange(rows) * width)[:, None]
    hist = np.bincount(flat.ravel(), minlength=rows * width).reshape(rows, width)
    mean = (np.cumsum(hist, axis=1) - hist) + (hist - 1) / 2  # first place of each share + half its ties
    return mean.ravel()[flat]


def pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Correlation of ``x`` (n,) with each row of ``y`` (..., n); NaN where either is constant."""
    xc = x - x.mean()
    yc = y - y.mean(axis=-1, keepdims=True)
    denom = np.sqrt((xc ** 2).sum()) * np.sqrt((yc ** 2).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (yc * xc).sum(axis=-1) / np.where(denom > 0, denom, 1), np.nan)


def _occupation_counts(labelled: pl.DataFrame | pl.LazyFrame) -> dict[tuple[str, str, str], pl.DataFrame]:
    """Per system × suite × target language (in order): one row per occupation (in order) with its
    female share (the lowest, should rows disagree) and its male / female / neutral counts. Rows
    without an occupation or a share are left out; rows without a label count for none of the classes."""
    frame = labelled.lazy()
    if "count" not in frame.collect_schema().names():  # one row per output
        frame = frame.with_columns(pl.lit(1, pl.Int64).alias("count"))
    label = pl.col("label").replace_strict(list(CLASS_INDEX), [CLASSES[k] for k in CLASS_INDEX.values()], default=None)
    strange = pl.col("label").is_not_null() & ~pl.col("label").is_in(list(CLASS_INDEX))
    table = (frame.filter(pl.col("occupation").is_not_null() & pl.col("female_share").is_not_null())
             .group_by("system", "suite", "tgt_lang", "occupation")
             .agg(pl.col("female_share").min(), *[pl.col("count").filter(label == name).sum().alias(name) for name in CLASSES],
                  pl.col("label").filter(strange).first().alias("strange"))
             .sort("system", "suite", "tgt_lang", "occupation")
             .collect(engine="streaming"))
    strange = table["strange"].drop_nulls()
    if len(strange):
        raise ValueError(f"label {strange[0]!r} is none of {', '.join(CLASS_INDEX)}")
    return table.drop("strange").partition_by("system", "suite", "tgt_lang", as_dict=True, maintain_order=True)


def per_occupation(labelled: pl.DataFrame | pl.LazyFrame, *, n_boot: int = 1000, seed: int = 0,
                   confidence: float = CONFIDENCE) -> pl.DataFrame:
    """``labelled`` needs system, suite, tgt_lang, occupation, female_share and label."""
    rows = MetricRows(seed)
    for (system, suite, tgt), group in _occupation_counts(labelled).items():
        names = group["occupation"].to_list()
        x = group["female_share"].to_numpy().astype(float)
        counts = group.select(CLASSES).to_numpy().astype(np.int64)  # (O, 3)
        point = shares(counts)  # (O, 3)
        subsets = [f"{tgt}/occupation/{name}" for name in names]
        n = counts.sum(axis=1)
        rows.add_shares(system, suite, subsets, "p_m", point[:, 0], n)
        rows.add_shares(system, suite, subsets, "p_f", point[:, 1], n)
        if len(names) >= 3:
            reps = resample_rows(counts, n_boot, rng_for(seed, system, suite, tgt, "occupations"))  # (O, n_boot, 3)
            with np.errstate(invalid="ignore", divide="ignore"):  # every replicate of an occupation has its n items
                female = np.where(n[:, None] > 0, reps[:, :, 1] / np.maximum(n, 1)[:, None], np.nan)
            y, y_boot = point[:, 1], female.T  # (O,), (n_boot, O)
            rows.add(system, suite, tgt, "r_female_share", float(pearson(x, y[None, :])[0]), len(names),
                     pearson(x, y_boot))
            rx = _rank(x[None, :])[0]
            ranks = _share_ranks(reps[:, :, 1].T, n)
            rows.add(system, suite, tgt, "rho_female_share", float(pearson(rx, _rank(y[None, :]))[0]), len(names),
                     pearson(rx, _rank(y_boot) if ranks is None else ranks))
    return rows.frame(confidence)
