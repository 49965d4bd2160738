"""Live systems inside the sweep: the translation store as cache, --refresh, the cost guard, and
failed texts recorded (not dropped, not empty) and retried by the next run."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from biaseval.run.translation_store import TranslationStore
from biaseval.cli import main
from biaseval.errors import RunDirError
from biaseval.pipeline import sweep
from biaseval.config import SystemConfig
from biaseval.run.plan import BudgetExceeded, identity_of

WINO = 704
WINO_TEXTS = 701  # distinct WinoMT-Hindi sources: three sentences occur twice, and are sent once


def live_config(tmp_path: Path, systems: dict, name: str = "live.yaml", **extra) -> Path:
    config = {"name": "live", "suites": ["winomt-hi"], "systems": systems,
              "cache": {"path": str(tmp_path / "store")}, "metrics": {"bootstrap": 50},
              "sweep": {"shard_size": 300, "texts_per_task": 250}, **extra}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


IDENTITY = {"copy": {"backend": "identity", "version": "v1", "price_per_million_chars": 20.0}}


def rows(out: Path) -> pl.DataFrame:
    return pl.read_parquet(sorted((out / "translations").rglob("shard-*.parquet")))


def test_cache_across_runs_and_refresh(tmp_path, data_dir, ray_local):
    config = live_config(tmp_path, IDENTITY)
    first = sweep(config, tmp_path / "a")
    assert first.sweep.sent == WINO_TEXTS and first.sweep.failed == 0
    a = rows(tmp_path / "a")
    assert a.height == WINO and a["translation"].null_count() == 0
    assert (a["translation"] == a["source"]).all()
    assert not a["cached"].any() and (a["attempts"] == 1).all()
    assert a["provider"].unique().to_list() == ["biaseval identity"] and a["model"].unique().to_list() == ["identity"]

    second = sweep(config, tmp_path / "b")  # another run: everything comes from the store
    assert second.sweep.sent == 0
    b = rows(tmp_path / "b")
    assert b["cached"].all() and b.height == WINO
    assert b.select("item_id", "translation").equals(a.select("item_id", "translation"))
    assert (b["translated_at"] == a.sort("item_id")["translated_at"]).all()  # when it was really translated

    with pytest.raises(RunDirError, match="--refresh needs a new --out"):
        sweep(config, tmp_path / "b", refresh=True)
    fresh = sweep(config, tmp_path / "c", refresh=True)
    assert fresh.sweep.sent == WINO_TEXTS
    assert not rows(tmp_path / "c")["cached"].any()

    # An operational change (actors, limits) keeps the cache; a new version does not.
    ops = live_config(tmp_path, {"copy": {**IDENTITY["copy"], "actors": 2, "limits": {"requests_per_s": 1000}}}, "ops.yaml")
    assert sweep(ops, tmp_path / "d").sweep.sent == 0
    v2 = live_config(tmp_path, {"copy": {**IDENTITY["copy"], "version": "v2"}}, "v2.yaml")
    assert sweep(v2, tmp_path / "e").sweep.sent == WINO_TEXTS


def test_plan_and_budget(tmp_path, data_dir):
    config = live_config(tmp_path, IDENTITY)
    result = CliRunner().invoke(main, ["plan", "--config", str(config)])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("copy")).split()
    # system, backend, items, distinct texts, in store, to send, requests, characters, est. cost, quota time, budget
    assert line[:6] == ["copy", "identity", f"{WINO:,}", f"{WINO_TEXTS:,}", "0", f"{WINO_TEXTS:,}"]
    # identity packs up to 100,000 texts a request, but a request carries one send task's texts: shards
    # of 300 items sent in tasks of at most 250 texts make 2 + 2 + 1 requests
    assert line[6] == "≥5"
    chars = int(line[7].replace(",", ""))
    assert float(line[8]) == pytest.approx(chars / 1e6 * 20.0, abs=0.01)
    assert "total estimated cost:" in result.output

    tight = live_config(tmp_path, {"copy": {**IDENTITY["copy"], "max_chars": 1000}}, "tight.yaml")
    with pytest.raises(BudgetExceeded, match=r"systems.copy: this sweep would send [\d,]+ characters .* over its max_chars budget of 1,000"):
        sweep(tight, tmp_path / "never")
    assert not (tmp_path / "never").exists()
    plan = CliRunner().invoke(main, ["plan", "--config", str(tight)])
    assert "1,000 OVER" in plan.output


def test_failed_texts_are_recorded_and_retried(tmp_path, data_dir, ray_local):
    broken = {"spanish": {"backend": "apertium", "version": "x", "options": {"pair": "eng-xyz"},
                          "retry": {"max_attempts": 1}}}
    config = live_config(tmp_path, broken)
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["sweep", "--config", str(config), "--out", str(out)])
    assert result.exit_code == 4, result.output
    assert "have no translation" in result.output
    r = rows(out)
    assert r.height == WINO  # every item has a row
    assert r["translation"].null_count() == WINO  # none is an empty stand-in
    assert r["error"].str.contains("the Apertium mode 'eng-xyz' is not installed: missing Debian package: "
                                   "apertium-eng-xyz", literal=True).all()
    store = TranslationStore(tmp_path / "store")
    assert store.parts  # failures are in the store too
    labels = pl.read_parquet(out / "labels.parquet")
    assert labels["label"].null_count() == WINO
    # the next run tries them again (failures are never cache hits)
    again = sweep(config, out)
    assert again.sweep.sent == WINO_TEXTS and again.sweep.failed == WINO


def test_cloud_and_recorded_systems_resume_without_resending(tmp_path, data_dir, ray_local, paper_config):
    """A sweep mixing Google (wire-level fake) and recorded AWS outputs: an actor dies mid-sweep, the
    rerun completes with one row per item × system, and nothing the store held is sent again."""
    from fakes.google_server import FakeGoogleTranslate

    recorded_aws = yaml.safe_load(paper_config.read_text(encoding="utf-8"))["systems"]["aws"]
    recorded_aws["options"]["files"] = {"winomt-hi": recorded_aws["options"]["files"]["winomt-hi"]}
    with FakeGoogleTranslate() as fake:
        systems = {
            "google": {"backend": "google", "version": "v3 nmt",
                       "options": {"project": "p", "transport": "rest", "credentials": "anonymous",
                                   "endpoint": fake.endpoint("rest")},
                       "limits": {"requests_per_s": 200}, "concurrency": 2},
            "aws": recorded_aws,
        }
        config = live_config(tmp_path, systems, sweep={"shard_size": 300, "texts_per_task": 100, "task_retries": 0})
        out = tmp_path / "run"
        with pytest.raises(Exception, match="resumes"):
            sweep(config, out, die_after=2)  # each actor exits after its second task
        first = {t for r in fake.requests if r.status == "OK" for t in r.contents}
        store = pl.read_parquet(TranslationStore(tmp_path / "store").parts(identity_of(SystemConfig(**systems["google"]))))
        stored = set(store.filter(pl.col("translation").is_not_null())["source"])
        assert 0 < len(stored) < WINO_TEXTS and stored <= first
        before = len(fake.requests)

        result = sweep(config, out)
        resent = {t for r in fake.requests[before:] for t in r.contents}
        assert resent.isdisjoint(stored)  # what reached the store is never paid for twice
        assert len(resent | stored) == WINO_TEXTS
        assert result.sweep.sent == len(resent) and result.sweep.failed == 0

    final = rows(out)
    assert final.height == 2 * WINO
    assert final.select(pl.struct("system", "item_id").n_unique()).item() == 2 * WINO
    google = final.filter(pl.col("system") == "google")
    assert (google["translation"] == google["source"].map_elements(lambda s: "en:" + s[::-1], return_dtype=pl.String)).all()
    assert google["provider"].unique().to_list() == ["Google Cloud Translation v3"]
    assert final.filter(pl.col("system") == "aws")["provider"].unique().to_list() == ["recorded"]



def test_report_lists_items_without_a_translation(tmp_path, data_dir, ray_local):
    broken = {"spanish": {"backend": "apertium", "version": "x", "options": {"pair": "eng-xyz"},
                          "retry": {"max_attempts": 1}}}
    out = tmp_path / "run"
    sweep(live_config(tmp_path, broken), out)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Items without a translation" in report
    assert "| spanish | winomt-hi | 704 | MissingPackages: systems.spanish: the Apertium mode 'eng-xyz' is not installed" \
        in report
    assert pl.read_parquet(out / "labels.parquet")["error"].null_count() == 0
