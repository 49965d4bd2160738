"""What a monitoring run decides, per system and as a whole: the exit statuses, the statuses that
count as a measurement, and the result objects the other monitor modules pass around."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from biaseval.run.rundir import RunDir

EXIT_DRIFT, EXIT_UNAVAILABLE = 5, 6
MEASURED = ("ok", "drift", "no baseline")


@dataclass
class SystemDrift:
    system: str
    status: str  # ok, drift, no baseline, unavailable
    message: str = ""
    baseline: str = ""  # what it was compared with
    baseline_run: str | None = None
    changes: pl.DataFrame | None = None  # per metric
    suites: list[dict] = field(default_factory=list)  # per suite: mcnemar, flips, text changed
    flips: pl.DataFrame | None = None


@dataclass
class MonitorResult:
    run: RunDir | None
    run_id: str
    systems: list[SystemDrift]
    alarm: bool
    exit_code: int
    history_rows: int
    summary: dict
