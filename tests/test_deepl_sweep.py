"""The deepl backend inside the sweep (Ray), against the fake DeepL server: the built-in otsc-en
suite (es, it, fr, de) completes, an identical rerun sends nothing, 20% injected faults change no
result, `plan` is a close lower bound of the requests, a 456 stops the system (and only it) without
retries until a rerun after the quota is restored, and the key never reaches a file, a log or a
message."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.pipeline import load, sweep
from biaseval.run.estimate import estimate
from conftest import REPO
from fakes.deepl_server import FakeDeepL, Failure, expected

KEY = "fake-deepl-key-for-the-sweep-7f3a9c:fx"
OTHER_KEY = "another-deepl-key-0c1d2e3f4a5b:fx"  # in $MY_DEEPL_AUTH, a name redact() does not know
ITEMS = 320  # otsc-en: 40 occupations x her/him (80 sources) x 4 target languages: 320 texts to send


@pytest.fixture(scope="module", autouse=True)
def _keys():
    """The keys in the environment before Ray starts (its workers inherit it); no proxy for the fake."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEEPL_AUTH_KEY", KEY)
        mp.setenv("MY_DEEPL_AUTH", OTHER_KEY)
        for name in ("no_proxy", "NO_PROXY"):
            mp.setenv(name, ",".join(filter(None, [os.environ.get(name), "127.0.0.1", "localhost"])))
        yield


def deepl_config(tmp_path: Path, fake: FakeDeepL, name: str, store: str, *, extra_systems: dict | None = None,
                 **system) -> Path:
    """conf/deepl.yaml, pointed at the fake, with a private store, small tasks and quick retries."""
    spec = yaml.safe_load((REPO / "conf" / "deepl.yaml").read_text(encoding="utf-8"))
    deepl = spec["systems"]["deepl"]
    deepl["options"] = {**deepl["options"], "server_url": fake.url}
    deepl["retry"] = {"max_attempts": 8, "backoff_s": 0.05, "max_backoff_s": 0.2, "timeout_s": 1.0}
    deepl.pop("limits")
    deepl.update(system)
    spec["systems"].update(extra_systems or {})
    spec["cache"] = {"path": str(tmp_path / store)}
    spec["metrics"] = {"bootstrap": 20, "seed": 1}
    spec["sweep"] = {"shard_size": 80, "texts_per_task": 10}  # 32 send tasks: enough requests for faults
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def rows(out: Path, system: str = "deepl") -> pl.DataFrame:
    shards = pl.read_parquet(sorted((out / "translations").rglob("shard-*.parquet")))
    return shards.filter(pl.col("system") == system).sort("item_id")


def test_sweep_rerun_faults_and_plan(tmp_path, ray_local):
    with FakeDeepL(key=KEY) as fake:
        config = deepl_config(tmp_path, fake, "clean", "store")
        planned = {e.system: e for e in estimate(load(config)[1])}["deepl"]
        first = sweep(config, tmp_path / "a")
        sent = fake.translate_requests
        assert first.sweep.failed == 0 and first.sweep.sent == planned.to_send == ITEMS
        # the plan's request count is a lower bound, and a close one
        assert planned.requests <= len(sent) <= 1.1 * planned.requests, (planned.requests, len(sent))
        assert all(r.status == 200 and len(r.texts) <= 10 for r in sent)
        assert {r.target_lang for r in sent} == {"ES", "IT", "FR", "DE"}
        assert all(r.fields["model_type"] == "quality_optimized" for r in sent)
        a = rows(tmp_path / "a")
        assert a.height == ITEMS and a["translation"].null_count() == 0
        for row in a.iter_rows(named=True):
            assert row["translation"] == expected([row["source"]], row["tgt_lang"].upper())[0]
            assert row["billed_chars"] == len(row["source"])  # what DeepL billed, per text
        assert a["model"].unique().to_list() == ["quality_optimized"]  # the model type DeepL reports
        assert a["provider"].unique().to_list() == ["DeepL API"]
        assert fake.character_count == a["billed_chars"].sum()
        cost = json.loads((tmp_path / "a" / "run.json").read_text(encoding="utf-8"))["cost"]
        billed = cost["billed"]["systems"]["deepl"]  # each distinct text once, as DeepL counted it
        assert billed["billed_chars"] == fake.character_count == cost["planned"]["systems"]["deepl"]["chars"]
        assert billed["cost"] == pytest.approx(fake.character_count / 1e6 * 20) == cost["planned"]["total"]
        assert cost["planned"]["systems"]["deepl"]["cost"] == pytest.approx(planned.cost)  # what `plan` said

        fake.reset()
        again = sweep(config, tmp_path / "b")  # the same config, a new run: all from the store
        assert again.sweep.sent == 0 and fake.count == 0
        assert rows(tmp_path / "b")["cached"].all()

        fake.faults(every=5, hang_s=3.0)  # 20% of requests: 429 (Retry-After 1), 500, timeout, 503
        faulty = deepl_config(tmp_path, fake, "faulty", "store-faulty")
        counted = fake.character_count
        result = sweep(faulty, tmp_path / "c")
        seen = fake.translate_requests
        assert result.sweep.failed == 0 and result.sweep.sent == ITEMS
        assert {r.fault for r in seen if r.fault} == {"429", "500", "timeout", "503"}
        assert sum(1 for r in seen if r.fault) == len(seen) // 5
        c = rows(tmp_path / "c")
        assert c.select("item_id", "translation", "billed_chars").equals(a.select("item_id", "translation",
                                                                                  "billed_chars"))
        assert c["attempts"].max() > 1
        billed = json.loads((tmp_path / "c" / "run.json").read_text(encoding="utf-8"))["cost"]["billed"]["systems"]
        # failed and unanswered requests billed nothing: the run's billed characters are what DeepL counted
        assert billed["deepl"]["billed_chars"] == fake.character_count - counted == a["billed_chars"].sum()
        assert billed["deepl"]["sent_chars"] == (c["attempts"] * c["source"].str.len_chars()).sum() > \
            billed["deepl"]["billed_chars"]


def test_456_stops_the_system_and_a_rerun_resumes(tmp_path, ray_local):
    copy = {"copy": {"backend": "identity", "version": "v1"}}
    with FakeDeepL(key=KEY, character_limit=9_000) as fake:  # about half of what the sweep bills
        # one request at a time, so that the 456 is the last request the system makes (requests in flight on
        # other threads or actors each end at their next answer: test_backend_deepl checks that)
        config = deepl_config(tmp_path, fake, "quota", "store", extra_systems=copy, actors=1, concurrency=1)
        out = tmp_path / "run"
        result = CliRunner().invoke(main, ["sweep", "--config", str(config), "--out", str(out)])
        assert result.exit_code == 3, result.output
        message = result.output
        assert "system 'deepl' stopped: DeepL quota exceeded (HTTP 456" in message, message
        assert "Rerun the same command once the quota resets" in message
        sent = fake.translate_requests
        assert sent[-1].status == 456 and fake.count_status(456) == 1  # the last request: no retries
        paid = {(r.target_lang, t) for r in sent if r.status == 200 for t in r.texts}
        assert 0 < len(paid) < ITEMS

        assert rows(out, "copy").height == ITEMS  # the other system finished
        assert not list((out / "translations").glob("system=deepl/**/shard-*.parquet"))

        fake.reset()
        fake.set_limit(None)  # a new billing period
        result = CliRunner().invoke(main, ["sweep", "--config", str(config), "--out", str(out)])
        assert result.exit_code == 0, result.output
        resent = [(r.target_lang, t) for r in fake.translate_requests for t in r.texts]
        assert set(resent).isdisjoint(paid) and len(resent) == ITEMS - len(paid)  # nothing paid for twice
        final = rows(out)
        assert final.height == ITEMS and final["translation"].null_count() == 0
        assert (final["billed_chars"] == final["source"].str.len_chars()).all()


def test_the_key_never_reaches_files_logs_or_messages(tmp_path, ray_local):
    with FakeDeepL(key=OTHER_KEY, echo_key_in_errors=True) as fake:  # its error texts repeat the key
        config = deepl_config(tmp_path, fake, "secret", "store", options={"server_url": fake.url,
                                                                          "key_env": "MY_DEEPL_AUTH"})
        fake.script(Failure(status=400), times=40)  # some texts fail for good, with the key in the error
        out = tmp_path / "run"
        first = CliRunner().invoke(main, ["sweep", "--config", str(config), "--out", str(out)])
        assert first.exit_code == 4, first.output
        errors = rows(out)["error"].drop_nulls()
        assert errors.len() > 0 and errors.str.contains("received DeepL-Auth-Key ***", literal=True).all()
        assert (out / "report.md").read_text(encoding="utf-8").count("DeepL-Auth-Key ***") > 0

        fake.quota_exceeded()
        second = CliRunner().invoke(main, ["sweep", "--config", str(config), "--out", str(out)])
        assert second.exit_code == 3 and "quota exceeded" in second.output
        assert "received DeepL-Auth-Key ***" in second.output

    texts = [first.output, second.output]
    assert not any(OTHER_KEY in t for t in texts)
    session = Path(ray_local._private.worker._global_node.get_session_dir_path())
    searched = [*out.rglob("*"), *(tmp_path / "store").rglob("*"), *(session / "logs").rglob("*")]
    leaked = [p for p in searched if p.is_file() and OTHER_KEY.encode() in p.read_bytes()]
    assert leaked == []
    assert any(p.suffix == ".parquet" for p in searched) and any(p.name.startswith("worker") for p in searched)
