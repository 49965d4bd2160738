"""Drift monitoring of MT systems: translate afresh, compare each system with its baseline, keep a
history, raise the alarm when bias moved — with the evidence.

``biaseval monitor --config conf/monitor.yaml`` runs the config's sweep into a new run directory of
the monitor's store (translations refreshed: the cache is bypassed), then, per system:

- availability: a system with more failed items than ``max_failed_share`` (a provider down or out
  of quota) is reported *unavailable* and neither compared nor written to the history as if it had
  been measured;
- its baseline: the previous monitoring run where it was measured (default), a named run
  (``{run: DIR}``), or another system of the config (``{system: name}``, e.g. recorded outputs);
- per metric, the change and its 95% interval, from the two runs' intervals by the MOVER method
  (Newcombe's for shares; the runs taken as independent: conservative for the same items);
- per suite and group of items (``all``, each subset, language and occupation), the paired tests
  (McNemar on the binary outcome, marginal homogeneity on the labels: ``stats.py``), the list of items
  whose label flipped with both translations, the share of outputs whose text changed at all, and
  the change the suite's items can detect at the family's level.

The run's tests are corrected together (``compare.judge``, ``stats.adjust``: Benjamini–Hochberg by
default). A watched metric whose adjusted p is below ``alpha`` and whose change is at least
``threshold`` is a significant change; so is a suite whose McNemar adjusted p is below ``alpha``
with at least ``threshold`` of its items flipped. Any significant change raises the alarm. A
provider that reports another model than at the baseline is an event of its own (``events``), as
is a system measured again after an outage. The exit status and when a notification goes out, with
what: ``verdict`` and ``notify``.

The store keeps ``runs/<run>/`` (full run directories); the history and status datasets
(``history.py``) keep one row per run × system × suite × subset × metric and one per run × system
(measured, unavailable, no baseline, and why).
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from biaseval.config import load_config
from biaseval.credentials import redact, remember_url
from biaseval.config.paths import baseline_location
from biaseval.errors import BiasevalError, ConfigError
from biaseval.monitor import notify
from biaseval.monitor.compare import item_drift, judge, metric_changes
from biaseval.monitor.events import describe, model_change, recovery, reported_models
from biaseval.monitor.history import (
    append_history,
    previous_run,
    run_folder,
    store_dirs,
)
from biaseval.monitor.summary import summarise, write_drift
from biaseval.monitor.verdict import (
    EXIT_NOT_DELIVERED,
    MonitorResult,
    SystemDrift,
    verdict,
)
from biaseval.run.rundir import RunDir


def run_monitor(config_path: str | Path, *, dry_run: bool = False, address: str | None = None,
                stream=sys.stderr) -> MonitorResult:
    from biaseval.pipeline import sweep
    from biaseval.run.driver import new_run_id

    config_path = Path(config_path)
    config = load_config(config_path)
    monitor = config.monitor
    if monitor is None:
        raise ConfigError(f"{config_path}: no monitor: section (store, baselines, threshold, notify)")
    remember_url(monitor.notify.webhook)  # its path and query may be a token: never in a record
    if not dry_run:
        notify.check(monitor.notify)
    config_dir = config_path.resolve().parent
    runs_dir, store = store_dirs(config, config_dir)
    now = datetime.now(timezone.utc)
    # One id for the whole monitoring run: its folder in the store, the sweep's run.json, metrics and
    # shards, drift.json, the notification, history and status rows (and later runs' baseline_run).
    run_id = new_run_id(config)
    out = run_folder(runs_dir, run_id)
    previous_status = store.read("status")

    monitored = monitor.monitored(config.systems)
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
        models, recovered = reported_models(run, system), recovery(previous_status, system)
        spec = monitor.baselines.get(system, "previous")
        if isinstance(spec, dict) and "system" in spec:
            base_run, base_system, described = run, spec["system"], f"system {spec['system']} (this run)"
        elif isinstance(spec, dict):
            base_run = RunDir(baseline_location(spec["run"], config_dir))
            base_system, described = system, f"run {spec['run']}"
        else:
            base_run = previous_run(previous_status, runs_dir, system)
            base_system, described = system, f"previous run {base_run.root.name}" if base_run else "previous run"
        if base_run is None or not base_run.metrics.exists():
            message = "; ".join(filter(None, ["first measurement: nothing to compare with yet",
                                              describe(None, recovered)]))
            systems.append(SystemDrift(system, "no baseline", message, described, models=models, recovered=recovered))
            continue
        base_metrics = pl.read_parquet(base_run.metrics).filter(pl.col("system") == base_system)
        suite_info, flips, tests = [], [], {}
        for suite in config.suites:
            if suite in config.suites_of(system) and suite in _suites_of(base_run, base_system):
                info, f, t = item_drift(run, system, base_run, base_system, suite, monitor)
                suite_info.append(info)
                flips.append(f)
                tests.update(t)
        changes = metric_changes(metrics.filter(pl.col("system") == system), base_metrics, tests,
                                 config.metrics.confidence)
        # the same system at the baseline (not another system of this run): did its provider's model change?
        changed = model_change(models, reported_models(base_run, base_system)) if base_system == system else None
        systems.append(SystemDrift(system, "ok", describe(changed, recovered), described, base_run.read_run()["run_id"],
                                   changes, suite_info, pl.concat(flips) if flips else None, models, changed, recovered))

    family = judge(systems, monitor)  # statuses: drift or ok, over the run's corrected family of tests
    alarm = any(s.status == "drift" for s in systems)
    for drifted in systems:  # a model change with no significant change is an event of its own
        if drifted.status == "ok" and drifted.model_change:
            drifted.status = "model changed"
    outcome, exit_code = verdict(systems)
    summary_doc = {**summarise(run_id, now, systems, alarm, out if run else None, monitor, family),
                   "verdict": outcome, "exit_code": exit_code}
    report = monitor.notify.report_url.format(run_id=run_id) if monitor.notify.report_url else (
        str(out / "report.html") if run else None)
    # drift.json is the notification's body: what was sent is kept beside the run
    summary_doc = notify.message(summary_doc, systems, monitor.notify,
                                 (run.read_run() or {}).get("cost") if run else None, report)
    rows = 0
    if run is not None:
        write_drift(run, systems, summary_doc, monitor)
    if not dry_run:
        rows = append_history(store, run_id, now, metrics, systems)
    if run is not None:  # the report with the drift trends of the whole history
        from biaseval.pipeline import write_report

        write_report(run, history=store.read("history"))
    notified, undelivered = False, []
    if not dry_run and notify.due(outcome, systems, monitor.notify):
        undelivered = notify.deliver(monitor.notify, summary_doc, stream)
        notified = not undelivered
        exit_code += EXIT_NOT_DELIVERED if undelivered else 0
    return MonitorResult(run, run_id, systems, alarm, exit_code, rows, summary_doc, outcome, notified, undelivered)


def _suites_of(run: RunDir, system: str) -> list[str]:
    info = run.read_run() or {}
    return info.get("systems", {}).get(system, {}).get("suites", [])
