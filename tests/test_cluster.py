"""The sweep on an existing Ray cluster (RAY_ADDRESS), started here with `ray start`, through the
job entry point in jobs/ — the same command `ray job submit` runs."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl
import pytest

from conftest import REPO, ray_start_env, ray_start_ports
from procs import kill_sessions, sessions_matching
from test_sweep import ITEMS, SYSTEMS, small_config

pytestmark = pytest.mark.slow  # a cluster started with `ray start`


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_job_entry_point_on_an_existing_cluster(tmp_path, data_dir):
    ray_bin = Path(sys.executable).parent / "ray"
    temp = tempfile.mkdtemp(prefix="bv", dir="/tmp")
    port = _free_port()
    env = ray_start_env()
    started = subprocess.run(
        [str(ray_bin), "start", "--head", f"--port={port}", *ray_start_ports(), "--num-cpus=2", "--include-dashboard=false",
         f"--temp-dir={temp}", "--disable-usage-stats"],
        env=env, capture_output=True, text=True, timeout=120, start_new_session=True,
    )
    try:
        assert started.returncode == 0, started.stderr
        out = tmp_path / "run"
        job = subprocess.run(
            [sys.executable, str(REPO / "jobs" / "sweep.py"), "--config", str(small_config(tmp_path)), "--out", str(out)],
            # `ray start` enables token auth; a client that names an address must ask for it too
            env={**env, "RAY_ADDRESS": f"127.0.0.1:{port}", "RAY_AUTH_MODE": "token"},
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
        )
        assert job.returncode == 0, job.stderr
        assert "report:" in job.stdout
        labels = pl.read_parquet(out / "labels.parquet")
        assert labels.height == ITEMS * len(SYSTEMS)
        # the shards were translated by actors of that cluster, not by a Ray the job started itself
        logs = Path(temp, "session_latest", "logs")
        assert any("ShardWorker" in p.read_text(errors="ignore") for p in logs.glob("worker-*.out")), \
            "no ShardWorker actor ran on the cluster"
    finally:
        # `ray start` daemonizes: its processes (and their renamed workers) share sessions we find
        # through the processes that name the cluster's temp dir
        survivors = kill_sessions(sessions_matching(temp))
        shutil.rmtree(temp, ignore_errors=True)
    assert survivors == []
