"""From translations to labels and metrics in one pass over the shards, one shard in memory at a time:
each output is labelled with its suite's detector for its target language, appended to labels.parquet,
and counted by everything a metric groups by. Metrics are then pure functions of those counts — so
scoring a million rows needs no more memory than scoring a thousand. Every metrics row is stamped
with the run's provenance."""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from biaseval import __version__
from biaseval.config import MetricsConfig, RunConfig
from biaseval.errors import ConfigError, RunDirError
from biaseval.label.entities import EntityAlignment, label_languages
from biaseval.label.rules import LABEL_ENUM, RuleSet, label_series
from biaseval.metrics import METRIC_SCHEMA, gender_shares, tgbi, winomt
from biaseval.metrics.control import control, control_counts
from biaseval.metrics.occupations import per_occupation
from biaseval.metrics.paired import outcome, pairwise
from biaseval.registry import Registry
from biaseval.run.filesystem import Folder, writing
from biaseval.run.plan import RunPlan, shard_files
from biaseval.run.rundir import RunDir, write_parquet_atomic
from biaseval.suites import SUITES

Scorer = Callable[[pl.LazyFrame, dict, MetricsConfig], pl.DataFrame]
SCORERS: Registry[Scorer] = Registry("scorer")

# What scoring reads from the shards, and what labels.parquet holds: the label beside what metrics
# group by. Sources are in items.parquet and translations in the shards (join on system, item_id);
# each suite's detector is named in metrics.parquet.
LABEL_INPUT = ["system", "suite", "subset", "item_id", "tgt_lang", "translation", "error", "gold", "occupation",
               "female_share", "stereotype"]
# reason / evidence: why a corpus detector (WinoMT's entity alignment) chose the label, which words
# decided; null for rule-set detectors.
LABEL_COLUMNS = ["system", "suite", "item_id", "label", "reason", "evidence", "error"]
LABEL_SCHEMA = {"system": pl.String, "suite": pl.String, "item_id": pl.String, "label": pl.String,
                "reason": pl.String, "evidence": pl.String, "error": pl.String}


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


# What metrics group by: the counts scoring keeps, one table per view (one row per combination,
# with its count). "sets": per subset, for every scorer; "occupations": per occupation and target
# language, for suites scored per occupation. Kept apart, each stays small however many items.
SET_KEYS = {
    "tgbi": ["system", "suite", "subset", "label"],
    "otsc": ["system", "suite", "subset", "label"],
    "winomt": ["system", "suite", "subset", "tgt_lang", "stereotype", "gold", "label"],
}
OCCUPATION_KEYS = ["system", "suite", "tgt_lang", "occupation", "female_share", "label"]


# Word-list suites are scored per word (embedding features), from their rows themselves.
ROW_COLUMNS = ["system", "suite", "subset", "source", "tgt_lang", "translation", "label"]


def count_keys(suite: str) -> dict[str, list[str]]:
    s = SUITES.get(suite)
    if s.scorer == "embedding":
        return {"rows": ROW_COLUMNS}
    views = {"sets": SET_KEYS[s.scorer]}
    if dict(s.scorer_params).get("per_occupation"):
        views["occupations"] = OCCUPATION_KEYS
    return views


def shard_paths(run: RunDir, plan: RunPlan) -> dict[str, list]:
    """Per suite, its finished shard files; checks every planned shard is there and whole (one row
    per item × system, from each file's metadata — nothing is read for this)."""
    files = shard_files(run, plan.shards)
    finished = set(run.shard_files())  # one listing, not a request per shard
    missing = [f for f in files if f not in finished]
    if missing:
        raise RunDirError(f"{run.location}: {len(missing)} of {len(files)} shards are not finished "
                          f"(first: {run.shards.uri(missing[0])}); rerun the sweep to complete them")
    by_suite: dict[str, list] = {}
    for shard, path in zip(plan.shards, files):
        try:
            rows = run.shard_rows(path)
        except Exception as exc:  # noqa: BLE001 - a footer that does not parse
            raise RunDirError(f"{run.shards.uri(path)}: damaged ({type(exc).__name__}: {exc}); rerun the sweep "
                              f"with the same --out to write it again") from None
        if rows != shard.size:
            raise RunDirError(f"{run.shards.uri(path)}: {rows} rows, expected {shard.size} (one per item of the shard)")
        by_suite.setdefault(shard.suite, []).append(path)
    return by_suite


def corpus_labelled(suite: str, config: RunConfig) -> bool:
    """Whether the suite's detectors label a whole corpus at once (entity alignment) rather than
    one text at a time; they cannot be mixed within a suite."""
    kinds = {isinstance(config.detector_for(suite, t), EntityAlignment) for t in SUITES.get(suite).targets}
    if len(kinds) > 1:
        raise ConfigError(f"detectors of {suite}: entity-alignment detectors cannot be mixed with rule sets")
    return kinds == {True}


def label_corpus(rows: pl.DataFrame, suite: str, config: RunConfig, items_path) -> pl.DataFrame:
    """All rows of a corpus-labelled suite, labelled language by language (the entity's position comes
    from items.parquet)."""
    if items_path is None:
        raise RunDirError(f"{suite}: scoring needs the run's items.parquet (entity positions)")
    entities = (pl.scan_parquet(items_path).filter(pl.col("suite") == suite)
                .select("item_id", "entity_index").collect())
    rows = rows.join(entities, on="item_id", how="left")
    languages = [(tgt, part) for tgt in SUITES.get(suite).targets
                 if (part := rows.filter(pl.col("tgt_lang") == tgt)).height]
    if not languages:
        return rows.with_columns([pl.lit(None, dtype=pl.String).alias(c) for c in ("label", "reason", "evidence")])
    return pl.concat(label_languages([(config.detector_for(suite, tgt), part) for tgt, part in languages]))


def label(translations: pl.DataFrame, suite: str, config: RunConfig) -> pl.DataFrame:
    """The shard rows of one suite with a ``label`` column: the suite's detector for each row's
    target language. Where every detector of the suite is a rule set, the labels come as
    ``LABEL_ENUM`` (codes of LABELS), else as strings."""
    targets = SUITES.get(suite).targets
    detectors = {tgt: config.detector_for(suite, tgt) for tgt in targets}
    codes = all(isinstance(d, RuleSet) for d in detectors.values())

    def labelled(frame: pl.DataFrame, detector) -> pl.DataFrame:
        if codes:
            return frame.with_columns(label_series(detector, frame["translation"], LABEL_ENUM).alias("label"))
        return frame.with_columns(detector.expr("translation").alias("label"))

    if len(targets) == 1:
        return labelled(translations, detectors[targets[0]])
    return pl.concat([labelled(translations.filter(pl.col("tgt_lang") == tgt), detectors[tgt]) for tgt in targets])


def label_and_count(files: dict[str, list], config: RunConfig, labels_path, items_path=None,
                    shards: Folder | None = None) -> tuple[dict[str, pl.DataFrame], int]:
    """Label every shard file (a few groups in memory at a time), write labels.parquet (renamed into
    place when complete: system, suite, item_id, label, error — the rest joins from items.parquet), and
    return the counts the suites' scorers need (per view: "sets", "occupations") with the number of rows.
    ``files`` are names in ``shards`` (the run's shard store), or local paths when it is None.

    Shards are read in groups of about ``BATCH_ROWS`` rows. Polars runs one group's reading, labelling
    and counting on about one core, so groups are labelled in threads (one per core, polars releases
    the GIL) and written by one more thread, in the order of the files, while later groups are labelled:
    at most ``cores + 2`` groups are in memory at a time."""
    label_schema = {c: LABEL_SCHEMA[c] for c in LABEL_COLUMNS}
    # polars' strings go to the writer as Arrow string views, without a copy; the file records no
    # Arrow schema, so every reader sees plain UTF-8 strings, as before.
    schema = pl.DataFrame(schema=label_schema).to_arrow(compat_level=pl.CompatLevel.newest()).schema
    # A group's suite is the same on every row: written as a one-value dictionary (read back as plain
    # strings, like the rest) and added to the counts after counting, not compared row by row.
    at = LABEL_COLUMNS.index("suite")
    schema = schema.set(at, pa.field("suite", pa.dictionary(pa.int32(), pa.string())))
    # Labels are few values: written from their codes (rule sets label as LABEL_ENUM) as a dictionary.
    label_at = LABEL_COLUMNS.index("label")
    schema = schema.set(label_at, pa.field("label", pa.dictionary(pa.int32(), pa.string())))
    copied = [c for c in LABEL_COLUMNS if c not in ("suite", "label")]
    tmp = labels_path.with_name(f".{labels_path.name}.{os.urandom(6).hex()}.tmp")
    jobs = []
    for suite, paths in files.items():
        corpus = corpus_labelled(suite, config)
        for group in ([paths] if corpus else _groups(paths, shards)):
            jobs.append((suite, group, corpus))
    workers = max(1, min(len(jobs), os.cpu_count() or 1))

    def label_group(job) -> tuple:
        suite, group, corpus = job
        keys = count_keys(suite)
        columns = LABEL_INPUT + ["source"] if "rows" in keys or corpus else _columns_for(suite, keys)
        rows_in = _read_shards(group, columns, shards)
        labelled = label_corpus(rows_in, suite, config, items_path) if corpus else label(rows_in, suite, config)
        labelled = labelled.with_columns([pl.lit(None, dtype=pl.String).alias(c)
                                          for c in ("reason", "evidence") if c not in labelled.columns])
        table = labelled.select(copied).cast({c: label_schema[c] for c in copied}).to_arrow(
            compat_level=pl.CompatLevel.newest())
        table = table.add_column(at, schema.field(at), _repeated(suite, labelled.height))
        table = table.add_column(label_at, schema.field(label_at), _dictionary(labelled["label"]))
        views = {}
        for view, view_keys in keys.items():
            if view == "rows":
                views[view] = labelled.with_columns(pl.lit(suite, dtype=pl.String).alias("suite"),
                                                    pl.col("label").cast(pl.String)).select(view_keys)
            else:  # lazily: the streaming engine counts faster
                counted = (labelled.lazy().group_by([k for k in view_keys if k != "suite"]).len()
                           .rename({"len": "count"}).collect())
                views[view] = counted.with_columns(pl.lit(suite, dtype=pl.String).alias("suite"),
                                                   pl.col("label").cast(pl.String)).select([*view_keys, "count"])
        return table, views, labelled.height

    counts: dict[str, list[pl.DataFrame]] = {}
    rows = 0
    try:
        # Dictionary pages for the columns with few values; item ids (one per row) are written plain,
        # as a dictionary of them would only be dropped again when it outgrows its page.
        with pq.ParquetWriter(tmp, schema, compression="zstd", write_statistics=False, store_schema=False,
                              use_dictionary=[c for c in LABEL_COLUMNS if c != "item_id"]) as writer, \
                ThreadPoolExecutor(max_workers=workers) as labelling, ThreadPoolExecutor(max_workers=1) as writing_:
            labelled_groups: deque = deque()
            written = None

            def take_next() -> None:
                nonlocal written, rows
                table, views, height = labelled_groups.popleft().result()
                if written is not None:
                    written.result()
                written = writing_.submit(writer.write_table, table)
                for view, frame in views.items():
                    counts.setdefault(view, []).append(frame)
                rows += height

            for job in jobs:
                labelled_groups.append(labelling.submit(label_group, job))
                if len(labelled_groups) > workers:
                    take_next()
            while labelled_groups:
                take_next()
            if written is not None:
                written.result()
        os.replace(tmp, labels_path)
    finally:
        tmp.unlink(missing_ok=True)
    merged = {}
    for view, parts in counts.items():
        frame = pl.concat(parts, how="diagonal_relaxed")
        merged[view] = frame if view == "rows" else (
            frame.group_by([c for c in frame.columns if c != "count"]).agg(pl.col("count").sum()))
    return merged, rows


def _dictionary(labels: pl.Series) -> pa.DictionaryArray:
    """A label column as an Arrow dictionary of plain strings: from its codes where it is an Enum."""
    if isinstance(labels.dtype, pl.Enum):
        codes = labels.to_physical().cast(pl.Int32).to_arrow()
        return pa.DictionaryArray.from_arrays(codes, _strings(labels.dtype.categories))
    return labels.cast(pl.String).to_arrow().dictionary_encode().cast(pa.dictionary(pa.int32(), pa.string()))


def _repeated(value: str, n: int) -> pa.DictionaryArray:
    """``value`` on ``n`` rows, as a dictionary of one value."""
    return pa.DictionaryArray.from_arrays(pl.zeros(n, pl.Int32, eager=True).to_arrow(), _strings(pl.Series([value])))


def _strings(values: pl.Series) -> pa.Array:
    """Strings as an Arrow array, made by polars (pyarrow would import pandas to look at a list)."""
    return values.cast(pl.String).to_arrow().cast(pa.string())


BATCH_ROWS = 65_536  # labelling holds ~1.4 KB a row: ~90 MB a group, under any run of 100 k items or more


def _columns_for(suite: str, keys: dict[str, list[str]]) -> list[str]:
    """The shard columns a rule-set suite's labelling and counts use: what labels.parquet keeps, what
    its views group by, and the target language where the suite has more than one. Not the suite:
    every row of a suite's shards has its name (reading it costs as much as reading the system)."""
    wanted = {"system", "item_id", "translation", "error"} | {k for view in keys.values() for k in view if k != "suite"}
    if len(SUITES.get(suite).targets) > 1:
        wanted.add("tgt_lang")
    return [c for c in LABEL_INPUT if c in wanted]


def _read_shards(group: list, columns: list[str], shards: Folder | None) -> pl.DataFrame:
    """A group of shard files as one frame; a file that cannot be read is named in the error."""
    try:
        return shards.read_frame(group, columns) if shards is not None else pl.read_parquet(group, columns=columns)
    except Exception:  # noqa: BLE001 - find the file at fault, each checked against its page checksums
        for path in group:
            try:
                if shards is not None:
                    shards.read_table([path], columns, verify=True)
                else:
                    pq.read_table(path, columns=columns, page_checksum_verification=True)
            except Exception as exc:  # noqa: BLE001
                where = shards.uri(path) if shards is not None else str(path)
                raise RunDirError(f"{where}: damaged ({type(exc).__name__}: {str(exc).strip()[:300]}); rerun the "
                                  f"sweep with the same --out to write it again") from None
        raise


def _groups(paths: list, shards: Folder | None = None) -> list[list]:
    """Consecutive files, about BATCH_ROWS rows a group (from the files' metadata)."""
    groups, current, rows = [], [], 0
    for path in paths:
        n = shards.parquet_metadata(path).num_rows if shards is not None else pq.read_metadata(path).num_rows
        if current and rows + n > BATCH_ROWS:
            groups.append(current)
            current, rows = [], 0
        current.append(path)
        rows += n
    return groups + ([current] if current else [])


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


def _signature(detector, tgt: str) -> str:
    return detector.signature_for(tgt) if isinstance(detector, EntityAlignment) else detector.signature


def score_run(run: RunDir) -> pl.DataFrame:
    """(Re)compute labels.parquet and metrics.parquet of a finished run; returns the metrics."""
    plan = RunPlan.of(run)
    info = run.read_run()
    config = plan.config
    with writing(run.labels):  # no space left: named here (the Parquet writer's error names no file)
        counts, _ = label_and_count(shard_paths(run, plan), config, run.labels, run.items, run.shards)
    frames = [compute_metrics(counts, config), pairwise_metrics(run, config), control_metrics(run, config)]
    if "rows" in counts and counts["rows"].height:
        frames.append(embedding_outputs(run, counts["rows"], config, Path(info["config_dir"])))
    metrics = with_provenance(pl.concat(frames), info, config)
    write_parquet_atomic(metrics.to_arrow(), run.metrics)
    return metrics


def item_outcomes(run: RunDir, suite: str) -> pl.DataFrame:
    """Per item × system of one suite: the binary outcome paired tests compare (metrics/paired.py)."""
    gold = pl.scan_parquet(run.items).filter(pl.col("suite") == suite).select("item_id", "gold")
    return (pl.scan_parquet(run.labels).filter(pl.col("suite") == suite).select("system", "item_id", "label")
            .join(gold, on="item_id", how="left")
            .select("item_id", "system", outcome(pl.col("label"), pl.col("gold")).alias("outcome"))
            .collect())


def pairwise_metrics(run: RunDir, config: RunConfig) -> pl.DataFrame:
    """McNemar's test between every pair of systems on each suite's items (not for word lists)."""
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
    return control(control_counts(rows), requests, baselines, **_stats(config.metrics))


def embedding_outputs(run: RunDir, rows: pl.DataFrame, config: RunConfig, config_dir: Path) -> pl.DataFrame:
    """The embedding-bias study of the run's word-list suites: its tables written beside the other
    results (the report draws its plots); returns its metrics."""
    from biaseval.metrics.embedding_study import study

    result = study(rows, config, config_dir)
    write_parquet_atomic(result.features.to_arrow(), run.root / "embedding_bias.parquet")
    write_parquet_atomic(result.bins.to_arrow(), run.root / "embedding_bins.parquet")
    write_parquet_atomic(result.shift.to_arrow(), run.root / "gender_shift.parquet")
    return result.metrics
