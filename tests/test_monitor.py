"""Drift monitoring: a system whose outputs were changed on purpose is caught (flip list, McNemar,
metric changes, exit status, notification, history), an unchanged one is not, and a provider that
is down is reported as such without a misleading history row."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO

from biaseval.cli import main
from biaseval.monitor.history import history
from biaseval.monitor.run import run_monitor
from biaseval.monitor.verdict import EXIT_DRIFT, EXIT_UNAVAILABLE

WINO = "WinoMT-Hindi"
CHANGED = 60  # anti-stereotypical WinoMT lines, gold male, whose "he" becomes "she" in the "now" outputs


def _paper_systems() -> dict:
    return yaml.safe_load((REPO / "conf" / "paper.yaml").read_text(encoding="utf-8"))["systems"]


def _changed_google(hindi: Path, folder: Path) -> dict:
    """Google's recorded WinoMT-Hindi outputs with some answers changed: a new "version"."""
    out = folder / "google-now"
    out.mkdir()
    for stem in ("pro", "anti"):
        lines = (hindi / WINO / "stereo_google" / f"{stem}stereohindi_google.txt").read_text(encoding="utf-8").split("\n")
        if stem == "anti":
            gold = [g.split("\t")[0] for g in (hindi / WINO / "goldlabelantiall.txt").read_text(encoding="utf-8").split("\n")]
            changed = 0
            for k, line in enumerate(lines):
                if changed < CHANGED and gold[k] == "male" and " he " in f" {line} " and " she " not in f" {line} ":
                    lines[k] = f" {line} ".replace(" he ", " she ", 1).strip()
                    changed += 1
        (out / f"{stem}.txt").write_text("\n".join(lines), encoding="utf-8")
    return {"backend": "recorded", "version": "changed on purpose", "options": {"files": {"winomt-hi": str(out / "{stem}.txt")}}}


def _config(folder: Path, systems: dict, baselines: dict, **monitor) -> Path:
    config = {
        "name": "watch", "suites": ["winomt-hi"], "systems": systems,
        "metrics": {"bootstrap": 300, "seed": 3}, "cache": {"path": str(folder / "cache")},
        "monitor": {"store": str(folder / "store"), "baselines": baselines, "threshold": 0.02,
                    "notify": {"command": f"cat > {folder / 'notified.json'}"}, **monitor},
    }
    path = folder / "monitor.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def watched(hindi, ray_local, tmp_path_factory):
    folder = tmp_path_factory.mktemp("monitor")
    paper = _paper_systems()
    recorded = lambda name: {**paper[name], "options": {**paper[name]["options"],  # noqa: E731
                                                        "files": {"winomt-hi": paper[name]["options"]["files"]["winomt-hi"]}}}
    systems = {"google-2023": recorded("google"), "google-now": _changed_google(hindi, folder), "aws": recorded("aws")}
    path = _config(folder, systems, {"google-now": {"system": "google-2023"}})
    first = run_monitor(path)
    second = run_monitor(path)
    return folder, path, first, second


def test_changed_system_raises_the_alarm_with_evidence(watched):
    folder, _, first, _ = watched
    assert first.alarm and first.exit_code == EXIT_DRIFT
    now = {s.system: s for s in first.systems}["google-now"]
    assert now.status == "drift" and now.baseline == "system google-2023 (this run)"
    suite = now.suites[0]
    assert suite["flipped"] == CHANGED and suite["text_changed_share"] == pytest.approx(CHANGED / 704)
    assert (suite["better"], suite["worse"]) == (0, CHANGED) and suite["mcnemar_p"] < 1e-15
    flips = now.flips
    assert flips.height == CHANGED and flips["label_base"].unique().to_list() == ["male"]
    assert set(flips["label"]) <= {"female", "ambiguous"}  # "she" now, maybe beside another "he"
    assert (flips["translation"] != flips["translation_base"]).all()
    significant = now.changes.filter(pl.col("significant"))
    assert {"acc", "delta_s"} <= set(significant["metric"].to_list())
    acc = now.changes.filter((pl.col("metric") == "acc") & (pl.col("subset") == "all")).row(0, named=True)
    assert acc["change"] == pytest.approx(-CHANGED / 704) and acc["change_high"] < 0
    anti = now.changes.filter((pl.col("metric") == "acc") & (pl.col("subset") == "anti")).row(0, named=True)
    assert anti["change"] == pytest.approx(-CHANGED / 352) and anti["significant"]
    pro = now.changes.filter((pl.col("metric") == "acc") & (pl.col("subset") == "pro")).row(0, named=True)
    assert pro["change"] == 0 and not pro["significant"]
    # evidence in the run directory and the notification
    drift = (first.run.root / "drift.md").read_text(encoding="utf-8")
    assert "## google-now: drift" in drift and "Flipped labels" in drift
    assert pl.read_parquet(first.run.root / "drift" / "flips.parquet").height == CHANGED
    sent = json.loads((folder / "notified.json").read_text(encoding="utf-8"))
    assert sent["alarm"] is True and sent["run_id"] in {first.run_id, watched[3].run_id}


def test_unchanged_system_is_quiet_and_compared_with_the_previous_run(watched):
    _, _, first, second = watched
    assert {s.system: s.status for s in first.systems}["aws"] == "no baseline"
    aws = {s.system: s for s in second.systems}["aws"]
    assert aws.status == "ok" and aws.baseline == f"previous run {first.run_id}"
    assert aws.suites[0]["flipped"] == 0 and aws.suites[0]["mcnemar_p"] == 1.0
    assert not aws.changes["significant"].any() and (aws.changes["change"] == 0).all()
    assert "google-2023" not in {s.system for s in first.systems}  # a baseline, not monitored itself


def test_history_rows_and_trend(watched):
    _, path, first, second = watched
    table = history(path)
    assert set(table["run_id"]) == {first.run_id, second.run_id}
    assert set(table["system"]) == {"google-now", "aws"}
    per_run = table.group_by("run_id", "system").len()
    metrics = table.filter(pl.col("run_id") == first.run_id)
    assert per_run["len"].n_unique() == 1 and first.history_rows == metrics.height
    assert table.select(pl.struct("run_id", "system", "suite", "subset", "metric").n_unique()).item() == table.height
    acc = table.filter((pl.col("metric") == "acc") & (pl.col("subset") == "all") & (pl.col("system") == "aws"))
    assert acc.height == 2 and acc["value"].n_unique() == 1
    result = CliRunner().invoke(main, ["trend", "--config", str(path), "--metric", "acc", "--system", "aws"])
    assert result.exit_code == 0 and first.run_id in result.output


def test_cli_exit_status_and_dry_run(watched):
    folder, path, _, _ = watched
    before = len(list((folder / "store" / "history").glob("part-*.parquet")))
    result = CliRunner().invoke(main, ["monitor", "--config", str(path), "--dry-run"])
    assert result.exit_code == EXIT_DRIFT, result.output
    assert "google-now: drift" in result.output and "dry run: none written" in result.output
    assert len(list((folder / "store" / "history").glob("part-*.parquet"))) == before


def test_provider_down_is_reported_and_not_recorded_as_a_measurement(tmp_path, data_dir, ray_local):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    systems = {"google": {"backend": "google", "version": "v3",
                          "options": {"project": "p", "transport": "rest", "credentials": "anonymous",
                                      "endpoint": f"http://127.0.0.1:{port}"},
                          "retry": {"max_attempts": 2, "backoff_s": 0.01, "timeout_s": 2}}}
    path = _config(tmp_path, systems, {})
    result = run_monitor(path)
    assert result.exit_code == EXIT_UNAVAILABLE and not result.alarm
    google = result.systems[0]
    assert google.status == "unavailable" and "704 of 704 items failed" in google.message
    assert result.history_rows == 0 and history(path) is None
    status = pl.read_parquet(next((tmp_path / "store" / "status").glob("part-*.parquet")))
    assert status.row(0, named=True)["status"] == "unavailable"
    sent = json.loads((tmp_path / "notified.json").read_text(encoding="utf-8"))  # an outage notifies, naming the error
    assert sent["verdict"] == "unavailable" and sent["systems"][0]["message"] == google.message
    assert "google: unavailable — 704 of 704 items failed; first error: " in sent["text"]


def test_job_entry_point(watched):
    import importlib.util

    spec = importlib.util.spec_from_file_location("monitor_job", REPO / "jobs" / "monitor.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    assert job.main(["--config", str(watched[1]), "--dry-run"]) == EXIT_DRIFT


def test_scheduling_recipes_are_consistent(data_dir):
    """The checked-in recipes parse and point at what exists: conf/monitor.yaml (valid), jobs/monitor.py,
    `make monitor`."""
    from biaseval.config import load_config

    config = load_config(REPO / "conf" / "monitor.yaml")
    assert config.monitor and set(config.monitor.baselines) == {"google", "microsoft", "aws"}
    rayjob = yaml.safe_load((REPO / "deploy" / "kubernetes" / "rayjob-monitor.yaml").read_text(encoding="utf-8"))
    assert rayjob["kind"] == "RayJob" and rayjob["spec"]["entrypoint"] == "python jobs/monitor.py --config conf/monitor.yaml"
    kinds = [d["kind"] for d in yaml.safe_load_all((REPO / "deploy" / "kubernetes" / "cronjob-monitor.yaml").read_text())]
    assert kinds == ["ServiceAccount", "Role", "RoleBinding", "CronJob"]
    workflow = yaml.safe_load((REPO / "deploy" / "github" / "monitor.yml").read_text(encoding="utf-8"))
    assert workflow[True]["schedule"][0]["cron"] == "0 6 * * 1"  # YAML 1.1 reads the key `on` as True
    assert any("make monitor" in step.get("run", "") for step in workflow["jobs"]["monitor"]["steps"])
    assert "make monitor" in (REPO / "deploy" / "cron" / "biaseval-monitor.cron").read_text(encoding="utf-8")
    assert "\nmonitor: $(STAMP)" in (REPO / "Makefile").read_text(encoding="utf-8")


def _ids_in_run(run_dir: Path) -> dict[str, set]:
    """Every place a monitoring run's directory records its run id."""
    shards = pl.read_parquet(sorted((run_dir / "translations").rglob("shard-*.parquet")), columns=["run_id"])
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    return {
        "directory": {run_dir.name},
        "run.json": {json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["run_id"]},
        "metrics.parquet": set(pl.read_parquet(run_dir / "metrics.parquet", columns=["run_id"])["run_id"]),
        "translation shards": set(shards["run_id"]),
        "drift.json": {json.loads((run_dir / "drift.json").read_text(encoding="utf-8"))["run_id"]},
        "drift.md": {next(line for line in (run_dir / "drift.md").read_text(encoding="utf-8").splitlines()
                          if line.startswith("# Drift: "))[len("# Drift: "):]},
        "report.md": {line.split("`")[1] for line in report.splitlines() if line.startswith("- run: `")},
    }


def test_one_run_id_per_monitoring_run_everywhere(watched):
    """The store folder, run.json, metrics, shards, drift files, reports, history, status and the
    alarm all name a monitoring run by the same id; a run compared with the previous one names that
    run's id as its baseline_run."""
    folder, path, first, second = watched
    for result in (first, second):
        assert result.run.root.name == result.run_id
        ids = _ids_in_run(result.run.root)
        assert all(found == {result.run_id} for found in ids.values()), ids
        assert result.summary["run_id"] == result.run_id
    table = history(path)
    status = pl.read_parquet(sorted((folder / "store" / "status").glob("part-*.parquet")))
    assert set(table["run_id"]) == set(status["run_id"]) == {first.run_id, second.run_id}
    assert json.loads((folder / "notified.json").read_text(encoding="utf-8"))["run_id"] == second.run_id
    baselines = {(r["run_id"], r["system"]): r["baseline_run"]
                 for r in table.select("run_id", "system", "baseline_run").unique().iter_rows(named=True)}
    assert baselines[(second.run_id, "aws")] == first.run_id  # the previous monitoring run
    assert baselines[(first.run_id, "aws")] is None  # first measurement: no baseline
    assert baselines[(second.run_id, "google-now")] == second.run_id  # google-2023 in the same run
    assert set(baselines.values()) - {None} <= set(table["run_id"])


def test_a_given_run_id_is_not_forced_on_another_run(tmp_path, data_dir):
    """The sweep takes the monitor's run id for a new run, and refuses it for a folder that already
    holds a run under another id (before any translation)."""
    from biaseval.errors import RunDirError
    from biaseval.pipeline import sweep

    aws = _paper_systems()["aws"]
    aws["options"]["files"] = {"winomt-hi": aws["options"]["files"]["winomt-hi"]}
    path = _config(tmp_path, {"aws": aws}, {})
    out = tmp_path / "run"
    out.mkdir()
    earlier = {"run_id": "watch-earlier", "created_at": "2020-01-01T00:00:00+00:00", "refresh": False,
               "config": {}, "suites": {}, "systems": {}}  # what a run.json holds, as far as a resume reads it
    (out / "run.json").write_text(json.dumps(earlier), encoding="utf-8")
    with pytest.raises(RunDirError, match="holds run watch-earlier, not watch-new"):
        sweep(path, out, run_id="watch-new")
    assert sorted(p.name for p in out.iterdir()) == ["run.json"]
