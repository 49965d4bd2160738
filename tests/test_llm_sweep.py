"""The openai backend inside the sweep: the built-in otsc-en suite (es, it, fr, de) through the fake
OpenAI-compatible server completes, reruns with no request, and survives 20 % injected faults (429
with Retry-After, 500, 503, timeouts) with identical results. Refusals, chatty and wrong-language
replies are rows with their error and raw reply, never scored, never sent again, and `biaseval sweep`
exits 0 when they are the only rows without a translation."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from fakes.openai_server import FakeOpenAI, Reply, chatty, refusal, translate, untranslated

KEY = "sk-fake-openai-key-0123456789"
ITEMS = 320  # 40 occupations x her/him x 4 languages; every source is distinct within its language
RULES = [  # the same answers on every run, whatever the order requests come in
    (lambda text: "sheriff" in text, Reply(refusal)),
    (lambda text: "lawyer" in text, Reply(chatty)),
    (lambda text: "baker" in text, Reply(untranslated)),
]
REJECTED = {"sheriff": "refusal", "lawyer": "explanation", "baker": "wrong-language"}


@pytest.fixture(scope="module")
def key_env():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BIASEVAL_TEST_OPENAI_KEY", KEY)
        yield


@pytest.fixture(scope="module")
def ray_with_key(key_env, ray_local):
    """A local Ray started with the key in the environment (its workers inherit it)."""
    return ray_local


def write_config(tmp_path: Path, fake: FakeOpenAI, store: Path, name: str) -> Path:
    config = {
        "name": "llm-otsc", "suites": ["otsc-en"], "cache": {"path": str(store)}, "metrics": {"bootstrap": 50},
        "sweep": {"texts_per_task": 100},
        "systems": {"llm": {
            "backend": "openai", "version": "fake gpt-test 2026-01",
            "options": {"model": "gpt-test", "base_url": fake.base_url, "api_key_env": "BIASEVAL_TEST_OPENAI_KEY"},
            "concurrency": 4,
            "limits": {"requests_per_s": 500, "tokens_per_min": 5_000_000},
            "retry": {"max_attempts": 12, "backoff_s": 0.05, "max_backoff_s": 0.5, "timeout_s": 1.0},
        }},
    }
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def run(config: Path, out: Path):
    result = CliRunner().invoke(main, ["sweep", "--config", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return result


def rows(out: Path) -> pl.DataFrame:
    return pl.read_parquet(sorted((out / "translations").rglob("shard-*.parquet"))).sort("item_id")


def test_otsc_en_through_the_fake_openai_server(tmp_path, ray_with_key):
    with FakeOpenAI(key=KEY, models=("gpt-test",), rules=RULES) as fake:
        config = write_config(tmp_path, fake, tmp_path / "store", "llm.yaml")
        run(config, tmp_path / "run")
        assert fake.count == ITEMS and all(r.status == 200 for r in fake.requests)
        first = rows(tmp_path / "run")
        assert first.height == ITEMS and first["model"].unique().to_list() == ["gpt-test"]

        rejected = first.filter(pl.col("translation").is_null())
        assert rejected.height == 6 * 4  # three occupations x her/him x four languages
        for occupation, kind in REJECTED.items():
            mine = rejected.filter(pl.col("source").str.contains(occupation))
            assert mine.height == 8 and (mine["rejected"] == kind).all()
            assert (mine["error"] == f"not a translation ({kind})").all()
            assert mine["raw"].null_count() == 0
        baker = rejected.filter(pl.col("source").str.contains("baker"))
        assert (baker["raw"] == baker["source"]).all()  # the untranslated source, kept as it came
        done = first.filter(pl.col("translation").is_not_null())
        assert done["translation"].to_list() == [translate(s, t) for s, t in zip(done["source"], done["tgt_lang"])]
        assert done["rejected"].null_count() == done.height and done["error"].null_count() == done.height
        assert (first["fingerprint"] == "fp_fake_0001").all() and first["prompt_hash"].n_unique() == 1
        assert (first["input_tokens"] > 0).all() and (first["output_tokens"] > 0).all()
        from fakes.openai_server import tokens  # the fake's count, as it answers in usage

        prompts = sum(sum(tokens(m["content"]) + 4 for m in r.body["messages"]) + 3 for r in fake.requests)
        billed = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))["cost"]["billed"]
        assert billed["systems"]["llm"]["input_tokens"] == prompts == first["input_tokens"].sum()

        labels = pl.read_parquet(tmp_path / "run" / "labels.parquet").sort("item_id")
        never_scored = labels.join(rejected.select("item_id"), on="item_id")
        assert never_scored.height == 24 and never_scored["label"].null_count() == 24
        report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
        assert "| llm | otsc-en | 24 | not a translation (" in report  # listed with the untranslated items

        run(config, tmp_path / "run")  # a rerun: nothing is sent, the rejected replies included
        again = run(config, tmp_path / "again")  # another run on the same store
        assert fake.count == ITEMS, again.output
        assert rows(tmp_path / "again").select("item_id", "translation", "rejected", "raw").equals(
            first.select("item_id", "translation", "rejected", "raw"))

    with FakeOpenAI(key=KEY, models=("gpt-test",), rules=RULES, fault_rate=0.2, fault_seed=7,
                    fault_delay_s=3.0) as faulty:
        config = write_config(tmp_path, faulty, tmp_path / "store-faults", "faulty.yaml")
        run(config, tmp_path / "faults")
        injected = sum(r.outcome == "injected" for r in faulty.requests)
        assert injected >= 0.1 * faulty.count and faulty.count > ITEMS
        assert {r.status for r in faulty.requests if r.outcome == "injected"} >= {429, 500, 503}
        survived = rows(tmp_path / "faults")
        columns = ["item_id", "translation", "error", "rejected", "raw", "model", "fingerprint", "prompt_hash"]
        assert survived.select(columns).equals(first.select(columns))
        assert survived["attempts"].max() > 1
        sent = faulty.count
        run(config, tmp_path / "faults")
        assert faulty.count == sent
