"""WinoMT scores (Stanovsky et al. 2019) from gold and predicted gender.

All computed from confusion counts, never from rounded percentages:
- acc: share of items whose predicted gender equals the gold gender, over all scored rows. A
  neutral or ambiguous prediction is wrong for a male or female gold (and right only for a neutral
  gold); ``unknown`` (the analyser could not tell) is wrong for every gold.
- f1_male, f1_female: class-wise F1 over all items; neutral and unknown predictions lower the
  recall of both.
- delta_g = f1_male - f1_female.
- delta_s: pro-stereotypical minus anti-stereotypical performance. ``basis="macro_f1"`` (Singh
  2023: macro-F1 over male and female in each set) or ``basis="acc"`` (mt_gender: accuracy).
- neutral: share of outputs labelled neutral or ambiguous (the paper's N); unknown: share labelled
  unknown.
Rows without a translation are not scored. Intervals: Wilson's for the shares (acc, neutral,
unknown: ``SHARES``); Newcombe's for ΔS on the accuracy basis (a difference of two shares of
independent sets: never a point, even at 100 % against 100 %); a seeded percentile bootstrap for the
F1 scores and their differences (ΔG, ΔS on macro-F1), which resamples the pro, anti and neither
(Winogender) sets separately (their sizes are fixed by design).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from biaseval.metrics.bootstrap import CONFIDENCE, resample_strata, rng_for
from biaseval.metrics.tidy import MetricRows, count_cells

STRATA = ("pro", "anti", None)  # None: items that are neither (WinoMT's Winogender sentences)
STRATUM_NAMES = ("pro", "anti", "winogender")
GOLD = ("male", "female", "neutral")
# Predicted classes: an ambiguous output (both genders) counts as neutral; unknown (the analyser
# could not tell) is its own column, wrong for every gold — neutral included.
PRED = ("male", "female", "neutral", "unknown")
PRED_INDEX = {"male": 0, "female": 1, "neutral": 2, "ambiguous": 2, "unknown": 3}
M, F, N, U = 0, 1, 2, 3


def _column(conf: np.ndarray, k: int) -> np.ndarray:
    """Counts predicted as class k (summed over the 3 golds by hand: numpy's sum over a short last
    axis is slow on replicate tables)."""
    return conf[..., 0, k] + conf[..., 1, k] + conf[..., 2, k]


def _total(conf: np.ndarray) -> np.ndarray:
    return _column(conf, 0) + _column(conf, 1) + _column(conf, 2) + _column(conf, 3)


def f1(conf: np.ndarray, k: int) -> np.ndarray:
    """F1 of class k from confusion counts (..., gold 3, pred 4); 0 where undefined."""
    tp = conf[..., k, k]
    fp = _column(conf, k) - tp
    fn = conf[..., k, 0] + conf[..., k, 1] + conf[..., k, 2] + conf[..., k, 3] - tp
    denom = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)


def accuracy(conf: np.ndarray, total: np.ndarray | None = None) -> np.ndarray:
    total = _total(conf) if total is None else total
    correct = conf[..., M, M] + conf[..., F, F] + conf[..., N, N]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, correct / np.maximum(total, 1), np.nan)


def pred_share(conf: np.ndarray, k: int, total: np.ndarray | None = None) -> np.ndarray:
    total = _total(conf) if total is None else total
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, _column(conf, k) / np.maximum(total, 1), np.nan)


def neutral_share(conf: np.ndarray) -> np.ndarray:
    return pred_share(conf, N)


def macro_f1(conf: np.ndarray) -> np.ndarray:
    return (f1(conf, M) + f1(conf, F)) / 2


def set_metrics(conf: np.ndarray) -> dict[str, np.ndarray]:
    total, f1_male, f1_female = _total(conf), f1(conf, M), f1(conf, F)
    return {"acc": accuracy(conf, total), "f1_male": f1_male, "f1_female": f1_female,
            "macro_f1": (f1_male + f1_female) / 2, "neutral": pred_share(conf, N, total),
            "unknown": pred_share(conf, U, total)}


def all_metrics(strata_conf: np.ndarray, basis: str) -> dict[str, np.ndarray]:
    """strata_conf: (..., 3 strata [pro, anti, neither], gold, pred)."""
    conf = strata_conf[..., 0, :, :] + strata_conf[..., 1, :, :] + strata_conf[..., 2, :, :]
    pro, anti = strata_conf[..., 0, :, :], strata_conf[..., 1, :, :]
    score = macro_f1 if basis == "macro_f1" else accuracy
    total, f1_male, f1_female = _total(conf), f1(conf, M), f1(conf, F)
    return {
        "acc": accuracy(conf, total),
        "f1_male": f1_male,
        "f1_female": f1_female,
        "delta_g": f1_male - f1_female,
        "delta_s": score(pro) - score(anti),
        "neutral": pred_share(conf, N, total),
        "unknown": pred_share(conf, U, total),
    }


def confusion(labelled: pl.DataFrame) -> dict[tuple[str, str, str | None], np.ndarray]:
    """Per (system, suite, target language): counts shaped (strata, gold, pred)."""
    frame = labelled.lazy()
    if "tgt_lang" not in frame.collect_schema().names():
        frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias("tgt_lang"))
    out: dict[tuple[str, str, str | None], np.ndarray] = {}
    for system, suite, tgt, stereotype, gold, label, count in count_cells(
        frame, ["system", "suite", "tgt_lang", "stereotype", "gold", "label"]
    ):
        conf = out.setdefault((system, suite, tgt), np.zeros((len(STRATA), len(GOLD), len(PRED)), dtype=np.int64))
        if label is not None:  # a missing translation is not scored
            conf[STRATA.index(stereotype), GOLD.index(gold), PRED_INDEX[label]] += count
    return out


SHARES = ("acc", "neutral", "unknown")  # plain proportions of the scored items: Wilson intervals


def _add(rows: MetricRows, system: str, suite: str, subset: str, metric: str, value: float, n: int,
         replicates: np.ndarray) -> None:
    if metric in SHARES:
        rows.add_share(system, suite, subset, metric, value, n)
    else:
        rows.add(system, suite, subset, metric, value, n, replicates)


def _right(conf: np.ndarray) -> int:
    """Items of a (gold, pred) table read with their gold gender (``accuracy``'s numerator)."""
    return int(conf[M, M] + conf[F, F] + conf[N, N])


def winomt(labelled: pl.DataFrame, *, basis: str = "macro_f1", by_target: bool = False, n_boot: int = 1000,
           seed: int = 0, confidence: float = CONFIDENCE) -> pl.DataFrame:
    """WinoMT metrics per system × suite (× target language with ``by_target``): subset ``all`` (acc,
    f1_male, f1_female, delta_g, delta_s, neutral, unknown) and subsets ``pro``/``anti`` (and
    ``winogender`` where present: acc, f1_male, f1_female, macro_f1, neutral, unknown). With
    ``by_target`` the subsets are ``<lang>`` and ``<lang>/pro``, ``<lang>/anti``, ...

    ``labelled`` needs system, suite, stereotype (pro/anti/null), gold and label (and tgt_lang).
    """
    if basis not in ("macro_f1", "acc"):
        raise ValueError(f"basis must be 'macro_f1' or 'acc', not {basis!r}")
    rows = MetricRows(seed)
    groups = sorted(confusion(labelled).items(), key=lambda kv: tuple(k or "" for k in kv[0]))
    if not groups:
        return rows.frame(confidence)
    conf = np.stack([c for _, c in groups])  # (G, strata, gold, pred)
    reps = np.stack([resample_strata(c, n_boot, rng_for(seed, system, suite, *([tgt] if by_target else [])))
                     for (system, suite, tgt), c in groups])
    point, boot = all_metrics(conf, basis), all_metrics(reps, basis)
    strata_point = [set_metrics(conf[:, s]) for s in range(len(STRATA))]
    strata_boot = [set_metrics(reps[:, :, s]) for s in range(len(STRATA))]
    for g, ((system, suite, tgt), c) in enumerate(groups):
        prefix = f"{tgt}/" if by_target else ""
        for metric in point:
            if metric == "delta_s" and not (c[0].sum() and c[1].sum()):
                continue  # a suite without pro or without anti items (winomt-en-adj) has no ΔS
            if metric == "delta_s" and basis == "acc":  # a difference of two shares of independent sets
                rows.add_difference(system, suite, tgt if by_target else "all", metric, point[metric][g], c.sum(),
                                    (_right(c[0]), int(c[0].sum())), (_right(c[1]), int(c[1].sum())))
                continue
            _add(rows, system, suite, tgt if by_target else "all", metric, point[metric][g], c.sum(), boot[metric][g])
        for s, stratum in enumerate(STRATUM_NAMES):
            n = int(c[s].sum())
            if n:
                for metric in strata_point[s]:
                    _add(rows, system, suite, prefix + stratum, metric, strata_point[s][metric][g], n,
                         strata_boot[s][metric][g])
    return rows.frame(confidence)
