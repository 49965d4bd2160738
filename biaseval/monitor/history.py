"""The monitor's store: where runs, history and status live, reading them back, finding a system's
previous measured run, and appending one run's rows."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import polars as pl

from biaseval.config import RunConfig, load_config
from biaseval.errors import ConfigError
from biaseval.monitor.verdict import MEASURED, SystemDrift
from biaseval.run.rundir import RunDir, write_parquet_atomic


def store_dirs(config: RunConfig, config_dir: Path) -> tuple[Path, Path, Path]:
    store = Path(config.monitor.store)
    store = store if store.is_absolute() else config_dir / store
    return store / "runs", store / "history", store / "status"


def read_parts(folder: Path) -> pl.DataFrame | None:
    parts = sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []
    return pl.read_parquet(parts) if parts else None


def history(config_path: str | Path) -> pl.DataFrame | None:
    """The monitor's history (all runs so far), or None before the first."""
    config_path = Path(config_path)
    config = load_config(config_path)
    if config.monitor is None:
        raise ConfigError(f"{config_path}: no monitor: section")
    _, history_dir, _ = store_dirs(config, config_path.resolve().parent)
    return read_parts(history_dir)


def previous_run(status: pl.DataFrame | None, runs_dir: Path, system: str) -> RunDir | None:
    if status is None:
        return None
    measured = status.filter((pl.col("system") == system) & pl.col("status").is_in(list(MEASURED))).sort("created_at")
    for run_id in reversed(measured["run_id"].to_list()):
        run = RunDir(runs_dir / run_id)
        if run.metrics.exists():
            return run
    return None


def append_history(history_dir: Path, status_dir: Path, run_id: str, now: datetime, metrics: pl.DataFrame | None,
                   systems: list[SystemDrift]) -> int:
    """One history row per measured system × suite × subset × metric; one status row per system."""
    created = pl.lit(now).dt.replace_time_zone("UTC").cast(pl.Datetime("us", "UTC"))
    frames = []
    for s in systems:
        if s.status not in MEASURED or metrics is None:
            continue
        mine = metrics.filter((pl.col("system") == s.system) & ~pl.col("subset").str.starts_with("vs/")).select(
            "system", "suite", "subset", "metric", "value", "ci_low", "ci_high", "n")
        if s.changes is not None:
            mine = mine.join(s.changes.select("suite", "subset", "metric", "change", "change_low", "change_high",
                                              "significant"), on=["suite", "subset", "metric"], how="left")
        p = {i["suite"]: i["mcnemar_p"] for i in s.suites}
        mine = mine.with_columns(
            pl.col("suite").replace_strict(p, default=None, return_dtype=pl.Float64).alias("mcnemar_p"),
            pl.lit(s.status).alias("status"), pl.lit(s.baseline_run).cast(pl.String).alias("baseline_run"),
        )
        frames.append(mine)
    rows = 0
    if frames:
        table = pl.concat(frames, how="diagonal_relaxed").with_columns(pl.lit(run_id).alias("run_id"),
                                                                       created.alias("created_at"))
        for column in ("change", "change_low", "change_high"):
            if column not in table.columns:
                table = table.with_columns(pl.lit(None, dtype=pl.Float64).alias(column))
        if "significant" not in table.columns:
            table = table.with_columns(pl.lit(None, dtype=pl.Boolean).alias("significant"))
        write_parquet_atomic(table.to_arrow(), history_dir / f"part-{run_id}.parquet")
        rows = table.height
    status = pl.DataFrame([{"run_id": run_id, "system": s.system, "status": s.status, "message": s.message,
                            "baseline": s.baseline} for s in systems]).with_columns(created.alias("created_at"))
    write_parquet_atomic(status.to_arrow(), status_dir / f"part-{run_id}.parquet")
    return rows
