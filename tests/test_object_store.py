"""Runs stored in object storage: an S3-compatible server (moto's) on 127.0.0.1, the real pyarrow S3
filesystem and polars reading the results back. Shards go straight to the bucket from the Ray
workers; the driver's files follow, then the manifest; an interrupted upload leaves no object."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import polars as pl
import pytest
import yaml

from biaseval.errors import SweepFailed
from biaseval.pipeline import score, sweep
from biaseval.run.filesystem import MANIFEST, Folder, StoreOptions
from test_sweep import ITEMS, SYSTEMS, small_config

pytestmark = pytest.mark.slow  # moto's S3 server, sweeps

BUCKET = "bias-runs"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """moto's S3 server on a free port, fake credentials in the environment; stopped afterwards."""
    port = _free_port()
    server = subprocess.Popen([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    endpoint = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")}
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"})
    try:
        deadline = time.monotonic() + 120  # timing: moto_server starts in seconds; a bound on a hang only
        while True:
            try:
                urllib.request.urlopen(endpoint, timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("moto_server did not start")
                time.sleep(0.2)  # timing: a polling interval
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        server.terminate()
        server.wait(timeout=10)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _config(tmp_path: Path, endpoint: str) -> Path:
    path = small_config(tmp_path, task_retries=0)  # a dead actor is not replaced: the sweep stops
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    spec["output"] = {"endpoint": endpoint, "region": "us-east-1"}
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def _storage_options(endpoint: str) -> dict:
    return {"aws_endpoint_url": endpoint, "aws_region": "us-east-1", "aws_allow_http": "true",
            "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def test_sweep_into_a_bucket_then_resume_and_rescore_elsewhere(s3, tmp_path, data_dir, ray_local, monkeypatch):
    out = f"s3://{BUCKET}/runs/small"
    config = _config(tmp_path, s3)
    with pytest.raises(SweepFailed, match="rerun of the same command resumes"):
        sweep(config, out, die_after=3)  # every actor exits after its third shard
    store = Folder(out, StoreOptions(endpoint=s3))
    partial = [f for f in store.files("translations") if f.endswith(".parquet")]
    assert 3 <= len(partial) < 2 * 11
    assert not store.exists(MANIFEST)

    summary = sweep(config, out)
    assert summary.sweep.skipped == len(partial)
    shards = [f"s3://{BUCKET}/runs/small/{f}" for f in store.files("translations") if f.endswith(".parquet")]
    assert len(shards) == 2 * 11
    rows = pl.read_parquet(shards, storage_options=_storage_options(s3), hive_partitioning=False)
    assert rows.height == ITEMS * len(SYSTEMS)
    assert rows.select(pl.struct("system", "item_id").n_unique()).item() == rows.height  # one row per item × system

    manifest = store.read_manifest()
    assert manifest is not None and manifest["run_id"] == summary.run.read_run()["run_id"]
    for name in ("run.json", "items.parquet", "labels.parquet", "metrics.parquet", "report.md", "report.html"):
        assert manifest["files"][name] == store.size(name), name
    assert set(manifest["files"]) >= {f[len(f"s3://{BUCKET}/runs/small/"):] for f in shards}
    metrics = pl.read_parquet(f"{out}/metrics.parquet", storage_options=_storage_options(s3))
    assert metrics.filter(pl.col("metric") == "acc").height > 0

    # A rescore from another machine: a fresh cache (no staging copy), only the bucket.
    monkeypatch.setenv("BIASEVAL_CACHE_DIR", str(tmp_path / "elsewhere"))
    again = score(out, StoreOptions(endpoint=s3))
    key = ["system", "suite", "subset", "metric"]
    assert again.select(*key, "value").sort(key).equals(metrics.select(*key, "value").sort(key))


def test_an_interrupted_upload_leaves_no_object(s3, tmp_path):
    """A process killed in the middle of writing a large object (a multipart upload) leaves nothing
    a reader could see: an object exists only once its upload completes."""
    code = f"""
import os
from biaseval.run.filesystem import Store, StoreOptions
store = Store("s3://{BUCKET}/partial", StoreOptions(endpoint="{s3}"))
out = store.fs.open_output_stream(store.path("shard-00000.parquet"))
out.write(b"x" * (12 * 1024 * 1024))  # past the multipart threshold: parts are on the server
out.flush()
os._exit(1)  # killed before the upload completes
"""
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    store = Folder(f"s3://{BUCKET}/partial", StoreOptions(endpoint=s3))
    assert store.files() == []
    # and a whole file written through the store appears whole
    store.write_bytes("shard-00001.parquet", b"y" * 1000)
    assert store.files() == ["shard-00001.parquet"] and store.size("shard-00001.parquet") == 1000
