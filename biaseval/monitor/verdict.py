"""What a monitoring run decides, per system and as a whole: the exit statuses, the statuses that
count as a measurement, and the result objects the other monitor modules pass around.

Exit status (docs/monitoring.md): 5 drift (a significant change), 7 a model changed with no
significant change, 6 a system could not be measured and neither of those happened, 0 otherwise;
10 is added when a notification that was due could not be delivered (15, 17, 16 or 10), so a
scheduler that only reads the exit status still learns that nobody was told.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from biaseval.run.rundir import RunDir

EXIT_DRIFT, EXIT_UNAVAILABLE, EXIT_MODEL_CHANGED = 5, 6, 7
EXIT_NOT_DELIVERED = 10  # added to the status above
MEASURED = ("ok", "drift", "no baseline", "model changed")
# the run's verdict is its most severe system status, in this order, with its exit status
SEVERITY = (("drift", EXIT_DRIFT), ("model changed", EXIT_MODEL_CHANGED), ("unavailable", EXIT_UNAVAILABLE))


@dataclass
class SystemDrift:
    system: str
    status: str  # ok, drift, model changed, no baseline, unavailable
    message: str = ""
    baseline: str = ""  # what it was compared with
    baseline_run: str | None = None
    changes: pl.DataFrame | None = None  # per metric
    suites: list[dict] = field(default_factory=list)  # per suite: mcnemar, flips, text changed
    flips: pl.DataFrame | None = None
    models: dict | None = None  # what the provider reported this run: {"model": [...], "fingerprint": [...]}
    model_change: dict | None = None  # reported models differ from the baseline's (events.model_change)
    recovered: dict | None = None  # unavailable in the previous run, measured now (events.recovery)


@dataclass
class MonitorResult:
    run: RunDir | None
    run_id: str
    systems: list[SystemDrift]
    alarm: bool
    exit_code: int
    history_rows: int
    summary: dict
    verdict: str = "ok"
    notified: bool = False  # a notification was due and sent (to every channel)
    undelivered: list[str] = field(default_factory=list)  # why each failed channel failed


def verdict(systems: list[SystemDrift]) -> tuple[str, int]:
    """The run's verdict (drift, model changed, unavailable or ok) and its exit status."""
    statuses = {s.status for s in systems}
    return next(((name, code) for name, code in SEVERITY if name in statuses), ("ok", 0))
