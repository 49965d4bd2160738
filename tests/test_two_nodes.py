"""A two-node Ray cluster on this machine (`ray start --head` plus a second node with its own
resources and temp dir), sweeps submitted with `ray job submit`, systems placed on nodes by custom
resources, and the loss of a node mid-sweep: the job fails saying how to resume, and the rerun on
the repaired cluster ends with exactly one row per item × system."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import REPO, ray_start_env, ray_start_ports
from procs import kill_sessions, sessions_matching
from test_sweep import ITEMS, small_config

RAY = str(Path(sys.executable).parent / "ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """Head (custom resource ``head_node``, dashboard for job submission) and a second node
    (``node_b``), each with its own temp dir; every process is found again by that dir."""

    def __init__(self, private: Path | None = None) -> None:
        self.port, self.dashboard = _free_port(), _free_port()
        self.head_tmp = tempfile.mkdtemp(prefix="bvh", dir="/tmp")  # short: socket paths must fit 107 bytes
        self.node_tmps: list[str] = []
        # token auth (on by default with `ray start`): every client asks for it; node loss noticed in ~3 s
        # both on loopback (tests never reach beyond it), each at an address of its own, 127.0.0.2 and
        # 127.0.0.3 (conftest.ray_start_env: not 127.0.0.1, which Ray's multi-node mode replaces)
        self.env = {**ray_start_env(single_node=False), "RAY_AUTH_MODE": "token",
                    "RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3",
                    "RAY_health_check_initial_delay_ms": "1000"}
        self._ray("start", "--head", "--node-ip-address=127.0.0.2", f"--port={self.port}", "--num-cpus=2", '--resources={"head_node": 1}',
                  "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={self.dashboard}",
                  *ray_start_ports(),
                  f"--temp-dir={self.head_tmp}", "--disable-usage-stats")
        self.start_node(private)

    def _ray(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        done = subprocess.run([RAY, *args], env=self.env, capture_output=True, text=True, timeout=timeout,
                              start_new_session=True)
        assert done.returncode == 0, f"ray {' '.join(args)}: {done.stderr[-2000:]}"
        return done

    def start_node(self, private: Path | None = None) -> None:
        """The second node; with ``private``, that folder is another disk on it (an empty tmpfs in the
        node's own mount namespace), as a path that is not shared between machines."""
        tmp = tempfile.mkdtemp(prefix="bvn", dir="/tmp")
        self.node_tmps.append(tmp)
        args = ["start", f"--address=127.0.0.2:{self.port}", "--node-ip-address=127.0.0.3", "--num-cpus=2",
                '--resources={"node_b": 1}', f"--temp-dir={tmp}", f"--dashboard-agent-listen-port={_free_port()}",
                "--disable-usage-stats"]
        if private is None:
            self._ray(*args)
            return
        private.mkdir(parents=True, exist_ok=True)
        script = f"mount -t tmpfs tmpfs {shlex.quote(str(private))} && exec {shlex.join([RAY, *args])}"
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], env=self.env,
                              capture_output=True, text=True, timeout=120, start_new_session=True)
        assert done.returncode == 0, f"ray start in a mount namespace: {done.stderr[-2000:]}"

    def kill_node(self) -> list[int]:
        """SIGKILL every process of the second node (raylet, workers, agents), as a lost machine."""
        return kill_sessions(sessions_matching(self.node_tmps[-1]))

    def submit(self, config: Path, out: Path, *, wait: bool = True) -> str:
        job = f"biaseval-{os.urandom(4).hex()}"
        runtime_env = {"env_vars": {"BIASEVAL_DATA_DIR": os.environ["BIASEVAL_DATA_DIR"], "BIASEVAL_OFFLINE": "1",
                                    "BIASEVAL_CACHE_DIR": os.environ["BIASEVAL_CACHE_DIR"]}}
        args = ["job", "submit", f"--address=http://127.0.0.1:{self.dashboard}", f"--submission-id={job}",
                f"--runtime-env-json={json.dumps(runtime_env)}"]
        if not wait:
            args.append("--no-wait")
        deadline = time.monotonic() + 240  # timing: retries while the job agent starts; bounds a hang only
        while True:  # right after `ray start` the job agent may not be up yet (slow on a loaded machine)
            done = subprocess.run([RAY, *args, "--", sys.executable, str(REPO / "jobs" / "sweep.py"), "--config",
                                   str(config), "--out", str(out)], env=self.env, capture_output=True, text=True,
                                  timeout=600, start_new_session=True)
            if "No available agent" not in done.stderr or time.monotonic() > deadline:
                break
            time.sleep(2)  # timing: between retries
        assert f"'{job}'" in done.stdout + done.stderr, f"ray job submit: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        return job

    def status(self, job: str) -> str:
        done = self._ray("job", "status", f"--address=http://127.0.0.1:{self.dashboard}", job)
        out = done.stdout + done.stderr
        for state, said in (("SUCCEEDED", f"Job '{job}' succeeded"), ("FAILED", f"Job '{job}' failed"),
                            ("STOPPED", f"Job '{job}' was stopped")):
            if said in out:
                return state
        found = re.search(rf"Status for job '{re.escape(job)}': (\w+)", out)
        return found.group(1) if found else "UNKNOWN"

    def wait(self, job: str, timeout: float = 300) -> str:
        deadline = time.monotonic() + timeout  # timing: polls the job's state; the callers assert the final one
        while (state := self.status(job)) in ("RUNNING", "PENDING") and time.monotonic() < deadline:
            time.sleep(1)  # timing: a polling interval
        return state

    def logs(self, job: str) -> str:
        return self._ray("job", "logs", f"--address=http://127.0.0.1:{self.dashboard}", job).stdout

    def worker_logs(self, tmp: str) -> str:
        logs = Path(tmp, "session_latest", "logs")
        return "\n".join(p.read_text(errors="ignore") for p in logs.glob("worker-*.out"))

    def stop(self) -> list[int]:
        survivors = kill_sessions(set().union(*(sessions_matching(t) for t in [self.head_tmp, *self.node_tmps])))
        for tmp in [self.head_tmp, *self.node_tmps]:
            shutil.rmtree(tmp, ignore_errors=True)
        return survivors


@pytest.fixture
def cluster(data_dir):
    c = Cluster()
    try:
        yield c
    finally:
        assert c.stop() == []


def _placed(tmp_path: Path, **changes) -> Path:
    """The small recorded config with google pinned to the head and aws to the second node."""
    path = small_config(tmp_path)
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    spec["systems"]["google"]["resources"] = {"head_node": 0.1}
    spec["systems"]["aws"]["resources"] = {"node_b": 0.1}
    spec.update(changes)
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def _one_row_per_item_and_system(out: Path, systems: int) -> None:
    rows = pl.read_parquet(sorted((out / "translations").rglob("shard-*.parquet")), hive_partitioning=False)
    assert rows.height == ITEMS * systems
    assert rows.select(pl.struct("system", "item_id").n_unique()).item() == rows.height
    assert rows["translation"].null_count() == 0
    assert pl.read_parquet(out / "labels.parquet").height == rows.height


@pytest.mark.slow
def test_job_submit_places_systems_on_both_nodes(cluster, tmp_path):
    out = tmp_path / "run"
    job = cluster.submit(_placed(tmp_path), out)
    assert cluster.wait(job) == "SUCCEEDED", cluster.logs(job)[-3000:]
    _one_row_per_item_and_system(out, 2)
    head, node = cluster.worker_logs(cluster.head_tmp), cluster.worker_logs(cluster.node_tmps[-1])
    assert "biaseval: ShardWorker google on node" in head and "ShardWorker aws" not in head
    assert "biaseval: ShardWorker aws on node" in node and "ShardWorker google" not in node


@pytest.mark.slow
def test_losing_a_node_mid_sweep_then_rerun(cluster, tmp_path):
    """The second node hosts a rate-limited live system; it is killed mid-sweep. The job fails naming
    the lost work and how to resume; with the node back, the same job completes exactly."""
    store = tmp_path / "store"
    config = _placed(tmp_path, cache={"path": str(store)}, sweep={"shard_size": 500, "texts_per_task": 100})
    spec = yaml.safe_load(config.read_text(encoding="utf-8"))
    spec["systems"]["aws"] = {"backend": "identity", "version": "identity", "resources": {"node_b": 0.1},
                              "limits": {"chars_per_min": 1_500_000}}  # its 360 k characters take ~15 s
    config.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    out = tmp_path / "run"
    job = cluster.submit(config, out, wait=False)
    deadline = time.monotonic() + 120  # timing: polls until the live system is sending; bounds a hang only
    while not any(store.rglob("*.parquet")) and time.monotonic() < deadline:  # the live system is sending
        time.sleep(0.2)  # timing: a polling interval
    # timing: its quota (chars_per_min) makes the live system take ~15 s whatever the machine: 2 s in, it is running
    time.sleep(2)
    assert cluster.status(job) == "RUNNING"
    assert cluster.kill_node() == []
    state = cluster.wait(job, timeout=180)
    logs = cluster.logs(job)
    assert state == "FAILED", logs[-3000:]
    assert "rerun of the same command resumes" in logs
    assert not (out / "metrics.parquet").exists()

    cluster.start_node()
    again = cluster.submit(config, out)
    assert cluster.wait(again) == "SUCCEEDED", cluster.logs(again)[-3000:]
    assert "resuming" in cluster.logs(again)
    _one_row_per_item_and_system(out, 2)


def test_actors_sized_from_the_cluster():
    from biaseval.config import SystemConfig
    from biaseval.run.cluster import actors_for

    cluster = {"CPU": 16.0, "GPU": 4.0, "gpu_worker": 2.0, "memory": 1e11}
    def system(**kw):
        return SystemConfig(backend="identity", **kw)
    assert actors_for(system(actors=3), cluster) == 3
    assert actors_for(system(actors="auto"), cluster) == 1  # an API client: its quota sets the pace
    assert actors_for(system(actors="auto", num_gpus=1), cluster) == 4
    assert actors_for(system(actors="auto", num_gpus=0.5, resources={"gpu_worker": 1}), cluster) == 2
    assert actors_for(system(actors="auto", num_cpus=2), cluster) == 7  # one CPU left to Ray's own tasks
    assert actors_for(system(actors="auto", num_gpus=1), {"CPU": 2.0}) == 1  # none fits: still one (it waits)
    with pytest.raises(ValueError):
        system(actors=0)


@pytest.mark.slow
def test_a_translation_store_a_node_cannot_see_is_refused_before_sending(data_dir, tmp_path):
    """The store path is the head's disk; the node hosting the live system has another disk at that
    path (as a head-only emptyDir in Kubernetes). Its worker refuses before sending anything, the job
    fails naming the store, and nothing is written where the next run could not find it."""
    store = tmp_path / "store"
    c = Cluster(private=store)
    try:
        config = _placed(tmp_path, cache={"path": str(store)})
        spec = yaml.safe_load(config.read_text(encoding="utf-8"))
        spec["systems"]["aws"] = {"backend": "identity", "version": "identity", "resources": {"node_b": 0.1}}
        config.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        out = tmp_path / "run"
        job = c.submit(config, out)
        state = c.wait(job)
        logs = c.logs(job)
        assert state == "FAILED", logs[-3000:]
        assert f"the translation store {store} is not the driver's store on node" in logs
        assert "nothing was sent from this node" in logs
        assert not list(store.rglob("part-*.parquet"))
        assert not list((out / "translations").glob("system=aws/**/*.parquet"))
        assert not (out / "metrics.parquet").exists()
    finally:
        assert c.stop() == []
