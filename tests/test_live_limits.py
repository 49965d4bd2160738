"""Rate limits are per system, shared by all its actors (not per actor)."""

from __future__ import annotations

import ray

from biaseval.pipeline import sweep
from test_live_sweep import WINO_TEXTS, live_config

def test_rate_limit_is_shared_by_all_actors_of_a_system(tmp_path, data_dir, monkeypatch):
    """Two actors of one AWS system (one text per request) under a 100 requests/s limit: the fake,
    which enforces that quota, never throttles, though each actor alone could go faster.

    The sweep starts its own Ray here, after the credentials are in the environment, as a job would."""
    from fakes.aws_server import FakeTranslate

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-tests")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert not ray.is_initialized()
    rate = 100
    with FakeTranslate(requests_per_s=rate, burst_s=1.0, latency_s=0.01) as fake:
        systems = {"aws": {"backend": "aws", "version": "t", "options": {"endpoint": fake.endpoint},
                           "actors": 2, "concurrency": 4, "limits": {"requests_per_s": rate},
                           "retry": {"max_attempts": 1}}}
        config = live_config(tmp_path, systems, sweep={"shard_size": 300, "texts_per_task": 120})
        result = sweep(config, tmp_path / "run")
        stats = fake.stats()
        accepted = sorted(r.started for r in fake.requests if r.ok)
    assert result.sweep.failed == 0 and stats["throttled"] == 0
    assert stats["accepted"] == WINO_TEXTS
    # sustained rate between the first and last request stays within the limit
    assert (len(accepted) - 1) / (accepted[-1] - accepted[0]) <= rate * 1.05
    assert stats["max_in_flight"] > 1  # the actors did work concurrently
