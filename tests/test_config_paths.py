"""Every path a config names is relative to the config file's folder (docs/config.md), never to the
directory biaseval happens to run from: the translation store (cache.path), the monitor's store,
history and baseline runs, lexicons, embedding models, recorded outputs, template suites."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from biaseval.config import load_config
from biaseval.config.paths import baseline_location, cache_location, history_location, monitor_store
from biaseval.data.paths import from_file, location_from_file
from biaseval.monitor.history import store_dirs
from biaseval.pipeline import sweep
from biaseval.run.plan import cache_for
from biaseval.run.translation_store import default_root

COPY = {"copy": {"backend": "identity", "version": "v1"}}


def write_config(folder: Path, **spec) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump({"name": "paths", "suites": ["otsc-en"], "systems": COPY,
                                    "metrics": {"bootstrap": 50}, **spec}), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_relative_cache_path_is_next_to_the_config_whatever_the_current_directory(tmp_path, monkeypatch, ray_local):
    """(Finding: `cache: {path: store}` made a store/ in the directory biaseval ran from.)"""
    project = tmp_path / "project"
    config = write_config(project, cache={"path": "store"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    summary = sweep(config, tmp_path / "run")
    assert summary.sweep.sent == 320 and summary.sweep.failed == 0
    assert list((project / "store").rglob("part-*.parquet")), "the store is beside the config"
    assert list(elsewhere.iterdir()) == [], "nothing is created in the current directory"


def test_cache_location_of_each_kind_of_path(tmp_path, monkeypatch):
    config_dir = tmp_path / "project"
    monkeypatch.chdir(tmp_path)
    cases = {
        "store": str(config_dir / "store"),
        "../shared/store": str(config_dir / "../shared/store"),
        "/abs/store": "/abs/store",
        "~/store": str(Path.home() / "store"),
        "s3://bucket/biaseval/store": "s3://bucket/biaseval/store",
        "gs://bucket/store": "gs://bucket/store",
    }
    for written, expected in cases.items():
        config = load_config(write_config(config_dir, cache={"path": written}))
        assert cache_location(config.cache, config_dir) == expected, written
        assert cache_for(config, config_dir).root == expected
    config = load_config(write_config(config_dir))
    assert cache_location(config.cache, config_dir) is None
    assert cache_for(config, config_dir).root == str(default_root())


def test_the_monitor_folders_are_next_to_the_config(tmp_path, monkeypatch):
    """monitor.store and monitor.history.location always were; monitor.baselines.<s>.run was relative to
    the current directory (and a URI there was mangled into a local path)."""
    project = tmp_path / "project"
    monitor = {"store": "mon", "history": {"location": "hist"}, "baselines": {"copy": {"run": "runs/first"}}}
    config = load_config(write_config(project, monitor=monitor))
    monkeypatch.chdir(tmp_path)
    assert monitor_store(config.monitor, project) == project / "mon"
    assert history_location(config.monitor, project) == str(project / "hist")
    assert baseline_location(config.monitor.baselines["copy"]["run"], project) == project / "runs/first"
    runs, history = store_dirs(config, project)
    assert runs == project / "mon" / "runs" and history.folder.location == str(project / "hist")
    remote = load_config(write_config(project, monitor={"store": "mon", "history": {"location": "s3://b/h"}}))
    assert history_location(remote.monitor, project) == "s3://b/h"


@pytest.mark.parametrize("written", ["a", "a/b.txt", "../x", "./y", "~", "~/z", "/abs", "C:x", "s3x/y", "file.yaml"])
def test_from_file_is_the_file_folder_unless_absolute(tmp_path, written):
    path = from_file(written, tmp_path)
    assert path.is_absolute()
    if written.startswith("~"):
        assert path == Path.home() / written[2:]
    elif written.startswith("/"):
        assert path == Path(written)
    else:
        assert path == tmp_path / written


def test_location_keeps_uris_and_resolves_folders(tmp_path):
    assert location_from_file("s3://b/p", tmp_path) == "s3://b/p"
    assert location_from_file("gs://b/p", tmp_path) == "gs://b/p"
    assert location_from_file("runs/x", tmp_path) == str(tmp_path / "runs/x")
    assert location_from_file("s3:/not-a-uri", tmp_path) == str(tmp_path / "s3:/not-a-uri")
