"""From translations to labels and metrics, streaming: the shards are scanned lazily, each output is
labelled with its suite's detector for its target language, labels.parquet is written by a streaming
sink, and every metric is computed from group counts — so scoring a million rows needs no more
memory than scoring a thousand. Every metrics row is stamped with the run's provenance."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Callable

import polars as pl
import pyarrow.parquet as pq

from . import __version__
from .config import MetricsConfig, RunConfig
from .detect import label_expr
from .errors import RunDirError
from .metrics import METRIC_SCHEMA, gender_shares, tgbi, winomt
from .metrics.occupations import per_occupation
from .registry import Registry
from .store import RunDir, write_parquet_atomic
from .suites import SUITES
from .sweep import RunPlan, shard_files

Scorer = Callable[[pl.LazyFrame, dict, MetricsConfig], pl.DataFrame]
SCORERS: Registry[Scorer] = Registry("scorer")

# What scoring reads from the shards, and what labels.parquet holds (sources are in items.parquet;
# each suite's detector is named in metrics.parquet).
LABEL_INPUT = ["system", "suite", "subset", "item_id", "tgt_lang", "translation", "error", "gold", "occupation",
               "female_share", "stereotype", "system_version", "run_id"]
LABEL_COLUMNS = ["system", "suite", "subset", "item_id", "tgt_lang", "translation", "label", "error", "gold",
                 "occupation", "female_share", "stereotype", "system_version", "run_id"]


def _stats(m: MetricsConfig) -> dict:
    return {"n_boot": m.bootstrap, "seed": m.seed, "confidence": m.confidence}


def _otsc(labelled, params, m):
    frames = [gender_shares(labelled, **_stats(m))]
    if params.get("per_occupation"):
        frames.append(per_occupation(labelled, **_stats(m)))
    return pl.concat(frames)


SCORERS.add("tgbi", lambda labelled, params, m: tgbi(labelled, **params, **_stats(m)))
SCORERS.add("otsc", _otsc)
SCORERS.add("winomt", lambda labelled, params, m: winomt(labelled, **params, **_stats(m)))


def translation_scans(run: RunDir, plan: RunPlan) -> dict[str, pl.LazyFrame]:
    """Per suite, a lazy scan of its finished shards; checks every planned shard is there and whole
    (one row per item × system, from each file's metadata — nothing is read for this)."""
    files = shard_files(run, plan.shards)
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise RunDirError(f"{run.root}: {len(missing)} of {len(files)} shards are not finished (first: {missing[0]}); "
                          f"rerun the sweep to complete them")
    by_suite: dict[str, list] = {}
    for shard, path in zip(plan.shards, files):
        rows = pq.read_metadata(path).num_rows
        if rows != shard.size:
            raise RunDirError(f"{path}: {rows} rows, expected {shard.size} (one per item of the shard)")
        by_suite.setdefault(shard.suite, []).append(path)
    return {suite: pl.scan_parquet(paths).select(LABEL_INPUT) for suite, paths in by_suite.items()}


def label(translations: dict[str, pl.LazyFrame | pl.DataFrame], config: RunConfig) -> dict[str, pl.LazyFrame]:
    """Per suite: one row per item × system with its detector's label (the detector of the suite for
    the row's target language) beside the item's gold information."""
    out = {}
    for suite, frame in translations.items():
        frame = frame.lazy()
        targets = SUITES.get(suite).targets
        if len(targets) == 1:
            labelled = frame.with_columns(label_expr(config.detector_for(suite, targets[0]), "translation").alias("label"))
        else:
            labelled = pl.concat([
                frame.filter(pl.col("tgt_lang") == tgt)
                .with_columns(label_expr(config.detector_for(suite, tgt), "translation").alias("label"))
                for tgt in targets
            ])
        out[suite] = labelled.select(LABEL_COLUMNS)
    return out


def compute_metrics(labelled: dict[str, pl.LazyFrame | pl.DataFrame], config: RunConfig) -> pl.DataFrame:
    """Each suite's metrics, by the scorer its suite names; one tidy frame."""
    frames = []
    for name, part in labelled.items():
        suite = SUITES.get(name)
        frames.append(SCORERS.get(suite.scorer)(part, dict(suite.scorer_params), config.metrics))
    return pl.concat(frames) if frames else pl.DataFrame(schema=METRIC_SCHEMA)


def with_provenance(metrics: pl.DataFrame, run_info: dict, config: RunConfig) -> pl.DataFrame:
    """Every metrics row gets the run id, config hash, dataset commit, system version, detector and
    a one-line signature saying exactly how the number was produced."""
    created = datetime.now(timezone.utc)
    rows = []
    for suite in config.suites:
        s = SUITES.get(suite)
        info = run_info["suites"][suite]
        dataset = info.get("dataset") or "template"
        commit = info.get("commit") or info["fingerprint"]
        detectors = [config.detector_for(suite, t).signature for t in s.targets]
        detector = detectors[0] if len(detectors) == 1 else ",".join(f"{t}:{d}" for t, d in zip(s.targets, detectors))
        for system, cfg in config.systems.items():
            signature = (
                f"suite:{suite}@{s.version}+{dataset}@{commit[:7]}|system:{system}@{cfg.version or cfg.backend}"
                f"|detector:{detector}|boot:{config.metrics.bootstrap},seed:{config.metrics.seed}"
                f",ci:{config.metrics.confidence:g}|biaseval:{__version__}"
            )
            rows.append({"system": system, "suite": suite, "dataset": dataset, "dataset_commit": commit,
                         "suite_version": s.version, "system_version": cfg.version, "detector": detector,
                         "signature": signature})
    prov = pl.DataFrame(rows, schema_overrides={"suite_version": pl.Int32})
    return metrics.join(prov, on=["system", "suite"], how="left").with_columns(
        pl.lit(run_info["run_id"]).alias("run_id"),
        pl.lit(run_info["config_hash"]).alias("config_hash"),
        pl.lit(__version__).alias("biaseval_version"),
        pl.lit(created).dt.replace_time_zone("UTC").cast(pl.Datetime("us", "UTC")).alias("created_at"),
    )


def sink_labels(labelled: dict[str, pl.LazyFrame], path) -> None:
    """labels.parquet by a streaming sink, renamed into place when complete."""
    tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
    try:
        pl.concat(list(labelled.values())).sink_parquet(tmp, compression="zstd")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def score_run(run: RunDir) -> pl.DataFrame:
    """(Re)compute labels.parquet and metrics.parquet of a finished run; returns the metrics."""
    plan = RunPlan.of(run)
    info = run.read_run()
    config = plan.config
    sink_labels(label(translation_scans(run, plan), config), run.labels)
    scans = {suite: pl.scan_parquet(run.labels).filter(pl.col("suite") == suite) for suite in config.suites
             if any(suite in s for s in plan.coverage.values())}
    metrics = with_provenance(compute_metrics(scans, config), info, config)
    write_parquet_atomic(metrics.to_arrow(), run.metrics)
    return metrics
