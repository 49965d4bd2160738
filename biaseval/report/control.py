"""The gender-control table (metrics/control.py) as plain data, for report.md and report.html: per
system asked for genders (a system with conditions, or one that declares ``requests`` itself), a
row per condition × suite × subset with control_acc, control_unknown and control_unasked (value and
interval) and n. Numbers only; markdown.py and tables.py format them."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from biaseval.metrics.control import CONTROL_METRICS


@dataclass(frozen=True)
class Share:
    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class ControlRow:
    system: str  # the system that was asked (azure[gender=female])
    condition: str  # its condition's name (gender=female), or "" for a system that asks by itself
    requests: str
    suite: str
    subset: str
    shares: dict[str, Share]  # metric (CONTROL_METRICS) -> its share; absent where there is none
    n: int | None


@dataclass(frozen=True)
class ControlTable:
    system: str  # the unconditioned system (azure), or the system that asks by itself
    rows: tuple[ControlRow, ...]


def control_tables(metrics: pl.DataFrame, systems: dict[str, dict]) -> list[ControlTable]:
    """One table per system asked for genders, in the config's order; ``systems``: the run config's
    systems (run.json ``config.systems``: ``requests``, ``condition_of``)."""
    rows = metrics.filter(pl.col("metric").is_in(CONTROL_METRICS))
    if rows.height == 0:
        return []
    cells = {(r["system"], r["suite"], r["subset"], r["metric"]): r for r in rows.iter_rows(named=True)}
    keys = rows.select("system", "suite", "subset").unique()
    asked = {name: cfg for name, cfg in systems.items() if cfg.get("requests")}
    tables: dict[str, list[ControlRow]] = {}
    for name, cfg in asked.items():
        base = cfg.get("condition_of") or name
        condition = name[len(base) + 1:-1] if cfg.get("condition_of") else ""
        for _, suite, subset in keys.filter(pl.col("system") == name).sort("suite", "subset").iter_rows():
            shares = {m: Share(c["value"], c["ci_low"], c["ci_high"]) for m in CONTROL_METRICS
                      if (c := cells.get((name, suite, subset, m))) is not None}
            first = cells.get((name, suite, subset, "control_acc"))
            tables.setdefault(base, []).append(ControlRow(name, condition, cfg["requests"], suite, subset, shares,
                                                          first["n"] if first else None))
    return [ControlTable(base, tuple(rows)) for base, rows in tables.items()]

