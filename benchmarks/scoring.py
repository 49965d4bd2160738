"""The scoring benchmark: labels and metrics of the paper's recorded outputs, copied to about 2 M
rows and stored as a sweep stores them, against per-line Python doing the same work."""

from __future__ import annotations

import math
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
PAPER = REPO / "conf" / "paper.yaml"


def recorded_translations() -> tuple[pl.DataFrame, object]:
    """All recorded outputs of the paper config, translated in-process (no Ray)."""
    from biaseval.config import load_config
    from biaseval.run.plan import build_translator, prepare
    from biaseval.run.rows import translation_table

    config = load_config(PAPER)
    prepared = prepare(config, PAPER.parent)
    parts = []
    for system, suites in prepared.coverage.items():
        items = pl.concat([prepared.suites[s].slice(0, prepared.suites[s].size) for s in suites])
        out = build_translator(system, config.systems[system], PAPER.parent).translate_items(items)
        parts.append(pl.from_arrow(translation_table(items, out, system, "bench", "bench")))
    return pl.concat(parts), config


def sample_rows(paths: list[Path], limit: int) -> list[dict]:
    """``limit`` rows drawn evenly from all suites, as Python dicts (the in-memory baseline's input)."""
    columns = ["system", "suite", "subset", "gold", "translation"]
    table = pa.concat_tables([pq.read_table(p, columns=columns) for p in paths])
    return table.take(sorted(random.Random(0).sample(range(table.num_rows), limit))).to_pylist()


def python_baseline(rows: list[dict], config) -> dict:
    """The same labels and point metrics (no intervals), one line at a time in plain Python."""
    from biaseval.label.rules import label_text

    rules = {s: config.detector_for(s, "en") for s in config.suites}  # the paper suites translate into English
    counts: Counter = Counter()
    for row in rows:
        label = label_text(rules[row["suite"]], row["translation"])
        label = "neutral" if label == "ambiguous" else label
        counts[(row["system"], row["suite"], row["subset"], label, row["gold"])] += 1
    return _shares(counts)


def _shares(counts: Counter) -> dict:
    totals: Counter = Counter()
    for (system, suite, subset, label, _), n in counts.items():
        totals[(system, suite, subset)] += n
    shares: dict = {}
    for (system, suite, subset, label, _), n in counts.items():
        shares[(system, suite, subset, label)] = shares.get((system, suite, subset, label), 0) + n / totals[(system, suite, subset)]
    return shares


def python_from_parquet(paths: list[Path], config, labels_path: Path) -> tuple[int, dict]:
    """What `_score` does without intervals, each text labelled and counted in a Python loop: read the
    shard files, label each text, write labels.parquet (the same columns; the columns that are only
    copied are handed over as Arrow arrays), count and compute the point shares; (rows, shares)."""
    from biaseval.label.rules import label_text
    from biaseval.metrics.labelling import LABEL_COLUMNS

    rules = {s: config.detector_for(s, "en") for s in config.suites}
    counts: Counter = Counter()
    tables = []
    for path in paths:
        table = pq.read_table(path, columns=["system", "suite", "subset", "item_id", "gold", "translation", "error"])
        labels = []
        for system, suite, subset, gold, text in zip(*table.select(["system", "suite", "subset", "gold",
                                                                    "translation"]).to_pydict().values()):
            label = label_text(rules[suite], text)
            labels.append(label)
            counts[(system, suite, subset, "neutral" if label == "ambiguous" else label, gold)] += 1
        none = pa.nulls(table.num_rows, pa.string())
        columns = {"label": pa.array(labels, pa.string()), "reason": none, "evidence": none}
        tables.append(pa.table({c: columns[c] if c in columns else table[c] for c in LABEL_COLUMNS}))
    pq.write_table(pa.concat_tables(tables), labels_path, compression="zstd")
    return sum(t.num_rows for t in tables), _shares(counts)


def _score(paths: dict[str, list[Path]], config) -> tuple[int, int, float, float]:
    """Label and score the shard files as `biaseval score` does (labels.parquet written, metrics from
    the label counts); (rows, metric rows, seconds, CPU seconds of all threads)."""
    from biaseval.metrics.labelling import label_and_count
    from biaseval.metrics.scoring import compute_metrics

    start, cpu = time.perf_counter(), time.process_time()
    labels = next(iter(paths.values()))[0].with_name("labels.parquet")
    counts, rows = label_and_count(paths, config, labels)
    metrics = compute_metrics(counts, config)
    return rows, metrics.height, time.perf_counter() - start, time.process_time() - cpu


def _median(runs: list[tuple]) -> tuple:
    """The run with the median wall time."""
    return sorted(runs, key=lambda r: r[2])[len(runs) // 2]


def bench_scoring(rows_target: int) -> None:
    base, config = recorded_translations()
    copies = math.ceil(rows_target / base.height)
    big = pl.concat([base.with_columns((pl.col("system") + f"-{k}").alias("system")) for k in range(copies)])
    no_intervals = config.model_copy(update={"metrics": config.metrics.model_copy(update={"bootstrap": 1})})
    with tempfile.TemporaryDirectory() as tmp:
        paths: dict[str, list[Path]] = {}
        for suite in config.suites:  # stored as a sweep stores them: per suite, in shards of 20,000 rows
            part = big.filter(pl.col("suite") == suite)
            for k, start in enumerate(range(0, part.height, 20_000)):
                path = Path(tmp) / f"{suite}-{k:05d}.parquet"
                part.slice(start, 20_000).write_parquet(path)
                paths.setdefault(suite, []).append(path)
        del big
        _score(paths, no_intervals)  # warm-up (thread pools, regex compilation), not reported
        # each timed three times, the median kept: one run of half a second moves by a third on this VM
        n, metric_rows, full, full_cpu = _median([_score(paths, config) for _ in range(3)])
        _, _, point, point_cpu = _median([_score(paths, no_intervals) for _ in range(3)])
        files = [p for group in paths.values() for p in group]
        rows = sample_rows(files, min(n, 200_000))
        start = time.perf_counter()  # the in-memory baseline's reading is not timed
        python_baseline(rows, config)
        slow = time.perf_counter() - start
        start, cpu = time.perf_counter(), time.process_time()  # like for like: the same shard files
        lines, _ = python_from_parquet(files, config, Path(tmp) / "python-labels.parquet")
        alike, alike_cpu = time.perf_counter() - start, time.process_time() - cpu
        fast = pl.read_parquet(files[0].with_name("labels.parquet"), columns=["system", "suite", "item_id", "label"])
        slow_labels = pl.read_parquet(Path(tmp) / "python-labels.parquet", columns=["system", "suite", "item_id", "label"])
        differ = slow_labels.join(fast, on=["system", "suite", "item_id"], how="left", suffix="_fast").filter(
            pl.col("label").ne_missing(pl.col("label_fast"))).height
        if differ:
            raise SystemExit(f"scoring benchmark: per-line Python and scoring disagree on {differ:,} labels")
    full_rate, point_rate, slow_rate, alike_rate = n / full, n / point, len(rows) / slow, lines / alike
    print(f"scoring: {n:,} rows from Parquet -> labels + {metric_rows:,} metric rows with "
          f"{config.metrics.bootstrap}-replicate bootstrap CIs in {full:.2f} s ({full_cpu:.2f} s CPU; median of 3) = "
          f"{full_rate / 1e6:.2f} M rows/s (target 2 M: ratio {full_rate / 2e6:.2f})")
    print(f"scoring without intervals: {point:.2f} s ({point_cpu:.2f} s CPU; median of 3) = {point_rate / 1e6:.2f} M rows/s; "
          f"per-line Python doing the same (reads the shards, writes labels.parquet, counts; {lines:,} rows): "
          f"{alike_rate / 1e6:.3f} M rows/s; speed-up {point_rate / alike_rate:.1f}x (target 20x: ratio "
          f"{point_rate / alike_rate / 20:.2f}); in CPU time {(n / point_cpu) / (lines / alike_cpu):.1f}x. "
          f"Per-line Python on rows already in memory, labels and counts only ({len(rows):,} rows): "
          f"{slow_rate / 1e6:.3f} M rows/s, {point_rate / slow_rate:.1f}x")
