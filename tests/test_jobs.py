"""The Ray job entry points in jobs/ are the CLI: same options, same exit status, so a RayJob (or any
scheduler) sees a sweep with untranslated rows or a bad config as failed, not SUCCEEDED."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import REPO
from procs import kill_sessions

pytestmark = pytest.mark.slow  # job scripts run sweeps in subprocesses

WINO = 704


def _job(script: str, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python jobs/<script> ARGS`` as a scheduler runs it (its own process and session, its own local
    Ray); whatever it leaves running is stopped."""
    proc = subprocess.Popen([sys.executable, str(REPO / "jobs" / script), *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})  # the job starts its own local Ray
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        survivors = kill_sessions({proc.pid})
        proc.wait()
    assert survivors == []
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _config(tmp_path: Path, systems: dict, **extra) -> Path:
    config = {"name": "job", "suites": ["winomt-hi"], "systems": systems, "cache": {"path": str(tmp_path / "store")},
              "metrics": {"bootstrap": 50}, **extra}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_sweep_job_with_untranslated_rows_exits_4_like_the_cli(tmp_path, data_dir):
    systems = {"copy": {"backend": "identity", "version": "v1"},
               # a language pair apertium does not have: every text of this system fails, for good
               "broken": {"backend": "apertium", "version": "x", "options": {"pair": "eng-xyz"},
                          "retry": {"max_attempts": 1}}}
    out = tmp_path / "run"
    job = _job("sweep.py", "--config", str(_config(tmp_path, systems)), "--out", str(out), cwd=tmp_path)
    assert job.returncode == 4, job.stderr[-3000:]
    assert "have no translation" in job.stderr and "report:" in job.stdout
    labels = pl.read_parquet(out / "labels.parquet", columns=["system", "label"])
    assert labels.height == 2 * WINO  # the run finished and was scored: only the translations are missing
    assert labels.filter(pl.col("system") == "broken")["label"].null_count() == WINO
    assert labels.filter(pl.col("system") == "copy")["label"].null_count() < WINO


def test_jobs_exit_2_on_a_config_error_or_bad_arguments(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"name": "job", "suites": ["winomt-hi"], "systems": {}, "no_such_key": 1}))
    sweep = _job("sweep.py", "--config", str(bad), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert sweep.returncode == 2 and "error:" in sweep.stderr and "no_such_key" in sweep.stderr, sweep.stderr[-3000:]
    assert not (tmp_path / "run").exists()
    # a config without a monitor: section is a config error for the monitor
    plain = _config(tmp_path, {"copy": {"backend": "identity", "version": "v1"}})
    monitor = _job("monitor.py", "--config", str(plain), cwd=tmp_path)
    assert monitor.returncode == 2 and "no monitor: section" in monitor.stderr, monitor.stderr[-3000:]
    usage = _job("sweep.py", "--config", str(plain), cwd=tmp_path)  # --out missing
    assert usage.returncode == 2 and "Missing option '--out'" in usage.stderr
