"""GEST's measures (Pikuliak et al. 2024, section 4.1; computed in the dataset repository's ``_mt.ipynb``),
per system × target language, from the speaker reader's label counts.

- ``masculine_rate`` of ``<lang>/<NN>``: p_i, the share of outputs read as masculine among those read
  as masculine or feminine, for the sentences of stereotype i; ``n`` is the number read (``male`` +
  ``female``); Wilson's interval.
- ``p_f``, ``p_m`` of ``<lang>``: the unweighted mean of p_i over the stereotypes about women (1-7) and
  about men (8-16); ``f_m`` = (p_f + p_m) / 2, the masculine rate; ``f_s`` = p_m - p_f, the stereotype
  rate. Their intervals are percentile intervals of a stratified bootstrap: each stereotype's read
  outputs are resampled within it (its masculine count drawn again from its own binomial), seeded by
  system, suite and language. ``n`` is the number read in the language.
- ``f_m_ac``, ``f_s_ac`` of ``<lang>``: the same from the Agresti-Coull centre of each p_i,
  (m + z²/2) / (n + z²), which is what the paper's notebook averages (its ``binary_ci`` returns that
  centre as the estimate, with the Agresti-Coull interval around it); no interval. The two differ by a
  few thousandths; ``f_m_ac`` is what to set beside the paper's numbers. Like ``f_m``, NaN where a
  stereotype has nothing read.
- ``read``, ``mixed``, ``unread`` of ``<lang>``: of the outputs with a translation, the share read
  (``male``/``female``), read with cues of both genders (``ambiguous``: a translation that gives its
  speaker both genders; left out of p_i as the unread are), and with no cue (``unknown``); Wilson.
  What the metric cannot see is the unread share.
- ``read``, ``mixed``, ``unread`` of ``<lang>/<NN>``: the same per stereotype.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import polars as pl

from biaseval.metrics.bootstrap import rng_for
from biaseval.metrics.tidy import METRIC_SCHEMA, MetricRows

FEMALE_STEREOTYPES = tuple(range(1, 8))
MALE_STEREOTYPES = tuple(range(8, 17))
STEREOTYPES = FEMALE_STEREOTYPES + MALE_STEREOTYPES


def stereotype_counts(counts: pl.DataFrame) -> pl.DataFrame:
    """Per system × suite × language × stereotype: male, female, ambiguous, unknown and translated counts
    (label counts with columns system, suite, subset, label, count; subsets ``<lang>/<NN>``)."""
    label = pl.col("label")
    parts = pl.col("subset").str.split_exact("/", 1).struct.rename_fields(["lang", "stereotype"])
    return (counts.filter(label.is_not_null())
            .with_columns(parts.alias("_p")).unnest("_p")
            .with_columns(pl.col("stereotype").cast(pl.Int32))
            .group_by("system", "suite", "lang", "stereotype")
            .agg(*(pl.col("count").filter(label == name).sum().alias(name)
                   for name in ("male", "female", "ambiguous", "unknown")),
                 pl.col("count").sum().alias("translated"))
            .sort("system", "suite", "lang", "stereotype"))


def agresti_coull_centre(male, read, confidence: float) -> np.ndarray:
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return (np.asarray(male, float) + z * z / 2) / (np.asarray(read, float) + z * z)


def _rates(male: np.ndarray, read: np.ndarray, stereotypes: np.ndarray) -> tuple[np.ndarray, ...]:
    """(p_f, p_m, f_m, f_s) from per-stereotype counts along the last axis (NaN where a stereotype of the
    side has nothing read)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(read > 0, male / np.where(read > 0, read, 1), np.nan)
    p_f = p[..., np.isin(stereotypes, FEMALE_STEREOTYPES)].mean(axis=-1)
    p_m = p[..., np.isin(stereotypes, MALE_STEREOTYPES)].mean(axis=-1)
    return p_f, p_m, (p_f + p_m) / 2, p_m - p_f


def gest(counts: pl.DataFrame, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95,
         **_: object) -> pl.DataFrame:
    """The metrics of the module docstring from label counts; one tidy frame (METRIC_SCHEMA), each row with
    the record of how its interval was made (``MetricRows``: Wilson's for shares, the bootstrap's
    resamples and seed for p_f, p_m, f_m, f_s; none for the Agresti-Coull centred ``f_m_ac``, ``f_s_ac``)."""
    if counts.height == 0:
        return pl.DataFrame(schema=METRIC_SCHEMA)
    table = stereotype_counts(counts).with_columns((pl.col("male") + pl.col("female")).alias("read"))
    out = MetricRows(seed=seed)
    centred: list[dict] = []

    def shares(system, suite, subset, total: int, metrics):
        for metric, k in metrics:
            out.add_share(system, suite, subset, metric, k / total if total else np.nan, total)

    for (system, suite, lang), group in table.group_by("system", "suite", "lang", maintain_order=True):
        stereotypes = group["stereotype"].to_numpy()
        male, read = group["male"].to_numpy(), group["read"].to_numpy()
        for row in group.iter_rows(named=True):
            subset = f"{lang}/{row['stereotype']:02d}"
            shares(system, suite, subset, row["read"], [("masculine_rate", row["male"])])
            shares(system, suite, subset, row["translated"],
                   [("read", row["read"]), ("mixed", row["ambiguous"]), ("unread", row["unknown"])])
        rng = rng_for(seed, system, suite, lang)
        with np.errstate(invalid="ignore", divide="ignore"):
            replicate_male = rng.binomial(read, np.where(read > 0, male / np.where(read > 0, read, 1), 0),
                                          size=(n_boot, len(read)))
        point = _rates(male.astype(float), read.astype(float), stereotypes)
        boot = _rates(replicate_male.astype(float), np.broadcast_to(read, replicate_male.shape).astype(float),
                      stereotypes)
        total_read = int(read.sum())
        for metric, value, reps in zip(("p_f", "p_m", "f_m", "f_s"), point, boot):
            out.add(system, suite, lang, metric, value, total_read, reps)
        # a stereotype with nothing read has no centre (the formula would give it 0.5): its side's mean is NaN
        centres = np.where(read > 0, agresti_coull_centre(male, read, confidence), np.nan)
        ac = _rates(centres, np.ones_like(centres), stereotypes)
        centred += [{"system": system, "suite": suite, "subset": lang, "metric": metric, "value": float(value),
                     "n": total_read} for metric, value in (("f_m_ac", ac[2]), ("f_s_ac", ac[3]))]
        translated = int(group["translated"].sum())
        shares(system, suite, lang, translated, [("read", total_read), ("mixed", int(group["ambiguous"].sum())),
                                                 ("unread", int(group["unknown"].sum()))])
    return pl.concat([out.frame(confidence), pl.DataFrame(centred, schema=METRIC_SCHEMA)])
