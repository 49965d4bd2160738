"""Shared fixtures. Tests that need the mirrored datasets fail (never skip) when they are missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
HINDI = "Gender-Bias-Hi-En-Eval"


def _data_dir() -> Path | None:
    env = os.environ.get("BIASEVAL_DATA_DIR")
    if env:
        return Path(env)
    default = SHARED / "datasets"
    return default if default.is_dir() else None


@pytest.fixture(scope="session", autouse=True)
def _isolated_env(tmp_path_factory):
    """Tests never touch the user's cache or the network unless they say so."""
    saved = {k: os.environ.get(k) for k in ("BIASEVAL_CACHE_DIR", "BIASEVAL_OFFLINE", "BIASEVAL_DATA_DIR")}
    os.environ["BIASEVAL_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["BIASEVAL_OFFLINE"] = "1"
    data = _data_dir()
    if data is not None:
        os.environ["BIASEVAL_DATA_DIR"] = str(data)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def data_dir() -> Path:
    data = _data_dir()
    if data is None or not (data / HINDI).is_dir():
        pytest.fail(
            f"the mirrored datasets are missing: set BIASEVAL_DATA_DIR to a directory holding {HINDI}/ "
            f"(CI uses ../shared/datasets), or run `biaseval data fetch` with network access",
            pytrace=False,
        )
    return data


@pytest.fixture(scope="session")
def hindi(data_dir) -> Path:
    return data_dir / HINDI


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray for this module's tests (2 CPUs, no dashboard), shut down afterwards."""
    import ray

    # address="local": a private cluster, never one that `ray start` left running on this host
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def paper_config() -> Path:
    return REPO / "conf" / "paper.yaml"
