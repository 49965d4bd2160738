"""Gender control: does a system use the gender it is asked for?

A system that is asked for a gender (``requests``: each condition of a system, see
``biaseval/translate/conditions.py``) is scored on every suite it translates, per subset, per
target language (subset ``es``) and over all target languages (``all``), with the suite's own
detectors:

- ``control_acc``: the share of its outputs whose detected gender is the one requested (a neutral
  request is met only by outputs the detector labels neutral);
- ``control_unknown``: the share the detector could not read (``unknown``, or ``ambiguous``: both
  genders cued), reported apart: a detector that cannot see a requested form (a German
  gender-neutral noun, say) shows here, not as a refusal to comply;
- ``control_unasked``: the same share of requested-gender outputs for the unconditioned system it
  is a condition of, on the same items: what the system does when not asked.

The rest (``1 - control_acc - control_unknown``) are outputs with another gender. ``n`` counts the
outputs with a label (items without a translation are not scored). A system that follows the
request has ``control_acc`` near 1 whatever ``control_unasked`` is; one that ignores it has
``control_acc`` equal to ``control_unasked`` (the same outputs); one that cannot produce a gender has
both near 0, asked or not. Intervals: Wilson's score interval of each share (``metrics/wilson.py``).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from biaseval.metrics.bootstrap import CONFIDENCE
from biaseval.metrics.tidy import MetricRows, count_cells

CONTROL_METRICS = ("control_acc", "control_unknown", "control_unasked")
UNREAD = ("unknown", "ambiguous")


def control_counts(rows: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Label counts to score control on: ``rows`` (one per output: system, suite, subset, tgt_lang,
    label) counted per subset, per target language as a subset of its own (``es``), and, for a suite
    with several target languages, over all of them (``all``); a rollup whose name is a subset of the
    suite already is left out. Columns system, suite, subset, label, count."""
    rows = rows.lazy().filter(pl.col("label").is_not_null())
    keys = ["system", "suite", "subset", "label"]
    per_subset = rows.group_by(keys).agg(pl.len().alias("count"))
    per_language = rows.group_by("system", "suite", "tgt_lang", "label").agg(pl.len().alias("count"))
    languages = rows.group_by("suite").agg(pl.col("tgt_lang").n_unique().alias("languages"))
    per_suite = (rows.join(languages.filter(pl.col("languages") > 1), on="suite", how="semi")
                 .group_by("system", "suite", "label").agg(pl.len().alias("count"))
                 .with_columns(pl.lit("all").alias("subset")))
    rollups = pl.concat([per_language.rename({"tgt_lang": "subset"}).select(*keys, "count"),
                         per_suite.select(*keys, "count")])
    taken = rows.select("suite", "subset").unique()
    rollups = rollups.join(taken, on=["suite", "subset"], how="anti")
    return (pl.concat([per_subset, rollups]).with_columns(pl.col("count").cast(pl.Int64)).collect().sort(keys))


def _cells(counts: pl.DataFrame, systems: set[str]) -> dict[tuple[str, str, str], dict[str, int]]:
    """(system, suite, subset) -> label -> count, for ``systems``."""
    cells: dict[tuple[str, str, str], dict[str, int]] = {}
    for system, suite, subset, label, count in count_cells(counts, ["system", "suite", "subset", "label"]):
        if system in systems and label is not None:
            cell = cells.setdefault((system, suite, subset), {})
            cell[label] = cell.get(label, 0) + count
    return cells


def _shares(groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Counts (G, K) -> (point shares (G, K), n (G,))."""
    counts = np.asarray(groups, dtype=np.int64).reshape(len(groups), -1)
    n = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = counts / np.where(n > 0, n, np.nan)[:, None]
    return point, n


def control(counts: pl.DataFrame, requests: dict[str, str], baselines: dict[str, str] | None = None, *,
            confidence: float = CONFIDENCE) -> pl.DataFrame:
    """``control_acc``, ``control_unknown`` and (with a baseline) ``control_unasked`` per system ×
    suite × subset, for every system of ``requests`` (system -> the gender it is asked for).
    ``counts``: system, suite, subset, label and a ``count`` (``control_counts``), or one row per
    output; ``baselines``: system -> the unconditioned system it is a condition of."""
    baselines = baselines or {}
    cells = _cells(counts, set(requests) | set(baselines.values()))
    rows = MetricRows()
    by_system: dict[tuple[str, str], list[str]] = {}
    for system, suite, subset in cells:
        if system in requests:
            by_system.setdefault((system, suite), []).append(subset)
    for (system, suite), subsets in by_system.items():
        wanted = requests[system]
        asked = [cells[(system, suite, s)] for s in subsets]
        triples = [[c.get(wanted, 0), sum(c.get(u, 0) for u in UNREAD),
                    sum(c.values()) - c.get(wanted, 0) - sum(c.get(u, 0) for u in UNREAD)] for c in asked]
        point, n = _shares(triples)
        rows.add_shares(system, suite, subsets, "control_acc", point[:, 0], n)
        rows.add_shares(system, suite, subsets, "control_unknown", point[:, 1], n)
        base = baselines.get(system)
        known = [s for s in subsets if (base, suite, s) in cells]
        if base is None or not known:
            continue
        plain = [cells[(base, suite, s)] for s in known]
        pairs = [[c.get(wanted, 0), sum(c.values()) - c.get(wanted, 0)] for c in plain]
        point, n = _shares(pairs)
        rows.add_shares(system, suite, known, "control_unasked", point[:, 0], n)
    return rows.frame(confidence)
