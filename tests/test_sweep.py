"""Sweep machinery: shards are atomic, a killed sweep resumes, a rerun never duplicates or loses rows."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest
import yaml

from biaseval.errors import RunDirError, SweepFailed
from biaseval.pipeline import sweep
from conftest import REPO
from procs import kill_sessions, sessions_matching, wait_sessions_gone

SUITES = ["otsc-hi", "winomt-hi"]
SYSTEMS = ["google", "aws"]
ITEMS = 4 * 1071 + 704


def small_config(tmp_path: Path, shard_size: int = 500, name: str = "small.yaml", **sweep_settings) -> Path:
    config = yaml.safe_load((REPO / "conf" / "paper.yaml").read_text(encoding="utf-8"))
    config["suites"] = SUITES
    config["systems"] = {k: v for k, v in config["systems"].items() if k in SYSTEMS}
    for system in config["systems"].values():
        system["options"]["files"] = {s: f for s, f in system["options"]["files"].items() if s in SUITES}
    config["sweep"] = {"shard_size": shard_size, **sweep_settings}
    config["metrics"] = {"bootstrap": 200, "seed": 1}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def shard_files(out: Path) -> list[Path]:
    return sorted((out / "translations").rglob("shard-*.parquet"))


def assert_complete(out: Path) -> pl.DataFrame:
    """Exactly one translation row per item × system, in shards and in labels."""
    rows = pl.read_parquet(shard_files(out))
    assert rows.height == ITEMS * len(SYSTEMS)
    assert rows.select(pl.struct("system", "item_id").n_unique()).item() == rows.height
    assert rows["translation"].null_count() == 0
    labels = pl.read_parquet(out / "labels.parquet")
    assert labels.height == rows.height
    assert not list(out.rglob("*.tmp")), "temporary files left behind"
    return pl.read_parquet(out / "metrics.parquet")


def _values(metrics: pl.DataFrame) -> pl.DataFrame:
    return metrics.select("system", "suite", "subset", "metric", "value", "n", "ci_low", "ci_high").sort(
        "system", "suite", "subset", "metric")


def test_worker_death_then_resume(tmp_path, data_dir, ray_local):
    config = small_config(tmp_path, task_retries=0)  # a dead actor is not replaced: the sweep stops
    out = tmp_path / "run"
    with pytest.raises(SweepFailed, match="rerun of the same command resumes"):
        sweep(config, out, die_after=3)  # every actor exits after its third shard
    done = shard_files(out)
    total = 2 * (9 + 2)  # per system: otsc 4284 items in 9 shards, winomt-hi pro/anti in 2
    assert 3 <= len(done) < total
    assert not (out / "metrics.parquet").exists()
    assert not list(out.rglob("*.tmp"))
    before = {p: p.stat().st_mtime_ns for p in done}

    resumed = sweep(config, out)
    assert resumed.sweep.skipped == len(done) and resumed.sweep.shards == total
    assert resumed.sweep.translated_rows == ITEMS * 2 - pl.read_parquet(done).height
    assert all(p.stat().st_mtime_ns == t for p, t in before.items()), "finished shards were rewritten"
    metrics = assert_complete(out)

    clean = sweep(config, tmp_path / "clean")
    assert _values(metrics).equals(_values(clean.metrics))

    again = sweep(config, out)  # nothing left to translate
    assert again.sweep.translated_rows == 0 and again.sweep.skipped == total
    assert_complete(out)


def test_changed_plan_is_refused(tmp_path, data_dir, ray_local):
    out = tmp_path / "run"
    sweep(small_config(tmp_path), out)
    with pytest.raises(RunDirError, match="written for different work"):
        sweep(small_config(tmp_path, shard_size=700, name="other.yaml"), out)


def test_foreign_directory_is_refused(tmp_path, data_dir):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(RunDirError, match="not empty and holds no run.json"):
        sweep(small_config(tmp_path), out)


@pytest.mark.slow
def test_killed_process_resumes_exactly(tmp_path, data_dir):
    """SIGKILL a whole sweep process (driver, Ray and workers) mid-way; the rerun completes exactly."""
    config = small_config(tmp_path, shard_size=40)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "biaseval.cli", "sweep", "--config", str(config), "--out", str(out)]
    ray_tmp = tempfile.mkdtemp(prefix="bv", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    env = {**os.environ, "RAY_TMPDIR": ray_tmp}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # timing: polls for 5 of its 126 shards (the rest take far longer than a poll); the deadline bounds a hang
        deadline = time.monotonic() + 120
        while len(shard_files(out)) < 5 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)  # timing: a polling interval
        assert proc.poll() is None, "the sweep finished before it could be interrupted"
    finally:
        # the driver leads its own session; Ray's workers stay in it (in their own process groups).
        # Anything naming this Ray's temp dir is stopped too, in case a process was still being
        # started while the session was killed; then once more after a pause.
        survivors = kill_sessions({proc.pid} | sessions_matching(ray_tmp))
        proc.wait(timeout=30)
        time.sleep(1.0)  # timing: a second chance for processes being started as the session died
        survivors += kill_sessions({proc.pid} | sessions_matching(ray_tmp))
    assert survivors == []
    interrupted = len(shard_files(out))
    assert 5 <= interrupted < 2 * (108 + 18)
    assert not (out / "metrics.parquet").exists()

    rerun = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        _, stderr = rerun.communicate(timeout=300)
    finally:
        kill_sessions({rerun.pid} | sessions_matching(ray_tmp))
    assert rerun.returncode == 0, stderr
    assert f"resuming {out}: {interrupted} of" in stderr
    assert_complete(out)
    assert wait_sessions_gone({rerun.pid}) == [], "the sweep left processes behind"
    assert kill_sessions(sessions_matching(ray_tmp)) == []
    shutil.rmtree(ray_tmp, ignore_errors=True)


def test_no_report_writes_metrics_only_and_score_writes_the_reports_later(tmp_path, data_dir, ray_local):
    from click.testing import CliRunner

    from biaseval.cli import main

    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["sweep", "--config", str(small_config(tmp_path)), "--out", str(out), "--no-report"])
    assert result.exit_code == 0, result.output
    assert (out / "metrics.parquet").exists() and (out / "labels.parquet").exists()
    assert not (out / "report.md").exists() and not (out / "report.html").exists()
    # no path to a file it did not write
    lines = result.output.splitlines()
    assert "report.md" not in result.output and not any(line.startswith("report:") for line in lines)
    assert f"metrics: {out / 'metrics.parquet'}" in result.output
    again = CliRunner().invoke(main, ["score", "--run", str(out)])
    assert again.exit_code == 0, again.output
    assert (out / "report.md").exists() and (out / "report.html").exists()
