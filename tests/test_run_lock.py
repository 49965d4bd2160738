"""One driver per run: a second `biaseval sweep` or `biaseval score` on the same --out is refused
(exit 2, naming the first driver's host and pid) while the first runs, and works once it has
ended; a lock left by a dead process, or by another host that stopped renewing it, is taken over.
Locally (a lock file beside --out) and on S3 (a lease object in the prefix, moto's server)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from fakes.base import Gate
from fakes.openai_server import FakeOpenAI

from biaseval.run.filesystem import Folder, StoreOptions
from procs import kill_sessions, sessions_matching
from test_object_store import BUCKET, s3  # noqa: F401 - the moto server fixture
from test_sweep import small_config

pytestmark = pytest.mark.slow  # sweeps in subprocesses, moto's S3 server

BIN = str(Path(sys.executable).parent / "biaseval")

# A process that takes the lock of argv[1] through biaseval's own API and holds it until killed.
HOLD = """
import sys, time
from biaseval.run.lock import run_lock
from biaseval.run.filesystem import StoreOptions
with run_lock(sys.argv[1], StoreOptions(endpoint=sys.argv[2] or None)):
    print("held", flush=True)
    time.sleep(600)
"""


def lock_file(out: Path) -> Path:
    return out.parent / f".{out.name}.biaseval-lock"


@pytest.fixture
def ray_tmp():
    path = tempfile.mkdtemp(prefix="bv", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    yield path
    kill_sessions(sessions_matching(path))
    shutil.rmtree(path, ignore_errors=True)


def biaseval(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the CLI in its own session; whatever it leaves running is stopped."""
    proc = subprocess.Popen([BIN, *map(str, args)], env=env or dict(os.environ), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        kill_sessions({proc.pid})
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def start(*args: str, env: dict, log: Path) -> subprocess.Popen:
    """A driver in the background, its output in a file (a pipe nobody reads would stall it)."""
    with open(log, "w") as fh:
        return subprocess.Popen([BIN, *map(str, args)], env=env, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)


def hold(location: str, endpoint: str = "") -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, location, endpoint], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    kill_sessions({proc.pid})


def wait_for(condition, proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout  # timing: polls the condition; the deadline only bounds a hang
    while not condition():
        assert proc.poll() is None, "the first driver ended before it was seen holding the lock"
        assert time.monotonic() < deadline, "the first driver never took the lock"  # timing: see deadline
        time.sleep(0.1)  # timing: a polling interval


KEY = "sk-fake-openai-key-0123456789"


@contextmanager
def held_sweep(tmp_path: Path, out: str, env: dict, output: dict | None = None):
    """A first `biaseval sweep` into ``out`` that takes the lock and then waits mid-sweep for as long as
    the test likes: its system is an LLM (the fake OpenAI server on 127.0.0.1) that answers its first
    request and holds the others until the block ends. Yields the driver's process; on leaving, the
    requests go on and the driver must finish with status 0."""
    released = threading.Event()
    with FakeOpenAI(key=KEY, models=("gpt-test",)) as fake:
        fake.gate = Gate(1, None, released.is_set)
        config = {"name": "held", "suites": ["otsc-en"], "targets": {"otsc-en": ["es"]}, "metrics": {"bootstrap": 50},
                  "systems": {"llm": {"backend": "openai", "version": "fake 2026-01", "concurrency": 2,
                                      "options": {"model": "gpt-test", "base_url": fake.base_url,
                                                  "api_key_env": "BIASEVAL_TEST_OPENAI_KEY"}}}}
        if output:
            config["output"] = output
        path = tmp_path / "held.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        first = start("sweep", "--config", path, "--out", out, env={**env, "BIASEVAL_TEST_OPENAI_KEY": KEY},
                      log=tmp_path / "first.log")
        try:
            yield first, path
            assert first.poll() is None, "the first driver ended while its requests were held"
            released.set()
            assert first.wait(timeout=300) == 0, (tmp_path / "first.log").read_text()
        finally:
            released.set()
            kill_sessions({first.pid})


def refused_by(result: subprocess.CompletedProcess, pid: int) -> None:
    assert result.returncode == 2, result.stderr
    assert "in use by another biaseval driver" in result.stderr
    assert f"host {socket.gethostname()}, pid {pid}, since " in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


@pytest.fixture(scope="module")
def finished(tmp_path_factory, data_dir) -> tuple[Path, Path]:
    """A finished run and its config; tests copy it."""
    root = tmp_path_factory.mktemp("finished")
    config = small_config(root)
    ray_dir = tempfile.mkdtemp(prefix="bv", dir="/tmp")
    try:
        done = biaseval("sweep", "--config", config, "--out", root / "run", env={**os.environ, "RAY_TMPDIR": ray_dir})
    finally:
        kill_sessions(sessions_matching(ray_dir))
        shutil.rmtree(ray_dir, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    return config, root / "run"


def copy_of(finished, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(finished[1], out)
    return out


def test_a_second_driver_is_refused_naming_the_first_and_a_rerun_works_after(tmp_path, data_dir, ray_tmp):
    out = tmp_path / "run"
    env = {**os.environ, "RAY_TMPDIR": ray_tmp}
    with held_sweep(tmp_path, str(out), env) as (first, config):
        wait_for(lock_file(out).exists, first)
        second = biaseval("sweep", "--config", config, "--out", out, env=env)
        rescore = biaseval("score", "--run", out, env=env)
        refused_by(second, first.pid)
        refused_by(rescore, first.pid)
        assert str(lock_file(out)) in second.stderr
    assert not lock_file(out).exists(), "the lock outlived its driver"

    shards = len(list((out / "translations").rglob("shard-*.parquet")))
    rerun = biaseval("sweep", "--config", config, "--out", out, env={**env, "BIASEVAL_TEST_OPENAI_KEY": KEY})
    assert rerun.returncode == 0, rerun.stderr
    assert f"resuming {out}: {shards} of {shards} shards already finished" in rerun.stderr
    assert not lock_file(out).exists()


def test_a_lock_whose_process_died_is_taken_over(finished, tmp_path):
    out = copy_of(finished, tmp_path)
    holder = hold(str(out))
    kill(holder)  # SIGKILL: no chance to release
    assert lock_file(out).exists()

    rerun = biaseval("sweep", "--config", finished[0], "--out", out)  # finished already: no Ray, just scoring
    assert rerun.returncode == 0, rerun.stderr
    assert f"taking over the run lock {lock_file(out)} from host {socket.gethostname()}, pid {holder.pid}" in rerun.stderr
    assert f"its process {holder.pid} is gone" in rerun.stderr
    assert not lock_file(out).exists()


def test_a_lock_of_another_host_is_taken_over_only_without_heartbeat(finished, tmp_path):
    """A lock file on a shared filesystem, written by a driver on another machine: its pid means
    nothing here, so it holds while its heartbeat (the file's mtime) is younger than the TTL."""
    out = copy_of(finished, tmp_path)
    lock = lock_file(out)
    lock.write_text(json.dumps({"token": "f" * 32, "host": "node-7", "node": "node-7|pid:[1]", "pid": 4242,
                                "pid_start": "1", "since": "2030-01-01T00:00:00+00:00", "run_id": None}))
    env = {**os.environ, "BIASEVAL_LOCK_TTL": "30"}

    refused = biaseval("score", "--run", out, env=env)
    assert refused.returncode == 2, refused.stderr
    assert "host node-7, pid 4242, since 2030-01-01T00:00:00+00:00" in refused.stderr
    assert lock.exists()

    old = time.time() - 120
    os.utime(lock, (old, old))
    taken = biaseval("score", "--run", out, env=env)
    assert taken.returncode == 0, taken.stderr
    assert "taking over the run lock" in taken.stderr and "no heartbeat for 1" in taken.stderr
    assert not lock.exists()


def test_the_lock_is_released_when_the_command_fails(tmp_path, data_dir):
    """Each command first takes over a dead driver's lock (so it is seen holding it), then fails
    after taking it: the lock goes with it."""
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    kill(hold(str(foreign)))
    failed = biaseval("sweep", "--config", small_config(tmp_path), "--out", foreign)
    assert failed.returncode == 2 and "not empty and holds no run.json" in failed.stderr, failed.stderr
    assert "taking over the run lock" in failed.stderr
    assert not lock_file(foreign).exists()

    empty = tmp_path / "empty"
    empty.mkdir()
    kill(hold(str(empty)))
    failed = biaseval("score", "--run", empty)
    assert failed.returncode == 2 and "run.json" in failed.stderr, failed.stderr
    assert "taking over the run lock" in failed.stderr
    assert not lock_file(empty).exists()


def test_one_driver_per_run_on_s3(s3, tmp_path, data_dir, ray_tmp):  # noqa: F811 - the fixture
    out = f"s3://{BUCKET}/runs/locked"
    store = Folder(out, StoreOptions(endpoint=s3))
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "BIASEVAL_TEST_OPENAI_KEY": KEY}

    with held_sweep(tmp_path, out, env, output={"endpoint": s3, "region": "us-east-1"}) as (first, config):
        wait_for(lambda: store.exists(".biaseval-lease"), first)
        second = biaseval("sweep", "--config", config, "--out", out, env=env)
        refused_by(second, first.pid)
        assert f"{out}/.biaseval-lease" in second.stderr
    assert not store.exists(".biaseval-lease"), "the lease outlived its driver"
    shards = sum(1 for name in store.files("translations") if name.endswith(".parquet"))

    # a driver on this host that died holding the lease: taken over at once
    holder = hold(out, s3)
    kill(holder)
    assert store.exists(".biaseval-lease")
    rerun = biaseval("sweep", "--config", config, "--out", out, env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert f"taking over the run lease {out}/.biaseval-lease from host {socket.gethostname()}, pid {holder.pid}"\
        in rerun.stderr
    assert f"resuming {out}: {shards} of {shards} shards already finished" in rerun.stderr
    assert not store.exists(".biaseval-lease")

    # a lease of another host: held until it is not renewed within the TTL
    lease = {"token": "e" * 32, "host": "node-9", "node": "node-9|pid:[1]", "pid": 99, "pid_start": "1",
             "since": "2030-01-01T00:00:00+00:00", "run_id": None, "heartbeat": time.time()}
    store.write_text(".biaseval-lease", json.dumps(lease))
    score_env = {**env, "AWS_ENDPOINT_URL": s3, "BIASEVAL_LOCK_TTL": "30"}
    refused = biaseval("score", "--run", out, env=score_env)
    assert refused.returncode == 2 and "host node-9, pid 99" in refused.stderr, refused.stderr
    store.write_text(".biaseval-lease", json.dumps({**lease, "heartbeat": time.time() - 120}))
    taken = biaseval("score", "--run", out, env=score_env)
    assert taken.returncode == 0, taken.stderr
    assert "taking over the run lease" in taken.stderr and "no heartbeat for" in taken.stderr
    assert not store.exists(".biaseval-lease")
