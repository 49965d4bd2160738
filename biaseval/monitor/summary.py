"""What a monitoring run leaves in its directory: the summary document (drift.json), drift.md and
the flips table (the notification is ``notify``'s)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import polars as pl

from biaseval.config import MonitorConfig
from biaseval.monitor.verdict import SystemDrift
from biaseval.report.escape import md, row
from biaseval.run.rundir import RunDir, write_parquet_atomic, write_text_atomic


def summarise(run_id: str, now: datetime, systems: list[SystemDrift], alarm: bool, out: Path | None,
              monitor: MonitorConfig, family: int = 0) -> dict:
    return {
        "run_id": run_id, "created_at": now.isoformat(timespec="seconds"), "alarm": alarm,
        "run_dir": str(out) if out else None,
        "statistics": {"tests": family, "correction": monitor.correction, "alpha": monitor.alpha,
                       "power": monitor.power, "churn": monitor.churn, "threshold": monitor.threshold},
        "systems": [{
            "system": s.system, "status": s.status, "message": s.message, "baseline": s.baseline,
            "significant_changes": (s.changes.filter(pl.col("significant")).select(
                "suite", "subset", "metric", "value", "baseline_value", "change", "change_low", "change_high",
                "test", "p", "p_adjusted").to_dicts()
                if s.changes is not None else []),
            "suites": s.suites,
        } for s in systems],
    }


def write_drift(run: RunDir, systems: list[SystemDrift], summary: dict, monitor: MonitorConfig) -> None:
    """drift.json, drift.md and drift/flips.parquet in the monitoring run's directory."""
    write_text_atomic(run.root / "drift.json", json.dumps(summary, indent=2, default=str) + "\n")
    flips = [s.flips.with_columns(pl.lit(s.system).alias("system"), pl.lit(s.baseline).alias("baseline"))
             for s in systems if s.flips is not None and s.flips.height]
    if flips:
        write_parquet_atomic(pl.concat(flips).to_arrow(), run.root / "drift" / "flips.parquet")
    write_text_atomic(run.root / "drift.md", drift_markdown(systems, summary, monitor))


def drift_markdown(systems: list[SystemDrift], summary: dict, monitor: MonitorConfig) -> str:
    stats = summary["statistics"]
    how = {"bh": "Benjamini–Hochberg (false discovery rate)", "holm": "Holm (family-wise error)",
           "none": "no correction"}[monitor.correction]
    lines = [f"# Drift: {md(summary['run_id'])}", "",
             f"Alarm: **{'yes' if summary['alarm'] else 'no'}** (a watched metric changed by at least "
             f"{monitor.threshold:g} with its adjusted p < {monitor.alpha:g}, or a suite's McNemar adjusted p < "
             f"{monitor.alpha:g} with at least {monitor.threshold:.0%} of the items flipped). The run made "
             f"{stats['tests']} tests, corrected together by {how}.", ""]
    for s in systems:
        lines += [f"## {md(s.system)}: {md(s.status)}", ""]
        if s.message:
            lines += [md(s.message), ""]
        if s.baseline:
            lines += [f"Baseline: {md(s.baseline)}", ""]
        if s.suites:
            lines += ["| suite | items | labels flipped | better / worse | McNemar p (adjusted) | labels p | "
                      "detectable change | text changed |", "|---|---|---|---|---|---|---|---|"]
            for i in s.suites:
                lines.append(row(i["suite"], i["items"], f"{i['flipped']} ({i['flipped_share']:.1%})",
                                 f"{i['better']} / {i['worse']}",
                                 f"{i['mcnemar_p']:.3g} ({i['mcnemar_p_adjusted']:.3g})", f"{i['labels_p']:.3g}",
                                 f"{100 * i['detectable_change']:.1f} pts", f"{i['text_changed_share']:.1%}"))
            level = monitor.alpha if monitor.correction == "none" else monitor.alpha / max(stats["tests"], 1)
            lines += ["", f"Detectable change: the smallest shift of the outcome (items turning from right to wrong) "
                          f"that this run catches with probability {monitor.power:g}: McNemar's exact test on these "
                          f"items at {level:.3g} (alpha {monitor.alpha:g} over the run's {stats['tests']} tests), with "
                          f"churn {monitor.churn:g}; never below the threshold ({monitor.threshold:g}).", ""]
        if s.changes is not None and s.changes.height:
            watched = s.changes.filter(pl.col("metric").is_in(list(monitor.watch))).sort(
                "significant", pl.col("change").abs(), descending=True)
            lines += ["| suite | subset | metric | baseline | now | change [95% CI] | test | p | adjusted p | significant |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
            for r in watched.head(40).iter_rows(named=True):
                lines.append(row(r["suite"], r["subset"], r["metric"], f"{r['baseline_value']:.4f}", f"{r['value']:.4f}",
                                 f"{r['change']:+.4f} [{r['change_low']:+.4f}, {r['change_high']:+.4f}]", r["test"],
                                 _p(r["p"]), _p(r["p_adjusted"]), "**yes**" if r["significant"] else ""))
            lines.append("")
        if s.flips is not None and s.flips.height:
            lines += [f"Flipped labels (first {monitor.flips_in_report} of {s.flips.height}):", "",
                      "| suite | item | baseline label | now | baseline translation | translation now |",
                      "|---|---|---|---|---|---|"]
            for r in s.flips.head(monitor.flips_in_report).iter_rows(named=True):
                lines.append(row(r["suite"], r["item_id"], r["label_base"], r["label"], r["translation_base"] or "",
                                 r["translation"] or ""))
            lines.append("")
    return "\n".join(lines) + "\n"


def _p(p: float | None) -> str:
    return "—" if p is None or p != p else f"{p:.3g}"
