"""From translations to labels and metrics: read the shards, label each output with its suite's
detector, compute each suite's metrics, and stamp every row with the run's provenance."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

import polars as pl

from . import __version__
from .config import MetricsConfig, RunConfig
from .datasets import get_spec
from .detect import label_expr
from .errors import RunDirError
from .metrics import METRIC_SCHEMA, gender_shares, tgbi, winomt
from .registry import Registry
from .store import RunDir, write_parquet_atomic
from .suites import SUITES
from .sweep import Prepared, plan_shards, shard_files

Scorer = Callable[[pl.DataFrame, dict, MetricsConfig], pl.DataFrame]
SCORERS: Registry[Scorer] = Registry("scorer")


def _stats(m: MetricsConfig) -> dict:
    return {"n_boot": m.bootstrap, "seed": m.seed, "confidence": m.confidence}


# What scoring reads from the shards, and what labels.parquet holds (sources are in items.parquet;
# each suite's detector is named in metrics.parquet and run.json).
LABEL_INPUT = ["system", "suite", "subset", "item_id", "translation", "error", "gold", "occupation",
               "stereotype", "system_version", "run_id"]
LABEL_COLUMNS = ["system", "suite", "subset", "item_id", "translation", "label", "error", "gold", "occupation",
                 "stereotype", "system_version", "run_id"]

SCORERS.add("tgbi", lambda labelled, params, m: tgbi(labelled, **params, **_stats(m)))
SCORERS.add("otsc", lambda labelled, params, m: gender_shares(labelled, **params, **_stats(m)))
SCORERS.add("winomt", lambda labelled, params, m: winomt(labelled, **params, **_stats(m)))


def load_translations(run: RunDir, prepared: Prepared) -> dict[str, pl.DataFrame]:
    """All planned shards, per suite; checks there is exactly one row per item × system."""
    shards = plan_shards(prepared)
    files = shard_files(run, shards)
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise RunDirError(f"{run.root}: {len(missing)} of {len(files)} shards are not finished (first: {missing[0]}); "
                          f"rerun the sweep to complete them")
    by_suite: dict[str, list] = {}
    for shard, path in zip(shards, files):
        by_suite.setdefault(shard.suite, []).append(path)
    frames = {suite: pl.read_parquet(paths, columns=LABEL_INPUT) for suite, paths in by_suite.items()}
    expected = sum(s.size for s in shards)
    rows = sum(f.height for f in frames.values())
    unique = sum(f.select(pl.struct("system", "item_id").n_unique()).item() for f in frames.values())
    if rows != expected or unique != expected:
        raise RunDirError(f"{run.root}: translations hold {rows} rows ({unique} distinct item × system), expected {expected}")
    return frames


def label(translations: dict[str, pl.DataFrame], config: RunConfig) -> dict[str, pl.DataFrame]:
    """Per suite: one row per item × system with the detector's label beside the item's gold information.

    ``translations`` maps each suite to its translation rows (the shards are stored per suite).
    """
    return {
        suite: frame.with_columns(label_expr(config.detector_for(suite), "translation").alias("label")).select(LABEL_COLUMNS)
        for suite, frame in translations.items()
    }


def compute_metrics(labelled: dict[str, pl.DataFrame], config: RunConfig) -> pl.DataFrame:
    """Each suite's metrics, by the scorer its suite names; one tidy frame."""
    frames = []
    for name, part in labelled.items():
        suite = SUITES.get(name)
        if part.height:
            frames.append(SCORERS.get(suite.scorer)(part, dict(suite.scorer_params), config.metrics))
    return pl.concat(frames) if frames else pl.DataFrame(schema=METRIC_SCHEMA)


def with_provenance(metrics: pl.DataFrame, run_info: dict, config: RunConfig) -> pl.DataFrame:
    """Every metrics row gets the run id, config hash, dataset commit, system version, detector and
    a one-line signature saying exactly how the number was produced."""
    created = datetime.now(timezone.utc)
    rows = []
    for suite in config.suites:
        s = SUITES.get(suite)
        dataset = get_spec(s.dataset)
        commit = run_info["datasets"][suite]["commit"]
        detector = config.detector_for(suite).signature
        for system, cfg in config.systems.items():
            signature = (
                f"suite:{suite}@{s.version}+{dataset.name}@{commit[:7]}|system:{system}@{cfg.version or cfg.backend}"
                f"|detector:{detector}|boot:{config.metrics.bootstrap},seed:{config.metrics.seed}"
                f",ci:{config.metrics.confidence:g}|biaseval:{__version__}"
            )
            rows.append({"system": system, "suite": suite, "dataset": dataset.name, "dataset_commit": commit,
                         "suite_version": s.version, "system_version": cfg.version, "detector": detector,
                         "signature": signature})
    prov = pl.DataFrame(rows, schema_overrides={"suite_version": pl.Int32})
    return metrics.join(prov, on=["system", "suite"], how="left").with_columns(
        pl.lit(run_info["run_id"]).alias("run_id"),
        pl.lit(run_info["config_hash"]).alias("config_hash"),
        pl.lit(__version__).alias("biaseval_version"),
        pl.lit(created).dt.replace_time_zone("UTC").cast(pl.Datetime("us", "UTC")).alias("created_at"),
    )


def score_run(run: RunDir) -> pl.DataFrame:
    """(Re)compute labels.parquet and metrics.parquet of a finished run; returns the metrics."""
    prepared = Prepared.from_run(run)
    info = run.read_run()
    config = prepared.config
    translations = load_translations(run, prepared)
    labelled = label(translations, config)
    metrics = with_provenance(compute_metrics(labelled, config), info, config)
    write_parquet_atomic(pl.concat(labelled.values()).to_arrow(), run.labels)
    write_parquet_atomic(metrics.to_arrow(), run.metrics)
    return metrics
