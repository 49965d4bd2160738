"""From translations to labels and metrics in one pass over the shards, a few groups of shards in memory
at a time: ``metrics/labelling.py`` labels each output, appends it to labels.parquet and counts it by
everything a metric groups by; metrics are then pure functions of those counts (``compute_metrics``) —
so scoring a million rows needs no more memory than scoring a thousand. Every metrics row is stamped
with the run's provenance."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import polars as pl

from biaseval import __version__
from biaseval.config import MetricsConfig, RunConfig
from biaseval.errors import RunDirError
from biaseval.metrics import METRIC_SCHEMA, gender_shares, tgbi, winomt
from biaseval.metrics.control import control, control_counts
from biaseval.metrics.examples import finish
from biaseval.metrics.labelling import label_and_count
from biaseval.metrics.gest import gest
from biaseval.metrics.mtgeneval import mtgeneval
from biaseval.metrics.mittens import mittens
from biaseval.metrics.occupations import per_occupation
from biaseval.metrics.paired import comparison_group, pairwise, suite_outcome
from biaseval.metrics.tidy import BOOTSTRAP
from biaseval.registry import Registry
from biaseval.run.filesystem import writing
from biaseval.run.plan import RunPlan, shard_files
from biaseval.run.rundir import RunDir, write_parquet_atomic
from biaseval.suites import SUITES

Scorer = Callable[[pl.LazyFrame, dict, MetricsConfig], pl.DataFrame]
SCORERS: Registry[Scorer] = Registry("scorer")

def _stats(m: MetricsConfig) -> dict:
    return {"n_boot": m.bootstrap, "seed": m.seed, "confidence": m.confidence}


def _otsc(counts, params, m):
    frames = [gender_shares(counts["sets"], **_stats(m))]
    if params.get("per_occupation"):
        frames.append(per_occupation(counts["occupations"], **_stats(m)))
    return pl.concat(frames)


SCORERS.add("tgbi", lambda counts, params, m: tgbi(counts["sets"], **params, **_stats(m)))
SCORERS.add("otsc", _otsc)
SCORERS.add("winomt", lambda counts, params, m: winomt(counts["sets"], **params, **_stats(m)))
SCORERS.add("mtgeneval", lambda counts, params, m: mtgeneval(counts["sets"], **params, **_stats(m)))
SCORERS.add("gest", lambda counts, params, m: gest(counts["sets"], **params, **_stats(m)))
SCORERS.add("mittens", lambda counts, params, m: mittens(counts["sets"], **params, confidence=m.confidence))


def shard_paths(run: RunDir, plan: RunPlan) -> dict[str, list]:
    """Per suite, its finished shard files; checks every planned shard is there, whole (one row per
    item × system) and the very file that was written: its bytes have the checksum recorded then
    (``RunDir.shard_problem``). A shard that fails is named, with how many others do, and nothing is
    scored: a resumed sweep rewrites them. Each file is read once, a few at a time (on an object store
    each read is a request)."""
    files = shard_files(run, plan.shards)
    finished = set(run.shard_files())  # one listing, not a request per shard
    missing = [f for f in files if f not in finished]
    if missing:
        raise RunDirError(f"{run.location}: {len(missing)} of {len(files)} shards are not finished "
                          f"(first: {run.shards.uri(missing[0])}); rerun the sweep to complete them")

    def check(shard_and_path) -> str | None:
        shard, path = shard_and_path
        try:
            data = run.read_shard(path)
            rows = run.shard_rows(path, data)
        except Exception as exc:  # noqa: BLE001 - a footer that does not parse
            return f"damaged ({type(exc).__name__}: {exc})"
        if rows != shard.size:
            return f"{rows} rows, expected {shard.size} (one per item of the shard)"
        return run.shard_problem(path, data=data)

    with ThreadPoolExecutor(max_workers=max(1, min(8, len(files)))) as pool:
        problems = [(path, problem) for path, problem in zip(files, pool.map(check, zip(plan.shards, files)))
                    if problem]
    if problems:
        path, problem = problems[0]
        others = f"; {len(problems) - 1} more shard(s) fail these checks" if len(problems) > 1 else ""
        raise RunDirError(f"{run.shards.uri(path)}: {problem}{others}; rerun the sweep with the same --out to "
                          f"write {'them' if others else 'it'} again (scoring trusts only shards whose bytes are "
                          f"those written)")
    by_suite: dict[str, list] = {}
    for shard, path in zip(plan.shards, files):
        by_suite.setdefault(shard.suite, []).append(path)
    return by_suite


def compute_metrics(counts: dict[str, pl.DataFrame], config: RunConfig) -> pl.DataFrame:
    """Each suite's metrics from the label counts, by the scorer its suite names; one tidy frame."""
    jobs = []
    for name in config.suites:
        suite = SUITES.get(name)
        part = {view: frame.filter(pl.col("suite") == name) for view, frame in counts.items()}
        if suite.scorer not in SCORERS or "sets" not in part or part["sets"].height == 0:
            continue  # word-list suites are scored by the embedding study
        jobs.append((SCORERS.get(suite.scorer), part, dict(suite.scorer_params)))
    # Suites in threads: most of a scorer's time is numpy's seeded draws, which release the GIL, and each
    # suite draws from its own generators, so the numbers do not depend on which thread ran first.
    def run(job) -> pl.DataFrame:
        return job[0](job[1], job[2], config.metrics)

    workers = min(len(jobs), os.cpu_count() or 1)
    if workers < 2:  # one suite: no thread (its allocations would go to a fresh malloc arena)
        frames = [run(job) for job in jobs]
    else:
        with ThreadPoolExecutor(workers) as pool:
            frames = list(pool.map(run, jobs))
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
        detectors = [_signature(config.detector_for(suite, t), t) for t in s.targets]
        detector = detectors[0] if len(detectors) == 1 else ",".join(f"{t}:{d}" for t, d in zip(s.targets, detectors))
        for system, cfg in config.systems.items():
            stem = (f"suite:{suite}@{s.version}+{dataset}@{commit[:7]}|system:{system}@{cfg.version or cfg.backend}"
                    f"|detector:{detector}")
            rows.append({"system": system, "suite": suite, "dataset": dataset, "dataset_commit": commit,
                         "suite_version": s.version, "system_version": cfg.version, "detector": detector,
                         "_stem": stem})
    prov = pl.DataFrame(rows, schema_overrides={"suite_version": pl.Int32})
    return metrics.join(prov, on=["system", "suite"], how="left").with_columns(
        pl.format("{}|ci:{}|biaseval:{}", "_stem", interval_signature(config.metrics.confidence),
                  pl.lit(__version__)).alias("signature"),
        pl.lit(run_info["run_id"]).alias("run_id"),
        pl.lit(run_info["config_hash"]).alias("config_hash"),
        pl.lit(__version__).alias("biaseval_version"),
        pl.lit(created).dt.replace_time_zone("UTC").cast(pl.Datetime("us", "UTC")).alias("created_at"),
    ).drop("_stem")


def interval_signature(confidence: float) -> pl.Expr:
    """A row's interval in its signature, from the row's own record of it: ``0.95,wilson``,
    ``0.95,newcombe-paired``, ``0.95,bootstrap:1000,seed:2019``; ``none`` for a row without one."""
    method = (pl.when(pl.col("interval") == BOOTSTRAP)
              .then(pl.format("bootstrap:{},seed:{}", "resamples", "seed"))
              .otherwise(pl.col("interval")))
    return pl.when(pl.col("interval").is_null()).then(pl.lit("none")).otherwise(
        pl.format("{},{}", pl.lit(f"{confidence:g}"), method))


def _signature(detector, tgt: str) -> str:
    """A detector's signature; a corpus detector's names the analyser it uses for ``tgt`` too."""
    per_language = getattr(detector, "signature_for", None)
    return per_language(tgt) if per_language is not None else detector.signature


def score_run(run: RunDir) -> pl.DataFrame:
    """(Re)compute labels.parquet and metrics.parquet of a finished run; returns the metrics."""
    plan = RunPlan.of(run)
    info = run.read_run()
    config = plan.config
    with writing(run.labels):  # no space left: named here (the Parquet writer's error names no file)
        counts, _ = label_and_count(shard_paths(run, plan), config, run.labels, run.items, run.shards)
    write_examples(run, counts.pop("examples", None), config)
    frames = [compute_metrics(counts, config), pairwise_metrics(run, config), control_metrics(run, config)]
    if "rows" in counts and counts["rows"].height:
        frames.append(embedding_outputs(run, counts["rows"], config, Path(info["config_dir"])))
    metrics = with_provenance(pl.concat(frames), info, config)
    write_parquet_atomic(metrics.to_arrow(), run.metrics)
    return metrics


def write_examples(run: RunDir, picked: pl.DataFrame | None, config: RunConfig) -> None:
    """examples.parquet: the outputs behind the numbers, a bounded sample (metrics/examples.py)."""
    detectors = {(suite, tgt): config.detector_for(suite, tgt) for suite in config.suites for tgt in SUITES.get(suite).targets}
    frame = finish(picked if picked is not None else pl.DataFrame(), run.items, detectors)
    with writing(run.examples):
        write_parquet_atomic(frame.to_arrow(), run.examples)


def item_outcomes(run: RunDir, suite: str) -> pl.DataFrame:
    """Per item × system of one suite: the binary outcome paired tests compare (``paired.suite_outcome``:
    the one its headline share counts), and the group of items a summary shows it for, where the suite
    has one (``paired.comparison_group``)."""
    s = SUITES.get(suite)
    params = dict(s.scorer_params)
    group = comparison_group(s.scorer, params)
    items = pl.scan_parquet(run.items).filter(pl.col("suite") == suite)
    columns = ["item_id", "gold"] + (["tgt_lang", "subset"] if group is not None else [])
    labels = pl.scan_parquet(run.labels).filter(pl.col("suite") == suite).select("system", "item_id", "label", "reason")
    joined = labels.join(items.select(columns), on="item_id", how="left")
    chosen = [pl.col("item_id"), pl.col("system"), suite_outcome(s.scorer, params).alias("outcome")]
    if group is not None:
        chosen.append(group.alias("group"))
    return joined.select(chosen).collect()


def pairwise_metrics(run: RunDir, config: RunConfig) -> pl.DataFrame:
    """McNemar's test between every pair of systems on each suite's items (not for word lists), over
    the whole suite and per group (``item_outcomes``)."""
    frames = []
    for name in config.suites:
        if SUITES.get(name).scorer == "embedding":
            continue
        # One system has nothing to be compared with: count them before building the item × system table.
        systems = (pl.scan_parquet(run.labels).filter(pl.col("suite") == name).select(pl.col("system").n_unique())
                   .collect().item())
        if systems > 1:
            frames.append(pairwise(item_outcomes(run, name), name))
    return pl.concat(frames) if frames else pl.DataFrame(schema=METRIC_SCHEMA)


def control_metrics(run: RunDir, config: RunConfig) -> pl.DataFrame:
    """Gender control (metrics/control.py) of the systems asked for a gender, beside what their
    unconditioned systems do, on each suite (not word lists) per subset and target language."""
    requests = {name: cfg.requests for name, cfg in config.systems.items() if cfg.requests}
    if not requests:
        return pl.DataFrame(schema=METRIC_SCHEMA)
    baselines = {name: cfg.condition_of for name, cfg in config.systems.items() if cfg.requests and cfg.condition_of}
    words = [name for name in config.suites if SUITES.get(name).scorer == "embedding"]
    items = pl.scan_parquet(run.items).select("suite", "item_id", "subset", "tgt_lang")
    systems = pl.Series([*requests, *baselines.values()], dtype=pl.String).implode()
    rows = (pl.scan_parquet(run.labels).filter(pl.col("system").is_in(systems)
                                               & ~pl.col("suite").is_in(pl.Series(words, dtype=pl.String).implode()))
            .select("system", "suite", "item_id", "label").join(items, on=["suite", "item_id"], how="left"))
    return control(control_counts(rows), requests, baselines, confidence=config.metrics.confidence)


def embedding_outputs(run: RunDir, rows: pl.DataFrame, config: RunConfig, config_dir: Path) -> pl.DataFrame:
    """The embedding-bias study of the run's word-list suites: its tables written beside the other
    results (the report draws its plots); returns its metrics."""
    from biaseval.metrics.embedding_study import study

    result = study(rows, config, config_dir)
    write_parquet_atomic(result.features.to_arrow(), run.root / "embedding_bias.parquet")
    write_parquet_atomic(result.bins.to_arrow(), run.root / "embedding_bins.parquet")
    write_parquet_atomic(result.shift.to_arrow(), run.root / "gender_shift.parquet")
    return result.metrics
