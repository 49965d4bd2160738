"""Drift monitoring: a system whose outputs were changed on purpose is caught (flip list, McNemar,
metric changes, exit status, notification, history), an unchanged one is not, and a provider that
is down is reported as such without a misleading history row."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO
from test_html_report import chromium  # noqa: F401  (the browser, as the report tests find it)

from biaseval.cli import main
from biaseval.config import load_config
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


def test_changes_carry_raw_and_adjusted_p_over_one_family(watched):
    """Each change names its test: the label shares (here N; p_m, p_f and p_n of other suites) share
    one, Stuart–Maxwell's on the labels; Acc has McNemar's (here an exact 2·0.5^60: 60 items worse, none better), ΔS the Wald p
    of its interval; the run's family is corrected by Benjamini–Hochberg, and its size is the
    number of distinct tests."""
    _, path, first, _ = watched
    now = {s.system: s for s in first.systems}["google-now"]
    rows = {(r["subset"], r["metric"]): r for r in now.changes.iter_rows(named=True)}
    for subset in ("all", "anti"):
        assert rows[(subset, "neutral")]["test"] == "labels" and rows[(subset, "neutral")]["p"] < 1e-10
        assert rows[(subset, "acc")]["test"] == "outcome" and rows[(subset, "acc")]["p"] == pytest.approx(2 * 0.5 ** 60)
    assert rows[("pro", "acc")]["p"] == 1.0 and rows[("all", "delta_s")]["test"] == "interval:delta_s"
    assert now.suites[0]["mcnemar_p"] == pytest.approx(2 * 0.5 ** 60)
    assert now.suites[0]["labels_p"] == rows[("all", "neutral")]["p"]
    assert all(r["p_adjusted"] >= r["p"] for r in rows.values() if r["p_adjusted"] is not None)
    watch = load_config(path).monitor.watch
    family = {(s.system, *k) for s in first.systems if s.changes is not None
              for k in s.changes.filter(pl.col("metric").is_in(list(watch))).select("suite", "subset", "test").iter_rows()}
    family |= {(s.system, i["suite"], "all", "outcome") for s in first.systems for i in s.suites}
    assert first.summary["statistics"]["tests"] == len(family) and first.summary["statistics"]["correction"] == "bh"
    # BH by hand on the run's family: rank the raw p, p·m/rank, monotone from the top
    raw = {}
    for s in first.systems:
        for r in (s.changes.iter_rows(named=True) if s.changes is not None else []):
            if r["metric"] in watch:
                raw[(s.system, r["suite"], r["subset"], r["test"])] = r["p"]
    ordered = sorted(raw.items(), key=lambda kv: kv[1])
    m, running, expected = len(ordered), 1.0, {}
    for rank in range(m, 0, -1):
        key, p = ordered[rank - 1]
        running = min(running, p * m / rank)
        expected[key] = running
    assert rows[("all", "acc")]["p_adjusted"] == pytest.approx(expected[("google-now", "winomt-hi", "all", "outcome")])
    assert rows[("all", "delta_s")]["p_adjusted"] == pytest.approx(
        expected[("google-now", "winomt-hi", "all", "interval:delta_s")])
    drift = (first.run.root / "drift.md").read_text(encoding="utf-8")
    assert "Benjamini–Hochberg" in drift and "| adjusted p |" in drift
    assert {"test", "p", "p_adjusted"} <= set(history(path).columns)


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
    assert "monitor: cost" not in result.output  # recorded outputs cost nothing
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
    steps = workflow["jobs"]["monitor"]["steps"]
    assert any("make monitor" in step.get("run", "") for step in steps)
    # the store lives in object storage, restored before the run and saved after it, whatever its exit;
    # never in actions/cache (evicted after 7 days unused: a weekly schedule's gap)
    assert not any("actions/cache" in step.get("uses", "") for step in steps)
    runs = [step.get("run", "") for step in steps]
    monitor_at = next(k for k, r in enumerate(runs) if "make monitor" in r)
    restore = next(k for k, r in enumerate(runs) if 'aws s3 sync --only-show-errors "$STORE_URI" runs/monitor' in r)
    save = next(k for k, r in enumerate(runs) if r.endswith('runs/monitor "$STORE_URI"'))
    assert restore < monitor_at < save and steps[save]["if"].startswith("always()")
    store = load_config(REPO / "conf" / "monitor.yaml").monitor.store
    assert (REPO / "conf" / store).resolve() == (REPO / "runs" / "monitor").resolve()  # the folder synced
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


def _aws_recorded() -> dict:
    aws = _paper_systems()["aws"]
    aws["options"]["files"] = {"winomt-hi": aws["options"]["files"]["winomt-hi"]}
    return aws


def test_a_sample_of_each_suite_is_the_same_items_run_to_run(tmp_path, ray_local):
    """A stratified, seeded sample of 150 of WinoMT-Hindi's 704 items: both runs translate the same
    items (half pro, half anti, as the suite), the comparison pairs all 150, and the report states
    the change 150 items can detect."""
    from biaseval.suites.power import detectable_shift

    path = _config(tmp_path, {"aws": _aws_recorded()}, {}, sample={"size": 150, "seed": 1})
    first, second = run_monitor(path), run_monitor(path)
    items = []
    for result in (first, second):
        info = json.loads((result.run.root / "run.json").read_text(encoding="utf-8"))
        assert info["suites"]["winomt-hi"]["size"] == 150 and info["suites"]["winomt-hi"]["population"] == 704
        shards = pl.read_parquet(sorted((result.run.root / "translations").rglob("shard-*.parquet")))
        items.append(shards.sort("item_id")["item_id"].to_list())
        assert shards.group_by("subset").len().sort("subset")["len"].to_list() == [75, 75]
    assert items[0] == items[1] and len(set(items[0])) == 150
    aws = second.systems[0]
    assert aws.status == "ok" and aws.suites[0]["items"] == 150 and aws.suites[0]["flipped"] == 0
    # at the family's level: alpha over the run's tests (Bonferroni's, which BH and Holm beat)
    detectable = max(detectable_shift(150, 0.05 / second.summary["statistics"]["tests"], 0.8, 0.02), 0.02)
    assert aws.suites[0]["detectable_change"] == pytest.approx(detectable)
    drift = (second.run.root / "drift.md").read_text(encoding="utf-8")
    assert f"{100 * detectable:.1f} pts" in drift
    report = (second.run.root / "report.html").read_text(encoding="utf-8")
    assert "150 (sample of 704)" in report and f"{100 * detectable:.1f} pp" in report  # report.html: points as pp
    # the plan, before the run, counts every group a metric could report: its figure is never smaller
    planned = CliRunner().invoke(main, ["plan", "--config", str(path)])
    figure = float(re.search(r"detects a change of ([0-9.]+) points", planned.output).group(1))
    assert figure >= round(100 * detectable, 1), planned.output


def test_plan_shows_the_sample_its_size_from_the_change_to_detect_and_its_cost(tmp_path, data_dir):
    from biaseval.suites.power import detectable_shift, mcnemar_power

    systems = {"aws-live": {"backend": "identity", "version": "v1", "price_per_million_chars": 1000}}
    whole = CliRunner().invoke(main, ["plan", "--config", str(_config(tmp_path, systems, {}))])
    path = _config(tmp_path, systems, {}, sample={"detect": 0.05}, alpha=0.01)
    result = CliRunner().invoke(main, ["plan", "--config", str(path)])
    assert result.exit_code == 0 and whole.exit_code == 0, result.output + whole.output
    # WinoMT-Hindi's 704 items fall in 44 groups (all, pro, anti, en, 40 occupations), and the suite's
    # own test: 45 tests at most, each at 0.01 / 45; the fewest items with power 0.8 for a 5-point shift
    level = 0.01 / 45
    n = 540
    assert mcnemar_power(n, 0.05, level, 0.02) >= 0.8 > mcnemar_power(n - 1, 0.05, level, 0.02)
    assert f"monitor sample: winomt-hi: {n} of 704 items (seed 0); detects a change of " \
           f"{100 * detectable_shift(n, level, 0.8, 0.02):.1f} points (McNemar's exact test at 0.000222: alpha " \
           f"0.01 over at most 45 tests" in result.output
    rows = {}
    for name, output in (("sample", result.output), ("whole", whole.output)):
        parts = next(line for line in output.splitlines() if line.startswith("aws-live")).split()
        rows[name] = (int(parts[2]), int(parts[7].replace(",", "")), float(parts[8]))
    assert rows["whole"][0] == 704 and rows["sample"][0] == n
    assert rows["sample"][2] == pytest.approx(rows["sample"][1] * 1000 / 1e6, abs=0.01)  # the sample's cost
    assert 0.7 < rows["sample"][1] / rows["whole"][1] < 0.95  # about 540/704 of the characters


def test_drift_section_reads_at_a_glance_in_chromium(watched, chromium, tmp_path):
    """The second monitoring run's report.html in headless Chromium: the verdict comes first (before
    any suite), then the significant changes with adjusted p, the flipped items with both texts, and
    the trend whose caption and legend name the baseline; the screenshot shows the alarm box near
    the top of the page."""
    import shutil

    import numpy as np
    from PIL import Image

    from test_html_report import ARTIFACTS, _chromium, _Dom

    _, _, _, second = watched
    page = second.run.root / "report.html"
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copyfile(page, ARTIFACTS / "monitor-report.html")
    shot = ARTIFACTS / "monitor-drift-screenshot.png"
    shot.unlink(missing_ok=True)
    dumped = _chromium(["--dump-dom", page.resolve().as_uri()], tmp_path)
    taken = _chromium([f"--screenshot={shot}", "--window-size=1280,3000", page.resolve().as_uri()], tmp_path)
    assert dumped.returncode == 0 and taken.returncode == 0, taken.stderr.decode(errors="replace")[-2000:]
    dom = _Dom(dumped.stdout.decode("utf-8"))
    text = " ".join(" ".join(dom.text).split())
    assert {"verdict", "drift-changes", "drift-suites", "flips"} <= set(dom.tables), dom.tables
    assert text.index("ALARM: bias moved") < text.rindex("Accuracy and bias (WinoMT)")  # before the suites
    assert "google-now drift" in text and "aws ok" in text and "adjusted p" in text
    assert "google-now winomt-hi 704 60 (8.5%) 0 / 60" in text and "built-in method" not in text
    flips = pl.read_parquet(second.run.root / "drift" / "flips.parquet").sort("system", "suite", "item_id")
    first = flips.row(0, named=True)
    for shown in (first["item_id"], first["translation_base"], first["translation"]):
        assert " ".join(shown.split()) in text, shown
    assert f"The first 20 of {CHANGED} flipped items" in text
    assert "dashed: baseline" in text and "band: latest run's CI" in text
    with Image.open(shot) as image:
        assert image.size == (1280, 3000)
        top = np.asarray(image.convert("RGB"))[:1500].reshape(-1, 3).astype(int)
    alarm = (np.abs(top - np.array([0xFC, 0xE8, 0xE6])).sum(axis=1) <= 6).sum()
    assert alarm > 5000  # the verdict's red box, within the first 1500 pixels of the page
