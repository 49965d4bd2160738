"""A server's Retry-After holds back every sender of the system — every thread of every actor — for its
full length, whether or not the system has ``limits`` (a self-hosted server, vLLM say, is often run
without them).

No timing luck: the fake OpenAI server holds requests until every sender of the system is waiting
there (actors × concurrency), throttles one with Retry-After, and lets the others go only once the
system's limiter actor (its limits and pauses, shared by its actors) says it is paused. From then on
no sender has a request on its way, so every request that reaches the server after the 429 was sent
after the pause began: the check is that none arrives before the Retry-After has elapsed since the
429 was answered. Arrival times and the pause are on one clock (time.monotonic, system-wide on
Linux), and no allowance is needed."""

from __future__ import annotations

import os

import pytest
import yaml

from biaseval.pipeline import sweep
from biaseval.run.execute import limiter_prefix
from biaseval.translate.backends.openai import OpenAIOptions, OpenAITranslator
from biaseval.translate.runner import RequestRunner, RetryPolicy
from fakes.base import Failure, Gate
from fakes.openai_server import FakeOpenAI

KEY = "sk-fake-openai-key-0123456789"
ACTORS, CONCURRENCY = 2, 3
RETRY_AFTER = 2  # seconds (the header carries whole seconds)


def throttle_once(senders: int, release) -> Gate:
    return Gate(senders, Failure(status=429, code="rate_limit_exceeded", retry_after=RETRY_AFTER), release)


def check_pause(requests, gate: Gate) -> None:
    """One 429, sent once every sender was held; no request reached the server from the moment it was
    answered until the Retry-After had elapsed, though the held senders were free before that."""
    throttled = [r for r in requests if r.status == 429]
    assert throttled == [gate.fired] and gate.waiting >= gate.senders
    answered = gate.fired.done
    # the check can fail: the held senders were free again while the pause still ran (it took 0.05 s for
    # a sweep's pause to be in force and seen at a load average of 17 on 2 cores; RETRY_AFTER is 40 times that)
    assert gate.opened < answered + RETRY_AFTER
    early = [round(r.at - answered, 3) for r in requests if answered < r.at < answered + RETRY_AFTER]
    assert early == [], f"requests {early} s after a Retry-After of {RETRY_AFTER} s"


def test_a_retry_after_holds_every_thread_of_a_runner_given_no_limiter(monkeypatch):
    """A RequestRunner used on its own (no shared limiter): its threads pause together."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("NO_PROXY", ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1"])))
    with FakeOpenAI(key=KEY) as fake:
        backend = OpenAITranslator("llm", OpenAIOptions(base_url=fake.base_url, model="gpt-test"))
        runner = RequestRunner(backend, RetryPolicy(backoff_s=0.01, max_backoff_s=0.05, timeout_s=30),
                               concurrency=CONCURRENCY, seed=0)
        fake.gate = gate = throttle_once(CONCURRENCY, lambda: runner.limiter.paused_for() > 0)
        try:
            results = runner.translate([f"My friend is nurse number {k}." for k in range(12)], "en", "es")
        finally:
            backend.close()
        requests = fake.requests
    assert all(r.translation for r in results) and len(requests) == 13
    check_pause(requests, gate)


@pytest.fixture(scope="module")
def key_env():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BIASEVAL_TEST_OPENAI_KEY", KEY)
        yield


@pytest.fixture(scope="module")
def ray_with_key(key_env, ray_local):
    """A local Ray started with the key in the environment (its workers inherit it)."""
    return ray_local


def paused(ray, system: str):
    """A release condition: the system's limiter actor reports a pause (true at once when the system
    has none, as before the fix for systems without limits: the others then go on at once, and the
    check fails)."""
    def check() -> bool:
        names = [n["name"] if isinstance(n, dict) else n for n in ray.util.list_named_actors()]
        mine = [n for n in names if n.startswith(limiter_prefix(system))]
        if not mine:
            return True
        return ray.get(ray.get_actor(mine[0]).paused_for.remote()) > 0
    return check


def test_a_retry_after_pauses_every_thread_and_actor_of_a_system_without_limits(tmp_path, ray_with_key):
    ray = ray_with_key
    with FakeOpenAI(key=KEY) as fake:
        config = {
            "name": "pause", "suites": ["otsc-en"], "targets": {"otsc-en": ["es"]},
            "cache": {"path": str(tmp_path / "store")}, "metrics": {"bootstrap": 50},
            # 80 texts in tasks of 20: each actor's task keeps its three threads busy at the gate
            "sweep": {"texts_per_task": 20},
            "systems": {"vllm": {  # a self-hosted server, run without limits
                "backend": "openai", "version": "fake 2026-01", "actors": ACTORS, "concurrency": CONCURRENCY,
                "options": {"model": "gpt-test", "base_url": fake.base_url, "api_key_env": "BIASEVAL_TEST_OPENAI_KEY"},
                "retry": {"max_attempts": 4, "backoff_s": 0.01, "max_backoff_s": 0.05, "timeout_s": 30}}},
        }
        path = tmp_path / "pause.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        fake.gate = gate = throttle_once(ACTORS * CONCURRENCY, paused(ray, "vllm"))
        result = sweep(path, tmp_path / "run")
        requests = fake.requests
    assert result.sweep.failed == 0 and result.sweep.sent == 80
    assert len(requests) == 81  # the throttled text was sent again
    check_pause(requests, gate)
