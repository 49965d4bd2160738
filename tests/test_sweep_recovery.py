"""What a sweep does when its world is not as planned: damaged shard files and run records on resume,
actors lost mid-sweep, resources no node has, a Ray left running on the host, and live sends cut
into tasks of ``sweep.texts_per_task`` texts (a crash loses at most the tasks in flight)."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from biaseval.run.translation_store import TranslationStore
from biaseval.cli import main
from biaseval.config import SystemConfig
from biaseval.errors import SweepFailed
from biaseval.pipeline import sweep
from biaseval.run.cluster import PlacementError
from biaseval.run.plan import identity_of
from conftest import ray_start_env, ray_start_ports
from procs import kill_sessions, sessions_matching
from test_live_sweep import WINO, WINO_TEXTS, live_config
from test_sweep import assert_complete, shard_files, small_config

RAY = str(Path(sys.executable).parent / "ray")


def _values(metrics: pl.DataFrame) -> pl.DataFrame:
    return metrics.select("system", "suite", "subset", "metric", "value", "n").sort("system", "suite", "subset", "metric")


def _flip_data_byte(path: Path) -> None:
    """Flip one byte inside the column data (not the footer): the footer still parses."""
    data = bytearray(path.read_bytes())
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    meta = pq.read_metadata(path)
    column = meta.row_group(0).column(meta.schema.names.index("translation"))
    first = column.dictionary_page_offset if column.has_dictionary_page else column.data_page_offset
    position = first + column.total_compressed_size // 2
    assert 4 < position < footer
    data[position] ^= 0x5A
    path.write_bytes(bytes(data))


def test_damaged_shards_are_found_named_and_redone(tmp_path, data_dir, ray_local):
    config = small_config(tmp_path)
    out = tmp_path / "run"
    clean = sweep(config, out).metrics
    files = shard_files(out)
    flipped, empty, truncated = files[1], files[5], files[-1]
    _flip_data_byte(flipped)
    empty.write_bytes(b"")
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    untouched = {p: p.stat().st_mtime_ns for p in files if p not in (flipped, empty, truncated)}

    log = io.StringIO()
    again = sweep(config, out, stream=log)
    said = log.getvalue()
    for path in (flipped, empty, truncated):
        assert f"{path}: damaged" in said, said
    assert again.sweep.skipped == len(files) - 3
    assert all(p.stat().st_mtime_ns == t for p, t in untouched.items()), "whole shards were rewritten"
    for path in (flipped, empty, truncated):
        pq.read_table(path, page_checksum_verification=True)  # whole again
    assert_complete(out)
    assert _values(again.metrics).equals(_values(clean))


def test_score_names_a_shard_it_cannot_read(tmp_path, data_dir, ray_local):
    config = small_config(tmp_path)
    out = tmp_path / "run"
    sweep(config, out)
    bad = shard_files(out)[2]
    bad.write_bytes(bad.read_bytes()[:100])
    result = CliRunner().invoke(main, ["score", "--run", str(out)])
    assert result.exit_code == 2, result.output
    assert f"{bad}: damaged" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("damage", [b"", b'{"run_id": "small-2026', b"\xff\xfe not json"])
def test_damaged_run_record_is_a_clear_error(tmp_path, data_dir, damage):
    config = small_config(tmp_path)
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_bytes(damage)
    for args in (["sweep", "--config", str(config), "--out", str(out)], ["score", "--run", str(out)]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, result.output
        assert f"{out / 'run.json'}: damaged" in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
    assert sorted(p.name for p in out.iterdir()) == ["run.json"]  # nothing else written


def _identity_config(tmp_path: Path, **system) -> Path:
    return live_config(tmp_path, {"copy": {"backend": "identity", "version": "v1", **system}})


@pytest.mark.parametrize("system, named", [({"resources": {"tpu_pod": 1}}, "'tpu_pod'"), ({"num_gpus": 1}, "'GPU'")])
def test_a_resource_no_node_has_fails_before_sending(tmp_path, data_dir, ray_local, system, named):
    out = tmp_path / "run"
    start = time.monotonic()
    with pytest.raises(PlacementError, match=named) as caught:
        sweep(_identity_config(tmp_path, **system), out)
    assert "systems.copy" in str(caught.value) and "nothing was sent" in str(caught.value)
    assert time.monotonic() - start < 60  # timing: not waiting for a node that will never come (seconds normally)
    assert not list((tmp_path / "store").rglob("*.parquet")) and not shard_files(out)


def test_placement_wait_is_bounded(tmp_path, data_dir, ray_local):
    """With placement_wait_s the actor is created (an autoscaler sees its demand) and given up after that long."""
    config = live_config(tmp_path, {"copy": {"backend": "identity", "version": "v1", "resources": {"tpu_pod": 1}}},
                         sweep={"placement_wait_s": 2})
    log = io.StringIO()
    start = time.monotonic()
    with pytest.raises(SweepFailed, match=r"no live node can host its actor any more \(resource 'tpu_pod'.*waited 2 s"):
        sweep(config, tmp_path / "run", stream=log)
    assert 2 <= time.monotonic() - start < 60  # timing: it waited its 2 s (a lower bound) and gave up (seconds)
    assert "no live node has resource 'tpu_pod'" in log.getvalue() and "waiting up to 2 s" in log.getvalue()
    assert not list((tmp_path / "store").rglob("*.parquet"))


def _worker_pids(system: str) -> set[int]:
    """Process ids of this Ray's ShardWorkers hosting ``system`` (from their own log lines), alive or not."""
    import ray

    logs = Path(ray._private.worker._global_node.get_session_dir_path()) / "logs"
    pids = set()
    for path in logs.glob("worker-*.out"):
        for line in path.read_text(errors="ignore").splitlines():
            if line.startswith(f"biaseval: ShardWorker {system} on node") and " pid " in line:
                pids.add(int(line.rsplit(" pid ", 1)[1]))
    return pids


def _alive_worker(pid: int) -> bool:
    try:
        return b"ShardWorker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_a_lost_actor_is_replaced_and_the_sweep_completes(tmp_path, data_dir, ray_local):
    config = small_config(tmp_path, shard_size=60)
    out = tmp_path / "run"
    earlier = _worker_pids("google")  # actors of this module's earlier sweeps
    killed: list[int] = []

    def kill_one_worker() -> None:
        deadline = time.monotonic() + 120  # timing: polls for a worker to kill; the deadline bounds a hang
        while time.monotonic() < deadline:
            pids = [p for p in _worker_pids("google") - earlier if _alive_worker(p)]
            if pids and len(shard_files(out)) >= 3:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
                return
            time.sleep(0.05)  # timing: a polling interval

    killer = threading.Thread(target=kill_one_worker)
    killer.start()
    try:
        result = sweep(config, out)
    finally:
        killer.join()
    assert killed, "no worker was killed"
    assert result.sweep.shards == len(shard_files(out))
    assert_complete(out)
    assert len(_worker_pids("google") - earlier) >= 2  # a second actor took over


def test_live_sends_go_in_tasks_of_texts_per_task(tmp_path, data_dir, ray_local):
    """One shard of 701 distinct texts, 100 per task; the actor dies after its third task: the store
    keeps exactly the 300 texts of the finished tasks, and the rerun sends only the rest."""
    systems = {"copy": {"backend": "identity", "version": "v1"}}
    config = live_config(tmp_path, systems, sweep={"shard_size": 1000, "texts_per_task": 100, "task_retries": 0})
    out = tmp_path / "run"
    with pytest.raises(SweepFailed, match="rerun of the same command resumes"):
        sweep(config, out, die_after=3)
    store = TranslationStore(tmp_path / "store")
    identity = identity_of(SystemConfig(**systems["copy"]))
    stored = pl.read_parquet(store.parts(identity))
    assert stored.filter(pl.col("translation").is_not_null()).height == 300
    rerun = sweep(config, out)
    assert rerun.sweep.sent == WINO_TEXTS - 300
    rows = pl.read_parquet(shard_files(out))
    assert rows.height == WINO and rows["translation"].null_count() == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_ray_left_running_on_the_host_is_not_joined(tmp_path, data_dir):
    """`ray start --head` earlier on this host, no RAY_ADDRESS: the sweep starts its own Ray (a plain
    ray.init() would find that cluster through <RAY_TMPDIR>/ray/ray_current_cluster and refuse num_cpus).
    RAY_TMPDIR keeps this cluster private to the test."""
    ray_tmp = tempfile.mkdtemp(prefix="bvs", dir="/tmp")
    env = ray_start_env({k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"})
    env.update(RAY_TMPDIR=ray_tmp)
    started = subprocess.run([RAY, "start", "--head", f"--port={_free_port()}", *ray_start_ports(), "--num-cpus=1",
                              "--include-dashboard=false", "--disable-usage-stats"],
                             env=env, capture_output=True, text=True, timeout=180, start_new_session=True)
    try:
        assert started.returncode == 0, started.stderr[-2000:]
        assert (Path(ray_tmp) / "ray" / "ray_current_cluster").exists()
        out = tmp_path / "run"
        done = subprocess.run([sys.executable, "-m", "biaseval.cli", "sweep", "--config", str(small_config(tmp_path)),
                               "--out", str(out), "--no-report"], env=env, capture_output=True, text=True,
                              timeout=600, start_new_session=True)
        assert done.returncode == 0, done.stderr[-3000:]
        assert_complete(out)
    finally:
        assert kill_sessions(sessions_matching(ray_tmp)) == []


def test_a_rerun_with_fewer_systems_is_refused(tmp_path, data_dir, ray_local):
    """--systems on a finished run would rewrite run.json with fewer systems and drop the others from
    every later scoring; it is refused, the run left as it was."""
    from biaseval.errors import RunDirError

    config = small_config(tmp_path)
    out = tmp_path / "run"
    sweep(config, out)
    before = (out / "run.json").read_bytes(), pq.read_metadata(out / "metrics.parquet").num_rows
    with pytest.raises(RunDirError, match="leaves out aws"):
        sweep(config, out, systems=["google"])
    assert ((out / "run.json").read_bytes(), pq.read_metadata(out / "metrics.parquet").num_rows) == before
    assert sweep(config, tmp_path / "google-only", systems=["google"]).sweep.shards < 22
