"""The monitor's store: where runs, history and status live, reading them back, finding a system's
previous measured run, and appending one run's rows.

History and status are append-only Parquet datasets in a folder or object storage
(``monitor.history.location``, default the store): each run adds ``history/part-<run>.parquet`` and
``status/part-<run>.parquet``, written whole or not at all. Once more than ``compact_after`` parts
have gathered, they and any earlier compacted file are rewritten as one ``compact-<run>.parquet``
(rows older than ``retention_days`` dropped) and then deleted. Readers take every file and keep one
row per key, so a reader that lands between the write and the deletes sees each row once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

from biaseval.config import RunConfig, load_config
from biaseval.config.paths import history_location, monitor_store
from biaseval.errors import ConfigError
from biaseval.monitor.verdict import MEASURED, SystemDrift
from biaseval.names import key, under
from biaseval.run.filesystem import Folder, StoreOptions
from biaseval.run.rundir import RunDir

KEYS = {"history": ["run_id", "system", "suite", "subset", "metric"], "status": ["run_id", "system"]}


def store_dirs(config: RunConfig, config_dir: Path) -> tuple[Path, "History"]:
    """The folder of the monitoring runs' directories, and the history datasets."""
    store = monitor_store(config.monitor, config_dir)
    where = history_location(config.monitor, config_dir)
    return store / "runs", History(Folder(where or str(store), StoreOptions.of(config)), config.monitor.history)


def run_folder(runs_dir: Path, run_id: str) -> Path:
    """A monitoring run's directory in the store: ``runs/<run id>``, one folder under ``runs_dir``
    whatever the id (one read back from a tampered status table included)."""
    return under(runs_dir, run_id)


class History:
    """The ``history`` and ``status`` datasets under one folder (local or remote)."""

    def __init__(self, folder: Folder, settings) -> None:
        self.folder = folder
        self.retention_days = settings.retention_days
        self.compact_after = settings.compact_after

    def files(self, kind: str) -> list[str]:
        return [f for f in self.folder.files(kind) if f.endswith(".parquet")]

    def read(self, kind: str = "history") -> pl.DataFrame | None:
        """Every row of ``history`` or ``status`` once, oldest first; None before the first run."""
        files = self.files(kind)
        if not files:
            return None
        frames = [self.folder.read_frame([f]) for f in files]
        table = pl.concat(frames, how="diagonal_relaxed").unique(KEYS[kind], keep="first", maintain_order=True)
        return table.sort("created_at", maintain_order=True)

    def append(self, kind: str, run_id: str, table: pl.DataFrame, now: datetime) -> None:
        self.folder.write_parquet(key(kind, f"part-{run_id}.parquet"), table.to_arrow())
        if sum(Path(f).name.startswith("part-") for f in self.files(kind)) > self.compact_after:
            self.compact(kind, run_id, now)

    def compact(self, kind: str, run_id: str, now: datetime) -> int:
        """All files of ``kind`` rewritten as one (within the retention); returns the rows kept."""
        before = self.files(kind)
        table = self.read(kind)
        if table is None:
            return 0
        if self.retention_days is not None:
            table = table.filter(pl.col("created_at") >= now - timedelta(days=self.retention_days))
        name = key(kind, f"compact-{run_id}.parquet")
        self.folder.write_parquet(name, table.to_arrow())
        for rel in before:
            if rel != name:
                self.folder.delete(rel)
        return table.height


def history(config_path: str | Path) -> pl.DataFrame | None:
    """The monitor's history (all runs so far), or None before the first."""
    config_path = Path(config_path)
    config = load_config(config_path)
    if config.monitor is None:
        raise ConfigError(f"{config_path}: no monitor: section")
    _, store = store_dirs(config, config_path.resolve().parent)
    return store.read("history")


def previous_run(status: pl.DataFrame | None, runs_dir: Path, system: str) -> RunDir | None:
    if status is None:
        return None
    measured = status.filter((pl.col("system") == system) & pl.col("status").is_in(list(MEASURED))).sort("created_at")
    for run_id in reversed(measured["run_id"].to_list()):
        run = RunDir(run_folder(runs_dir, run_id))
        if run.metrics.exists():
            return run
    return None


def history_rows(run_id: str, now: datetime, metrics: pl.DataFrame | None, systems: list[SystemDrift]) -> pl.DataFrame | None:
    """One history row per measured system × suite × subset × metric, with its change, test and p."""
    created = pl.lit(now).dt.replace_time_zone("UTC").cast(pl.Datetime("us", "UTC"))
    frames = []
    for s in systems:
        if s.status not in MEASURED or metrics is None:
            continue
        mine = metrics.filter((pl.col("system") == s.system) & ~pl.col("subset").str.starts_with("vs/")).select(
            "system", "suite", "subset", "metric", "value", "ci_low", "ci_high", "n")
        if s.changes is not None:
            mine = mine.join(s.changes.select("suite", "subset", "metric", "change", "change_low", "change_high",
                                              "test", "p", "p_adjusted", "significant"),
                             on=["suite", "subset", "metric"], how="left")
        p = {i["suite"]: i["mcnemar_p"] for i in s.suites}
        mine = mine.with_columns(
            pl.col("suite").replace_strict(p, default=None, return_dtype=pl.Float64).alias("mcnemar_p"),
            pl.lit(s.status).alias("status"), pl.lit(s.baseline_run).cast(pl.String).alias("baseline_run"),
        )
        frames.append(mine)
    if not frames:
        return None
    table = pl.concat(frames, how="diagonal_relaxed").with_columns(pl.lit(run_id).alias("run_id"),
                                                                   created.alias("created_at"))
    for column, dtype in (("change", pl.Float64), ("change_low", pl.Float64), ("change_high", pl.Float64),
                          ("test", pl.String), ("p", pl.Float64), ("p_adjusted", pl.Float64),
                          ("significant", pl.Boolean)):
        if column not in table.columns:
            table = table.with_columns(pl.lit(None, dtype=dtype).alias(column))
    return table


def append_history(store: History, run_id: str, now: datetime, metrics: pl.DataFrame | None,
                   systems: list[SystemDrift]) -> int:
    """One run's history rows and its status rows (one per system: measured, unavailable, ...)."""
    table = history_rows(run_id, now, metrics, systems)
    if table is not None:
        store.append("history", run_id, table, now)
    created = pl.lit(now).dt.replace_time_zone("UTC").cast(pl.Datetime("us", "UTC"))
    status = pl.DataFrame([{"run_id": run_id, "system": s.system, "status": s.status, "message": s.message,
                            "baseline": s.baseline} for s in systems]).with_columns(created.alias("created_at"))
    store.append("status", run_id, status, now)
    return 0 if table is None else table.height
