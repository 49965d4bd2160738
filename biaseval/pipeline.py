"""The whole job in three calls: translate (sweep), score, report. The CLI and jobs/ call these."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from biaseval.config import load_config
from biaseval.errors import DiskFullError
from biaseval.metrics.scoring import score_run
from biaseval.report import published as published_results
from biaseval.report.examples import load as load_examples
from biaseval.report.gest import write_charts as gest_charts
from biaseval.report.html import render_html, set_genders, system_names
from biaseval.report.markdown import read_failures, read_reasons, render
from biaseval.report.plots import embedding_scatter, system_colours
from biaseval.report.summary import plain as summary_plain
from biaseval.report.summary import summary as run_summary
from biaseval.run.driver import SweepResult, run_translations
from biaseval.run.filesystem import StoreOptions, os_error
from biaseval.run.lock import run_lock
from biaseval.run.plan import prepare
from biaseval.run.rundir import RunDir, write_text_atomic


@dataclass
class RunSummary:
    run: RunDir
    sweep: SweepResult
    metrics: pl.DataFrame
    seconds: float


def load(config_path: str | Path, systems: list[str] | None = None):
    """The validated config (optionally narrowed to some systems) and its prepared items."""
    config = _config(config_path, systems)
    return config, prepare(config, Path(config_path).resolve().parent)


def _config(config_path: str | Path, systems: list[str] | None):
    config = load_config(Path(config_path))
    return config.select_systems(systems) if systems else config


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
        words = pl.read_parquet(run.root / "embedding_bias.parquet")
        embedding_scatter(words, run.root / "plots")
        embedding = {"bins": pl.read_parquet(run.root / "embedding_bins.parquet"),
                     "shift": pl.read_parquet(run.root / "gender_shift.parquet"),
                     "words": words,
                     "plots": sorted(str(p.relative_to(run.root)) for p in (run.root / "plots").glob("embedding-*.png"))}
    reasons = read_reasons(run.labels, run.items) if run.items.exists() else None
    examples = load_examples(run.examples)
    charts = gest_charts(run.root, metrics, system_colours(system_names(info, metrics, history)))
    write_text_atomic(run.report, render(metrics, info, published, failures, embedding, reasons,
                                         set_gold=set_genders(run), examples=examples, charts=charts))
    write_text_atomic(run.root / "report.html", render_html(run.root, history))
    return run.report


def summary_lines(run: RunDir, metrics: pl.DataFrame) -> list[str]:
    """The summary both reports open with (report/summary.py), as plain text for the terminal: a
    table per group of columns, a row per system, each value with its 95% interval; empty when no
    suite of the run has headline metrics (an embedding study)."""
    info = run.read_run()
    config = info["config"]
    name = config.get("published")
    published = published_results.load(name) if name else None
    systems = list(info.get("systems", {})) + sorted(set(metrics["system"].to_list()) - set(info.get("systems", {})))
    suites = list(dict.fromkeys([*config.get("suites", []), *metrics["suite"].to_list()]))
    result = run_summary(metrics, suites, systems, published_results.published_values(published), set_genders(run))
    if not result.tables:
        return []
    published_note = f"; beside them, {published.cite}'s values" if published else ""
    return [f"summary (95% intervals; letters: systems sharing none differ on the same items{published_note}):",
            "", *summary_plain(result)]


def score(out: str | Path, options: StoreOptions | None = None, *, report: bool = True) -> pl.DataFrame:
    """Labels, metrics and (unless ``report`` is False) reports of a run (local folder or object-store
    URI), published to its location when that is remote. Holds the run's lock (run/lock.py)."""
    run = RunDir(out, options)
    run.check_writable()
    with run_lock(out, options), _full_disk_named(out):
        run.sync()
        metrics = score_run(run)
        if report:
            write_report(run, metrics)
        run.publish()
    return metrics


def sweep(config_path: str | Path, out: str | Path, *, systems: list[str] | None = None,
          address: str | None = None, refresh: bool = False, die_after: int | None = None,
          stream=sys.stderr, report: bool = True, run_id: str | None = None, verbose: bool = False) -> RunSummary:
    """Validate everything, translate what is not finished yet, then score and report. ``run_id``:
    the id of a new run (default: a fresh one). Progress goes to ``stream``; Ray's own warnings and
    its workers' output only with ``verbose``."""
    start = time.monotonic()
    config_path = Path(config_path)
    config = _config(config_path, systems)
    options = StoreOptions.of(config)
    RunDir(out, options).check_writable()  # before any work: a read-only --out, a file in the way
    with run_lock(out, options, stream=stream, run_id=run_id), _full_disk_named(out):
        prepared = prepare(config, config_path.resolve().parent)
        result = run_translations(prepared, out, config_path, address=address, refresh=refresh,
                                  die_after=die_after, stream=stream, run_id=run_id, verbose=verbose)
        del prepared  # its plan (keys per item) is not needed to score: scoring reads the run
        metrics = score(out, options, report=report)
    return RunSummary(result.run, result, metrics, time.monotonic() - start)


@contextmanager
def _full_disk_named(out: str | Path):
    """A write that found no space left and was not reported yet (pyarrow's errors name no file) is
    reported naming its file, or else the run."""
    try:
        yield
    except OSError as exc:
        error = os_error(exc, exc.filename or f"a file of the run {out}")
        if not isinstance(error, DiskFullError):
            raise
        raise error from exc
