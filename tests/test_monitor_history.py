"""The monitor's history as a long-lived dataset: ~300 weekly runs appended one part at a time,
compacted into one file once enough gather, old rows dropped by the retention, every row read back
once; `biaseval trend` on a time axis (a row per run, not a column); the same on object storage
(moto's S3 server)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.config import load_config
from biaseval.monitor.history import append_history, history, store_dirs
from biaseval.monitor.verdict import SystemDrift
from test_object_store import BUCKET, s3  # noqa: F401  (moto's S3 server, as the object-store tests start it)

RUNS = 300
START = datetime(2021, 1, 4, 6, 0, 7, tzinfo=UTC)
SERIES = [("winomt-hi", "all", "acc"), ("winomt-hi", "all", "delta_s"), ("tgbi-hi", "all", "tgbi")]
SYSTEMS = ["google", "deepl"]


def _config(folder, history: dict) -> str:
    config = {"name": "weekly", "suites": ["winomt-hi"], "systems": {"google": {"backend": "identity"}},
              "monitor": {"store": str(folder / "store"), "history": history}}
    path = folder / "monitor.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _value(k: int, system: str, metric: str) -> float:
    return round(0.5 + 0.001 * k + (0.1 if system == "deepl" else 0) + (0.01 if metric == "tgbi" else 0), 6)


def _append_runs(path, runs: int = RUNS) -> list[str]:
    """``runs`` weekly monitoring runs through the monitor's own append (history and status)."""
    config = load_config(path)
    _, store = store_dirs(config, path.parent)
    ids = []
    for k in range(runs):
        now = START + timedelta(weeks=k)
        run_id = f"weekly-{now:%Y%m%dT%H%M%SZ}-{k:04d}"
        metrics = pl.DataFrame([{"system": s, "suite": suite, "subset": subset, "metric": m,
                                 "value": _value(k, s, m), "ci_low": _value(k, s, m) - 0.02,
                                 "ci_high": _value(k, s, m) + 0.02, "n": 704}
                                for s in SYSTEMS for suite, subset, m in SERIES])
        systems = [SystemDrift(s, "ok" if k else "no baseline") for s in SYSTEMS]
        append_history(store, run_id, now, metrics, systems)
        ids.append(run_id)
    return ids


def _check_history(path, kept_from: int, compact_after: int) -> None:
    config = load_config(path)
    _, store = store_dirs(config, path.parent)
    table = history(path)
    runs = RUNS - kept_from
    assert table.height == runs * len(SYSTEMS) * len(SERIES)  # each row once, none lost, none twice
    assert table["run_id"].n_unique() == runs
    assert table["created_at"].is_sorted() and table["created_at"].min() == START + timedelta(weeks=kept_from)
    got = table.filter((pl.col("system") == "deepl") & (pl.col("metric") == "acc"))["value"].to_list()
    assert got == [_value(k, "deepl", "acc") for k in range(kept_from, RUNS)]
    files = store.files("history")
    assert sum("/compact-" in f for f in files) == 1 and sum("/part-" in f for f in files) <= compact_after
    assert store.read("status").height == runs * len(SYSTEMS)


@pytest.mark.slow  # 300 runs appended one by one: about 8 s
def test_three_hundred_runs_compacted_and_kept_for_the_retention(tmp_path):
    path = _config(tmp_path, {"compact_after": 40, "retention_days": 7 * 200})
    ids = _append_runs(path)
    # a compaction runs at every 41st part (runs 40, 81, ..., 286), keeping the 200 weeks before it;
    # the runs after the last one are parts
    last_compaction = max(k for k in range(RUNS) if (k + 1) % 41 == 0)
    _check_history(path, kept_from=last_compaction - 200, compact_after=40)

    result = CliRunner().invoke(main, ["trend", "--config", str(path), "--metric", "acc", "--system", "google"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "weekly-" in line]
    assert len(lines) == RUNS - (last_compaction - 200)  # one line per run: a time axis
    assert ids[-1] in lines[-1] and (START + timedelta(weeks=RUNS - 1)).strftime("%Y-%m-%dT%H:%M:%SZ") in lines[-1]
    csv = CliRunner().invoke(main, ["trend", "--config", str(path), "--last", "3", "--csv"])
    frame = pl.read_csv(csv.output.encode())
    assert frame["run_id"].unique().sort().to_list() == ids[-3:]
    assert frame.height == 3 * len(SYSTEMS) * len(SERIES)
    assert frame["created_at"][0] == (START + timedelta(weeks=RUNS - 3)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_reader_between_the_compacted_file_and_the_deletes_sees_each_row_once(tmp_path):
    path = _config(tmp_path, {"compact_after": 1000})
    _append_runs(path, runs=30)
    config = load_config(path)
    _, store = store_dirs(config, path.parent)
    table = store.read("history")
    store.folder.write_parquet("history/compact-interrupted.parquet", table.to_arrow())  # parts not yet deleted
    again = history(path)
    assert again.height == table.height == 30 * len(SYSTEMS) * len(SERIES)


@pytest.mark.slow
def test_history_on_object_storage(tmp_path, s3):
    path = _config(tmp_path, {"location": f"s3://{BUCKET}/monitor-history", "compact_after": 25})
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "output": {"endpoint": s3}}), encoding="utf-8")
    ids = _append_runs(path, runs=60)
    table = history(path)
    assert table.height == 60 * len(SYSTEMS) * len(SERIES) and table["run_id"].unique().sort().to_list() == ids
    assert not (tmp_path / "store" / "history").exists()  # nothing local: the dataset is in the bucket
    import boto3

    keys = [o["Key"] for o in boto3.client("s3", endpoint_url=s3, region_name="us-east-1")
            .list_objects_v2(Bucket=BUCKET, Prefix="monitor-history/history/")["Contents"]]
    assert sum("compact-" in k for k in keys) == 1 and len(keys) <= 26
