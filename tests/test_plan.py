"""`biaseval plan` for a large config: texts after the store, requests, characters, cost, and the time
each system's quota implies — nothing is sent, no credentials are needed. The requests it plans are
those a sweep sends: checked against fake Google, Azure and AWS servers that count what they get."""

from __future__ import annotations

import io
import math

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.run.cluster import start_local_ray
from biaseval.run.estimate import duration, estimate, quota_time
from biaseval.pipeline import load
from biaseval.run.driver import run_translations
from biaseval.translate import TRANSLATORS
from conftest import REPO


def _rows(output: str) -> dict[str, list[str]]:
    rows = {}
    for line in output.splitlines()[1:]:
        parts = line.split()
        if parts and parts[0] in ("google", "google-llm", "azure", "aws", "apertium"):
            rows[parts[0]] = parts
    return rows


def test_plan_of_a_large_config(data_dir):
    result = CliRunner().invoke(main, ["plan", "--config", str(REPO / "conf" / "plan-large.yaml")])
    assert result.exit_code == 0, result.output
    rows = _rows(result.output)
    # WinoMT 7 × 3,888 + OTSC 4 × 2 × 40 items for the cloud systems; Apertium only Spanish
    assert rows["aws"][2] == f"{7 * 3888 + 4 * 2 * 40:,}" and rows["apertium"][2] == f"{3888 + 2 * 40:,}"
    to_send = int(rows["aws"][5].replace(",", ""))
    chars = int(rows["aws"][7].replace(",", ""))
    assert rows["aws"][6] == f"≥{to_send:,}"  # Amazon Translate takes one text per request
    assert " ".join(rows["aws"][9:11]) == duration(to_send / 20)  # 20 requests/s binds
    assert rows["aws"][11] == "(requests/s)"
    # at most 1,024 strings and 30,000 characters a request, one language pair a request and none
    # across shards or tasks: more than the characters alone would take
    google = int(rows["google"][6].lstrip("≥").replace(",", ""))
    assert google > max(math.ceil(to_send / 1024), math.ceil(chars / 30_000))
    assert rows["google"][-2:] == ["(chars/min)", "—"]
    assert float(rows["azure"][8]) == pytest.approx(chars / 1e6 * 10.0, abs=0.01)
    assert "no quota set" in " ".join(rows["apertium"])
    assert f"at least {duration(to_send / 20)} (aws, bound by its requests/s)" in result.output


def texts(pairs: list[tuple[str, str]], sizes: list[int]) -> pl.DataFrame:
    return pl.DataFrame({"src_lang": [s for s, _ in pairs], "tgt_lang": [t for _, t in pairs],
                         "source": ["x" * n for n in sizes]})


def test_requests_of_one_task_and_quota_time():
    google = TRANSLATORS.get("google")
    options = google.Options(project="p")
    assert google.requests_for_task(options, texts([], [])) == 0
    assert google.requests_for_task(options, texts([("en", "es")] * 2048, [5] * 2048)) == 2  # 1,024 strings
    assert google.requests_for_task(options, texts([("en", "es")] * 10, [9_000] * 10)) == 4  # 30,000 characters
    # one language pair per request, however few the texts; the pairs interleaved
    assert google.requests_for_task(options, texts([("en", "es"), ("en", "de"), ("en", "es")], [5, 5, 5])) == 2
    assert google.requests_for_task(options, texts([("en", "es")] * 2, [30_001, 5])) == 1  # too long: never sent
    aws = TRANSLATORS.get("aws")
    assert aws.requests_for_task(aws.Options(), texts([("en", "es")] * 10, [50] * 10)) == 10
    assert quota_time(100, 600_000, 10, 60_000) == (600.0, "chars/min")
    assert quota_time(100, 600, 10, 60_000) == (10.0, "requests/s")
    assert quota_time(100, 600, None, None) == (None, None)
    # the limiter rounds a fractional rate above 1 down (never more than the limit in any second)
    assert quota_time(100, 600, 2.5, None) == (50.0, "requests/s")
    assert quota_time(1, 6, 0.5, None) == (2.0, "requests/s")
    assert [duration(s) for s in (5, 90, 7200, 3 * 86400)] == ["5 s", "1.5 min", "2.0 h", "3.0 days"]


# -- what the plan says against what a sweep sends --------------------------------------------------

AZURE_KEY = "fake-azure-key-0123456789abcdef"


@pytest.fixture(scope="module")
def fakes(data_dir):
    """Fake Google, Azure and AWS servers, and a local Ray whose workers have their credentials."""
    import ray
    from fakes.aws_server import FakeTranslate
    from fakes.azure_server import FakeAzureTranslator
    from fakes.google_server import FakeGoogleTranslate

    env = {"AWS_ACCESS_KEY_ID": "AKIDFAKEFAKEFAKE", "AWS_SECRET_ACCESS_KEY": "fake-secret-for-tests",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
           "AZURE_TRANSLATOR_KEY": AZURE_KEY, "AZURE_TRANSLATOR_REGION": "westeurope"}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        start_local_ray(2, logging_level="WARNING")
        try:
            with FakeGoogleTranslate() as google, FakeAzureTranslator(key=AZURE_KEY) as azure, FakeTranslate() as aws:
                yield {"google": google, "azure": azure, "aws": aws}
        finally:
            ray.shutdown()


def cloud_systems(fakes, targets: list[str] | None) -> dict:
    systems = {
        "google": {"backend": "google", "version": "v3", "concurrency": 2,
                   "options": {"project": "p", "transport": "rest", "credentials": "anonymous",
                               "endpoint": fakes["google"].endpoint("rest")}},
        "azure": {"backend": "azure", "version": "v3", "concurrency": 2, "options": {"endpoint": fakes["azure"].endpoint}},
        "aws": {"backend": "aws", "version": "v1", "concurrency": 8, "options": {"endpoint": fakes["aws"].endpoint}},
    }
    for system in systems.values():
        system["retry"] = {"max_attempts": 1}  # a failure would fail the test, not add requests
        if targets:
            system["targets"] = targets
    return systems


# WinoMT-Hindi: 704 items (701 distinct texts, about 42,000 characters: over one Google request),
# hi -> en; the English OTSC template: 4 x 80 items, en -> es, it, fr, de, in target order.
@pytest.mark.slow
@pytest.mark.parametrize("suites, shard_size, per_task, targets", [
    (["winomt-hi", "otsc-en"], 5000, 1000, None),  # a shard per suite: one task each
    (["winomt-hi", "otsc-en"], 300, 1000, None),  # shards cut the suites, and OTSC across its languages
    (["otsc-en", "winomt-hi"], 250, 70, None),  # tasks cut the shards
    (["otsc-en"], 130, 45, ["fr", "de"]),  # two of the four languages
])
def test_plan_counts_the_requests_the_sweep_sends(tmp_path, fakes, suites, shard_size, per_task, targets):
    config = {"name": "plan-vs-sent", "suites": suites, "systems": cloud_systems(fakes, targets),
              "cache": {"path": str(tmp_path / "store")},
              "sweep": {"shard_size": shard_size, "texts_per_task": per_task}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    _, prepared = load(path)
    planned = {e.system: e for e in estimate(prepared)}
    before = {name: len(fake.requests) for name, fake in fakes.items()}

    _, prepared = load(path)
    result = run_translations(prepared, tmp_path / "run", path, stream=io.StringIO())
    assert result.failed == 0
    sent = {name: len(fake.requests) - before[name] for name, fake in fakes.items()}
    for name, count in sent.items():
        assert planned[name].to_send > 0
        assert planned[name].requests <= count <= 1.1 * planned[name].requests, (name, planned[name].requests, count)
    assert result.sent == sum(e.to_send for e in planned.values())
