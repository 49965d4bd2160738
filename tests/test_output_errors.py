"""An --out that cannot be used stops the command with a message naming it and a documented exit
status (2, or 3 for a full disk: finished work is kept), never a traceback, and leaves no partial
file: a read-only folder, a file where the folder should be, a disk that fills up while shards or
scores are written, an S3 endpoint nobody answers at, a bucket that does not exist.

Read-only folders and full disks are real: a read-only bind mount and a small tmpfs, made in a
private mount namespace (``unshare``) that disappears with the command, so nothing stays mounted.
Root ignores file permissions but not a read-only mount. As root ``unshare -m``; otherwise
``unshare -rm`` (a user namespace) where the system allows it."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest
import yaml

from biaseval.run.rundir import staging_dir
from procs import kill_sessions, sessions_matching
from test_object_store import BUCKET, _free_port, s3  # noqa: F401 - the moto server fixture
from test_run_lock import biaseval, finished  # noqa: F401 - the finished-run fixture
from test_sweep import small_config

pytestmark = pytest.mark.slow  # sweeps in mount namespaces, moto's S3 server

BIN = str(Path(sys.executable).parent / "biaseval")
UNSHARE = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-r", "-m"]


def in_namespace(script: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``script`` (sh) in a private mount namespace; its mounts vanish when it ends."""
    ray_tmp = tempfile.mkdtemp(prefix="bv", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "BIN": BIN}
    proc = subprocess.Popen([*UNSHARE, "sh", "-c", f"set -e\n{script}"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        kill_sessions({proc.pid} | sessions_matching(ray_tmp))
        shutil.rmtree(ray_tmp, ignore_errors=True)
    if proc.returncode == 97 or "unshare:" in stderr:
        pytest.fail(f"these tests need private mount namespaces ({' '.join(UNSHARE)}): {stderr.strip()}", pytrace=False)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def q(path) -> str:
    return shlex.quote(str(path))


def no_traceback(result) -> None:
    assert "Traceback" not in result.stdout + result.stderr, result.stderr


def files_of(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")}


def test_a_read_only_out_is_refused_before_any_work(finished, tmp_path):  # noqa: F811 - the fixture
    config, done = finished
    ro = tmp_path / "ro"
    ro.mkdir()
    shutil.copytree(done, ro / "done")
    before = files_of(ro)
    mount = f"mount --bind {q(ro)} {q(ro)}\nmount -o remount,ro,bind {q(ro)}\n"

    sweep = in_namespace(mount + f'"$BIN" sweep --config {q(config)} --out {q(ro / "new")}')
    assert sweep.returncode == 2, sweep.stderr
    assert f"{ro / 'new'}" in sweep.stderr and "Read-only file system" in sweep.stderr
    no_traceback(sweep)

    rescore = in_namespace(mount + f'"$BIN" score --run {q(ro / "done")}')
    assert rescore.returncode == 2, rescore.stderr
    assert f"{ro / 'done'}" in rescore.stderr and "Read-only file system" in rescore.stderr
    no_traceback(rescore)
    assert files_of(ro) == before, "something was written"


def test_a_file_where_the_out_folder_should_be(tmp_path, data_dir):
    blocker = tmp_path / "results"
    blocker.write_text("a file, not a folder")
    result = biaseval("sweep", "--config", small_config(tmp_path), "--out", blocker / "run")
    assert result.returncode == 2, result.stderr
    assert f"{blocker} exists and is not a directory" in result.stderr
    no_traceback(result)
    assert blocker.read_text() == "a file, not a folder"


@pytest.mark.parametrize("size, where", [
    ("64k", "/run/items.parquet"),  # items.parquet, written by the driver, does not fit
    ("300k", "/translations/system="),  # items fit; the workers' shards soon do not
])
def test_disk_full_while_the_sweep_writes(tmp_path, data_dir, size, where):
    disk, seen = tmp_path / "disk", tmp_path / "seen"
    disk.mkdir()
    seen.mkdir()
    out = disk / "run"
    result = in_namespace(f"mount -t tmpfs -o size={size} tmpfs {q(disk)}\n"
                          f'rc=0; "$BIN" sweep --config {q(small_config(tmp_path))} --out {q(out)} || rc=$?\n'
                          f"cp -a {q(disk)}/. {q(seen)}/\nexit $rc")
    assert result.returncode == 3, result.stderr
    error = next(line for line in result.stderr.splitlines() if "no space left" in line)
    assert where in error and str(out) in error and "the disk is full" in error
    no_traceback(result)
    assert not list(seen.rglob("*.tmp")), "a partial file was left behind"
    for shard in (seen / "run" / "translations").rglob("*.parquet"):
        assert pl.read_parquet(shard).height > 0  # every shard there is whole


def test_disk_full_while_scoring(finished, tmp_path):  # noqa: F811 - the fixture
    disk, seen = tmp_path / "disk", tmp_path / "seen"
    disk.mkdir()
    seen.mkdir()
    result = in_namespace(f"mount -t tmpfs -o size=2m tmpfs {q(disk)}\n"
                          f"cp -a {q(finished[1])}/. {q(disk)}/\n"
                          f"rm {q(disk)}/labels.parquet {q(disk)}/metrics.parquet {q(disk)}/report.*\n"
                          f"dd if=/dev/zero of={q(disk)}/filler bs=4096 2>/dev/null || true\n"
                          f'rc=0; "$BIN" score --run {q(disk)} || rc=$?\n'
                          f"rm {q(disk)}/filler\ncp -a {q(disk)}/. {q(seen)}/\nexit $rc")
    assert result.returncode == 3, result.stderr
    assert f"{disk / 'labels.parquet'}: no space left to write it (the disk is full)" in result.stderr
    no_traceback(result)
    assert not list(seen.rglob("*.tmp")) and not (seen / "labels.parquet").exists()


def s3_config(tmp_path: Path, endpoint: str) -> Path:
    config = small_config(tmp_path)
    spec = yaml.safe_load(config.read_text(encoding="utf-8"))
    spec["output"] = {"endpoint": endpoint, "region": "us-east-1"}
    config.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return config


def test_an_s3_endpoint_nobody_answers_at(tmp_path, data_dir):
    endpoint = f"http://127.0.0.1:{_free_port()}"
    out = "s3://bias-runs/runs/unreachable"
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}
    started = time.monotonic()
    result = biaseval("sweep", "--config", s3_config(tmp_path, endpoint), "--out", out, env=env)
    assert result.returncode == 2, result.stderr
    assert out in result.stderr and endpoint in result.stderr and "cannot connect" in result.stderr
    assert "sweep:" not in result.stderr  # stopped before any work
    no_traceback(result)
    # timing: it stops after a few quick connection refusals; 120 s only tells a retry loop that never gives up
    assert time.monotonic() - started < 120

    rescore = biaseval("score", "--run", out, env={**env, "AWS_ENDPOINT_URL": endpoint})
    assert rescore.returncode == 2 and out in rescore.stderr and endpoint in rescore.stderr, rescore.stderr
    no_traceback(rescore)


def test_an_s3_bucket_that_does_not_exist(s3, tmp_path, data_dir):  # noqa: F811 - the fixture
    import boto3

    out = "s3://no-such-bucket-here/runs/x"
    result = biaseval("sweep", "--config", s3_config(tmp_path, s3), "--out", out)
    assert result.returncode == 2, result.stderr
    assert "the bucket 'no-such-bucket-here' does not exist" in result.stderr and s3 in result.stderr
    assert "sweep:" not in result.stderr
    no_traceback(result)
    buckets = boto3.client("s3", endpoint_url=s3, region_name="us-east-1").list_buckets()["Buckets"]
    assert [b["Name"] for b in buckets] == [BUCKET]
    assert not staging_dir(out).exists(), "the driver staged files for a run it cannot write"
