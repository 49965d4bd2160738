"""The test tiers (conftest.py): a test not marked slow may not start Ray, and tests that use Ray
through the ray_local fixture are marked slow without saying so."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("argv", [
    ["/opt/ray/core/src/ray/gcs/gcs_server", "--log_dir=/tmp"],  # what ray.init starts first
    ["/venv/bin/ray", "start", "--head"],
    ["/bin/sh", "-c", "ray start --head --port=6380"],
])
def test_a_fast_test_that_starts_ray_fails(argv):
    # refused before the program runs: none of these paths needs to exist
    with pytest.raises(RuntimeError, match="starts Ray but is not marked slow"):
        subprocess.run(argv, check=False)


def test_other_programs_run():
    done = subprocess.run([sys.executable, "-c", "print('ray started')"], capture_output=True, text=True, check=True)
    assert done.stdout == "ray started\n"


def test_ray_local_users_are_marked_slow(request):
    unmarked = [item.nodeid for item in request.session.items
                if "ray_local" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("slow")]
    assert unmarked == []
