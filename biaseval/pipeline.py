"""The whole job in three calls: translate (sweep), score, report. The CLI and jobs/ call these."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from . import published as published_results
from .config import load_config
from .html_report import render_html
from .report import read_failures, read_reasons, render
from .scoring import score_run
from .storage import StoreOptions
from .store import RunDir, write_text_atomic
from .sweep import SweepResult, prepare, run_translations


@dataclass
class RunSummary:
    run: RunDir
    sweep: SweepResult
    metrics: pl.DataFrame
    seconds: float


def load(config_path: str | Path, systems: list[str] | None = None):
    """The validated config (optionally narrowed to some systems) and its prepared items."""
    config_path = Path(config_path)
    config = load_config(config_path)
    if systems:
        config = config.select_systems(systems)
    return config, prepare(config, config_path.resolve().parent)


def write_report(run: RunDir, metrics: pl.DataFrame | None = None, history: pl.DataFrame | None = None) -> Path:
    """report.md and the self-contained report.html (with drift trends when a history is given)."""
    info = run.read_run()
    if metrics is None:
        metrics = pl.read_parquet(run.metrics)
    name = info["config"].get("published")
    published = published_results.load(name) if name else None
    failures = read_failures(run.labels)
    embedding = None
    if (run.root / "embedding_bins.parquet").exists():
        embedding = {"bins": pl.read_parquet(run.root / "embedding_bins.parquet"),
                     "shift": pl.read_parquet(run.root / "gender_shift.parquet"),
                     "words": pl.read_parquet(run.root / "embedding_bias.parquet"),
                     "plots": sorted(str(p.relative_to(run.root)) for p in (run.root / "plots").glob("embedding-*.png"))}
    reasons = read_reasons(run.labels, run.items) if run.items.exists() else None
    write_text_atomic(run.report, render(metrics, info, published, failures, embedding, reasons))
    write_text_atomic(run.root / "report.html", render_html(run.root, history))
    return run.report


def score(out: str | Path, options: StoreOptions | None = None, *, report: bool = True) -> pl.DataFrame:
    """Labels, metrics and (unless ``report`` is False) reports of a run (local folder or object-store
    URI), published to its location when that is remote."""
    run = RunDir(out, options)
    run.sync()
    metrics = score_run(run)
    if report:
        write_report(run, metrics)
    run.publish()
    return metrics


def sweep(config_path: str | Path, out: str | Path, *, systems: list[str] | None = None,
          address: str | None = None, refresh: bool = False, die_after: int | None = None,
          stream=sys.stderr, report: bool = True, run_id: str | None = None) -> RunSummary:
    """Validate everything, translate what is not finished yet, then score and report. ``run_id``:
    the id of a new run (default: a fresh one)."""
    start = time.monotonic()
    config_path = Path(config_path)
    _, prepared = load(config_path, systems)
    result = run_translations(prepared, out, config_path, address=address, refresh=refresh,
                              die_after=die_after, stream=stream, run_id=run_id)
    metrics = score(out, prepared.config.store_options(), report=report)
    return RunSummary(result.run, result, metrics, time.monotonic() - start)
