"""With Ray up, a sweep starts its actors while it plans the run (``start_actors``); actors the run
then has no use for — planning failed, nothing left to do — must not outlive the sweep."""

from __future__ import annotations

import time

import pytest

from biaseval.errors import RunDirError
from biaseval.pipeline import sweep
from test_sweep import small_config


def shard_workers() -> list[str]:
    """States of the ShardWorker actors of this Ray that are not dead (from its control store; an
    actor still building its backend is PENDING_CREATION)."""
    from ray._private import state

    return [a["State"] for a in state.actors().values()
            if a["ActorClassName"].endswith("ShardWorker") and a["State"] != "DEAD"]


def gone(timeout: float = 30.0) -> list[str]:
    """The ShardWorker actors still not dead after up to ``timeout`` seconds (none, normally)."""
    deadline = time.monotonic() + timeout  # timing: a bound on a hang only; the caller asserts none is left
    while (alive := shard_workers()) and time.monotonic() < deadline:
        time.sleep(0.2)  # timing: a polling interval
    return alive


def test_actors_started_before_planning_are_gone_when_planning_fails(tmp_path, data_dir, ray_local):
    out = tmp_path / "run"
    sweep(small_config(tmp_path), out)
    assert gone() == []
    with pytest.raises(RunDirError, match="written for different work"):  # found while planning
        sweep(small_config(tmp_path, shard_size=700, name="other.yaml"), out)
    assert gone() == []


def test_a_rerun_with_nothing_to_do_leaves_no_actor(tmp_path, data_dir, ray_local):
    out = tmp_path / "run"
    sweep(small_config(tmp_path), out, report=False)
    again = sweep(small_config(tmp_path), out, report=False)
    assert again.sweep.skipped == again.sweep.shards and again.sweep.translated_rows == 0
    assert gone() == []
