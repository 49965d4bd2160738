"""MiTTenS through the whole pipeline on a local Ray: the shipped sanity config (the references replayed as a
system) gives the values docs/mittens.md states, with intervals and provenance on every row and the
paper's Table 3 in both reports; and an LLM with ``prompt: dataset`` sends the paper's prompts while
the same LLM with its templates sends the passages, into one translation store without sharing."""

from __future__ import annotations

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from conftest import REPO
from fakes.openai_server import FakeOpenAI, translate
from test_mittens import READER_ON_REFERENCES

KEY = "sk-fake-openai-key-0123456789"


@pytest.fixture(scope="module", autouse=True)
def key_env():
    """The key in the environment before the module's Ray starts (its workers inherit it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BIASEVAL_TEST_OPENAI_KEY", KEY)
        yield


def sweep(config, out):
    result = CliRunner().invoke(main, ["sweep", "--config", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output


def test_the_shipped_references_run(tmp_path, data_dir, ray_local):
    sweep(REPO / "conf" / "mittens-references.yaml", tmp_path / "run")
    metrics = pl.read_parquet(tmp_path / "run" / "metrics.parquet")
    got = {(r["suite"], r["subset"], r["metric"]): r for r in metrics.iter_rows(named=True)}
    overall = got["mittens-2en", "all", "acc"]
    assert (overall["value"], overall["n"]) == (1.0, 1744) and overall["ci_low"] > 0.997 and overall["ci_high"] == 1.0
    assert got["mittens-2en", "all", "unknown"]["value"] == 0.0
    for lang, (n, read, right) in READER_ON_REFERENCES.items():
        assert (got["mittens-2xx", f"lang/{lang}", "read"]["value"], got["mittens-2xx", f"lang/{lang}", "read"]["n"]) \
            == (read / n, n)
        assert got["mittens-2xx", f"lang/{lang}", "acc"]["value"] == right / read
    unread = metrics.filter((pl.col("suite") == "mittens-2xx") & (pl.col("metric") == "no_reader")
                            & pl.col("subset").str.starts_with("lang/"))
    assert sorted(s[5:] for s in unread["subset"]) == ["am", "ar", "bn", "cs", "hi", "ja", "pl", "te", "th", "zh"]
    shares = metrics.filter(pl.col("metric").is_in(["acc", "read", "misgendered"]))
    assert shares["ci_low"].null_count() == 0 and shares["signature"].null_count() == 0
    assert (metrics["dataset_commit"] == "1635a8076672d022695213942bda98ce046892a4").all()
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "## MiTTenS (Robinson et al. 2024, Table 3)" in report and "WinoMT per target language" not in report
    assert "Not read (no reader for the language; its passages are not scored): am, ar, bn, cs, hi, ja" in report
    assert "MiTTenS: accuracy, weakest groups and worst case" in (tmp_path / "run" / "report.html").read_text(
        encoding="utf-8")


def test_an_llm_sends_the_papers_prompt_and_an_mt_system_the_passage(tmp_path, data_dir, ray_local):
    with FakeOpenAI(key=KEY, models=("gpt-test",)) as fake:
        llm = {"backend": "openai", "version": "fake 2026-01", "concurrency": 4,
               "options": {"model": "gpt-test", "base_url": fake.base_url, "api_key_env": "BIASEVAL_TEST_OPENAI_KEY"}}
        config = {"name": "mittens-llm", "suites": ["mittens-2en", "mittens-2xx"],
                  "targets": {"mittens-2en": ["es"], "mittens-2xx": ["es"]},
                  "cache": {"path": str(tmp_path / "store")}, "metrics": {"bootstrap": 20},
                  "systems": {"paper": {**llm, "options": {**llm["options"], "prompt": "dataset"}}, "plain": llm}}
        path = tmp_path / "llm.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        sweep(path, tmp_path / "run")
        items = pl.read_parquet(tmp_path / "run" / "items.parquet")
        distinct = {c: items.select("src_lang", "tgt_lang", c).n_unique() for c in ("prompt", "source")}
        assert items.height == 334 + 118 and fake.count == distinct["prompt"] + distinct["source"]  # each text once
        bodies = [r.body["messages"] for r in fake.requests]
        paper = sorted(m[0]["content"] for m in bodies if len(m) == 1)
        plain = sorted(m[1]["content"] for m in bodies if len(m) == 2)
        assert paper == sorted(set(items["prompt"])) and plain == sorted(set(items["source"]))
        rows = pl.read_parquet(sorted((tmp_path / "run" / "translations").rglob("shard-*.parquet")))
        sent = rows.join(items.select("item_id", "prompt", pl.col("source").alias("passage")), on="item_id")
        mine = sent.filter(pl.col("system") == "paper")
        assert (mine["source"] == mine["prompt"]).all()  # the rows record what was sent
        assert (mine["translation"] == [translate(p, "xx") for p in mine["prompt"]]).all()
        other = sent.filter(pl.col("system") == "plain")
        assert (other["source"] == other["passage"]).all()
        sweep(path, tmp_path / "again")  # the same store: nothing sent again, for either system
        assert fake.count == distinct["prompt"] + distinct["source"]
