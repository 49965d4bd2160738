"""Drift monitoring of MT systems: translate afresh, compare each system with its baseline, keep a
history, raise the alarm when bias moved — with the evidence.

``biaseval monitor --config conf/monitor.yaml`` runs the config's sweep into a new run directory of
the monitor's store (translations refreshed: the cache is bypassed), then, per system:

- availability: a system with more failed items than ``max_failed_share`` (a provider down or out
  of quota) is reported *unavailable* and neither compared nor written to the history as if it had
  been measured;
- its baseline: the previous monitoring run where it was measured (default), a named run
  (``{run: DIR}``), or another system of the config (``{system: name}``, e.g. recorded outputs);
- per metric, the change and its 95% interval, from the two runs' bootstrap intervals by the MOVER
  method (the runs taken as independent: conservative for the same items);
- per suite, McNemar's test on the items' binary outcome (correct, or neutral for gender-neutral
  sets), the list of items whose label flipped with both translations, and the share of outputs
  whose text changed at all.

A watched metric whose interval excludes 0 and whose change is at least ``threshold`` is a
significant change; so is a suite whose McNemar p is below ``alpha`` with at least ``threshold`` of
its items flipped. Any significant change raises the alarm: the summary goes to the notification
command and webhook, and the command exits 5 (6 when a system was unavailable and nothing drifted).

The store keeps ``runs/<run>/`` (full run directories), ``history/part-<run>.parquet`` (one row per
run × system × suite × subset × metric, append-only) and ``status/part-<run>.parquet`` (one row per
run × system: measured, unavailable, no baseline, and why).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from biaseval.config import MonitorConfig, RunConfig, load_config
from biaseval.errors import BiasevalError, ConfigError
from biaseval.metrics.paired import mcnemar_p, outcome
from biaseval.run.rundir import RunDir, system_folder, write_parquet_atomic, write_text_atomic
from biaseval.translate.credentials import redact

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


def mover(d: float, cur: tuple[float, float, float], base: tuple[float, float, float]) -> tuple[float, float]:
    """Interval of a difference of two independent estimates from their own intervals (MOVER)."""
    v_c, l_c, u_c = cur
    v_b, l_b, u_b = base
    if any(x is None or (isinstance(x, float) and math.isnan(x)) for x in (*cur, *base)):
        return float("nan"), float("nan")
    return d - math.sqrt((v_c - l_c) ** 2 + (u_b - v_b) ** 2), d + math.sqrt((u_c - v_c) ** 2 + (v_b - l_b) ** 2)


def metric_changes(current: pl.DataFrame, baseline: pl.DataFrame, monitor: MonitorConfig) -> pl.DataFrame:
    keys = ["suite", "subset", "metric"]
    cols = ["value", "ci_low", "ci_high", "n"]
    cur = current.filter(~pl.col("subset").str.starts_with("vs/")).select(*keys, *cols)
    base = baseline.filter(~pl.col("subset").str.starts_with("vs/")).select(*keys, *[pl.col(c).alias(f"{c}_base") for c in cols])
    joined = cur.join(base, on=keys, how="inner")
    rows = []
    for r in joined.iter_rows(named=True):
        d = r["value"] - r["value_base"]
        low, high = mover(d, (r["value"], r["ci_low"], r["ci_high"]), (r["value_base"], r["ci_low_base"], r["ci_high_base"]))
        significant = (r["metric"] in monitor.watch and not math.isnan(low) and (low > 0 or high < 0)
                       and abs(d) >= monitor.threshold)
        rows.append({**{k: r[k] for k in keys}, "value": r["value"], "baseline_value": r["value_base"], "change": d,
                     "change_low": low, "change_high": high, "significant": significant})
    return pl.DataFrame(rows, schema={"suite": pl.String, "subset": pl.String, "metric": pl.String, "value": pl.Float64,
                                      "baseline_value": pl.Float64, "change": pl.Float64, "change_low": pl.Float64,
                                      "change_high": pl.Float64, "significant": pl.Boolean})


def _items(run: RunDir, system: str, suite: str) -> pl.DataFrame:
    """item_id, subset, source, translation, label, gold of one system's outputs for one suite."""
    shards = run.shard_files(f"{system_folder(system)}/suite={suite}")
    texts = run.read_shards(shards, columns=["item_id", "subset", "source", "translation", "gold"])
    labels = pl.scan_parquet(run.labels).filter((pl.col("system") == system) & (pl.col("suite") == suite)) \
        .select("item_id", "label").collect()
    return texts.join(labels, on="item_id", how="left")


def item_drift(current: RunDir, system: str, baseline: RunDir, base_system: str, suite: str,
               monitor: MonitorConfig) -> tuple[dict, pl.DataFrame]:
    cur = _items(current, system, suite)
    base = _items(baseline, base_system, suite).select(
        "item_id", pl.col("translation").alias("translation_base"), pl.col("label").alias("label_base"))
    both = cur.join(base, on="item_id", how="inner").with_columns(
        outcome(pl.col("label"), pl.col("gold")).alias("ok"),
        outcome(pl.col("label_base"), pl.col("gold")).alias("ok_base"),
    )
    n = both.height
    scored = both.drop_nulls(["ok", "ok_base"])
    b = scored.filter(pl.col("ok") & ~pl.col("ok_base")).height  # better now
    c = scored.filter(~pl.col("ok") & pl.col("ok_base")).height  # worse now
    flips = both.filter(pl.col("label") != pl.col("label_base"))
    text_changed = both.filter(pl.col("translation") != pl.col("translation_base")).height
    p = mcnemar_p(b, c)
    share = flips.height / n if n else 0.0
    info = {"suite": suite, "items": n, "flipped": flips.height, "flipped_share": share, "better": b, "worse": c,
            "mcnemar_p": p, "text_changed_share": text_changed / n if n else 0.0,
            "significant": p < monitor.alpha and share >= monitor.threshold}
    flips = flips.select("item_id", "subset", "source", "translation_base", "translation", "label_base", "label",
                         pl.lit(suite).alias("suite"))
    return info, flips


def _previous(status: pl.DataFrame | None, runs_dir: Path, system: str) -> RunDir | None:
    if status is None:
        return None
    measured = status.filter((pl.col("system") == system) & pl.col("status").is_in(list(MEASURED))).sort("created_at")
    for run_id in reversed(measured["run_id"].to_list()):
        run = RunDir(runs_dir / run_id)
        if run.metrics.exists():
            return run
    return None


def run_monitor(config_path: str | Path, *, dry_run: bool = False, address: str | None = None,
                stream=sys.stderr) -> MonitorResult:
    from biaseval.pipeline import sweep
    from biaseval.run.driver import new_run_id

    config_path = Path(config_path)
    config = load_config(config_path)
    monitor = config.monitor
    if monitor is None:
        raise ConfigError(f"{config_path}: no monitor: section (store, baselines, threshold, notify)")
    config_dir = config_path.resolve().parent
    runs_dir, history_dir, status_dir = store_dirs(config, config_dir)
    now = datetime.now(timezone.utc)
    # One id for the whole monitoring run: its folder in the store, the sweep's run.json, metrics and
    # shards, drift.json, the notification, history and status rows (and later runs' baseline_run).
    run_id = new_run_id(config)
    out = runs_dir / run_id
    previous_status = read_parts(status_dir)

    baseline_only = {b["system"] for b in monitor.baselines.values() if isinstance(b, dict) and "system" in b}
    monitored = [s for s in config.systems if s not in baseline_only]
    run: RunDir | None = None
    sweep_error = ""
    try:
        summary = sweep(config_path, out, refresh=True, address=address, stream=stream, run_id=run_id)
        run = summary.run
    except BiasevalError as exc:
        sweep_error = redact(str(exc))

    systems: list[SystemDrift] = []
    metrics = pl.read_parquet(run.metrics) if run else None
    labels = pl.read_parquet(run.labels, columns=["system", "label", "error"]) if run else None
    for system in monitored:
        if run is None:
            systems.append(SystemDrift(system, "unavailable", f"the sweep failed: {sweep_error}"))
            continue
        mine = labels.filter(pl.col("system") == system)
        failed = mine.filter(pl.col("label").is_null())
        if mine.height and failed.height / mine.height > monitor.max_failed_share:
            first = failed["error"].drop_nulls().head(1).to_list()
            systems.append(SystemDrift(system, "unavailable",
                                       f"{failed.height} of {mine.height} items failed"
                                       + (f"; first error: {first[0]}" if first else "")))
            continue
        spec = monitor.baselines.get(system, "previous")
        if isinstance(spec, dict) and "system" in spec:
            base_run, base_system, described = run, spec["system"], f"system {spec['system']} (this run)"
        elif isinstance(spec, dict):
            base_run, base_system, described = RunDir(Path(spec["run"])), system, f"run {spec['run']}"
        else:
            base_run = _previous(previous_status, runs_dir, system)
            base_system, described = system, f"previous run {base_run.root.name}" if base_run else "previous run"
        if base_run is None or not base_run.metrics.exists():
            systems.append(SystemDrift(system, "no baseline", "first measurement: nothing to compare with yet",
                                       described))
            continue
        base_metrics = pl.read_parquet(base_run.metrics).filter(pl.col("system") == base_system)
        changes = metric_changes(metrics.filter(pl.col("system") == system), base_metrics, monitor)
        suite_info, flips = [], []
        for suite in config.suites:
            if suite in config.suites_of(system) and suite in _suites_of(base_run, base_system):
                info, f = item_drift(run, system, base_run, base_system, suite, monitor)
                suite_info.append(info)
                flips.append(f)
        drift = bool(changes["significant"].any()) or any(i["significant"] for i in suite_info)
        systems.append(SystemDrift(system, "drift" if drift else "ok", "", described,
                                   base_run.read_run()["run_id"], changes, suite_info,
                                   pl.concat(flips) if flips else None))

    alarm = any(s.status == "drift" for s in systems)
    unavailable = any(s.status == "unavailable" for s in systems)
    exit_code = EXIT_DRIFT if alarm else (EXIT_UNAVAILABLE if unavailable else 0)
    summary_doc = _summary(run_id, now, systems, alarm, out if run else None)
    rows = 0
    if run is not None:
        write_drift(run, systems, summary_doc, monitor)
    if not dry_run:
        rows = append_history(history_dir, status_dir, run_id, now, metrics, systems)
        if alarm:
            notify(monitor, summary_doc, stream)
    if run is not None:  # the report with the drift trends of the whole history
        from biaseval.pipeline import write_report

        write_report(run, history=read_parts(history_dir))
    return MonitorResult(run, run_id, systems, alarm, exit_code, rows, summary_doc)


def _suites_of(run: RunDir, system: str) -> list[str]:
    info = run.read_run() or {}
    return info.get("systems", {}).get(system, {}).get("suites", [])


def _summary(run_id: str, now: datetime, systems: list[SystemDrift], alarm: bool, out: Path | None) -> dict:
    return {
        "run_id": run_id, "created_at": now.isoformat(timespec="seconds"), "alarm": alarm,
        "run_dir": str(out) if out else None,
        "systems": [{
            "system": s.system, "status": s.status, "message": s.message, "baseline": s.baseline,
            "significant_changes": (s.changes.filter(pl.col("significant")).select(
                "suite", "subset", "metric", "value", "baseline_value", "change", "change_low", "change_high").to_dicts()
                if s.changes is not None else []),
            "suites": s.suites,
        } for s in systems],
    }


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


def write_drift(run: RunDir, systems: list[SystemDrift], summary: dict, monitor: MonitorConfig) -> None:
    """drift.json, drift.md and drift/flips.parquet in the monitoring run's directory."""
    write_text_atomic(run.root / "drift.json", json.dumps(summary, indent=2, default=str) + "\n")
    flips = [s.flips.with_columns(pl.lit(s.system).alias("system"), pl.lit(s.baseline).alias("baseline"))
             for s in systems if s.flips is not None and s.flips.height]
    if flips:
        write_parquet_atomic(pl.concat(flips).to_arrow(), run.root / "drift" / "flips.parquet")
    write_text_atomic(run.root / "drift.md", drift_markdown(systems, summary, monitor))


def drift_markdown(systems: list[SystemDrift], summary: dict, monitor: MonitorConfig) -> str:
    lines = [f"# Drift: {summary['run_id']}", "",
             f"Alarm: **{'yes' if summary['alarm'] else 'no'}** (a watched metric changed by at least "
             f"{monitor.threshold:g} with its 95% interval excluding 0, or McNemar p < {monitor.alpha:g} with at "
             f"least {monitor.threshold:.0%} of the items flipped).", ""]
    for s in systems:
        lines += [f"## {s.system}: {s.status}", ""]
        if s.message:
            lines += [s.message, ""]
        if s.baseline:
            lines += [f"Baseline: {s.baseline}", ""]
        if s.suites:
            lines += ["| suite | items | labels flipped | better / worse | McNemar p | text changed |",
                      "|---|---|---|---|---|---|"]
            for i in s.suites:
                lines.append(f"| {i['suite']} | {i['items']} | {i['flipped']} ({i['flipped_share']:.1%}) | "
                             f"{i['better']} / {i['worse']} | {i['mcnemar_p']:.3g} | {i['text_changed_share']:.1%} |")
            lines.append("")
        if s.changes is not None and s.changes.height:
            watched = s.changes.filter(pl.col("metric").is_in(list(monitor.watch))).sort(
                "significant", pl.col("change").abs(), descending=True)
            lines += ["| suite | subset | metric | baseline | now | change [95% CI] | significant |",
                      "|---|---|---|---|---|---|---|"]
            for r in watched.head(40).iter_rows(named=True):
                lines.append(f"| {r['suite']} | {r['subset']} | {r['metric']} | {r['baseline_value']:.4f} | "
                             f"{r['value']:.4f} | {r['change']:+.4f} [{r['change_low']:+.4f}, {r['change_high']:+.4f}] | "
                             f"{'**yes**' if r['significant'] else ''} |")
            lines.append("")
        if s.flips is not None and s.flips.height:
            lines += [f"Flipped labels (first {monitor.flips_in_report} of {s.flips.height}):", "",
                      "| suite | item | baseline label | now | baseline translation | translation now |",
                      "|---|---|---|---|---|---|"]
            for r in s.flips.head(monitor.flips_in_report).iter_rows(named=True):
                lines.append(f"| {r['suite']} | {r['item_id']} | {r['label_base']} | {r['label']} | "
                             f"{_cell(r['translation_base'])} | {_cell(r['translation'])} |")
            lines.append("")
    return "\n".join(lines) + "\n"


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def notify(monitor: MonitorConfig, summary: dict, stream) -> None:
    """Send the summary to the configured command (JSON on stdin) and webhook (JSON POST)."""
    payload = json.dumps(summary, default=str).encode()
    if monitor.notify.command:
        try:
            done = subprocess.run(monitor.notify.command, shell=True, input=payload, capture_output=True,
                                  timeout=monitor.notify.timeout_s)
            if done.returncode != 0:
                print(f"monitor: notification command exited {done.returncode}: "
                      f"{redact(done.stderr.decode(errors='replace'))[:500]}", file=stream)
        except (OSError, subprocess.TimeoutExpired) as exc:
            print(f"monitor: notification command failed: {redact(str(exc))}", file=stream)
    if monitor.notify.webhook:
        request = urllib.request.Request(monitor.notify.webhook, data=payload, method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=monitor.notify.timeout_s) as response:
                response.read()
        except OSError as exc:
            print(f"monitor: webhook failed: {redact(str(exc))}", file=stream)
