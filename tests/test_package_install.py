"""biaseval installed the way users install it: `pip install .` into a fresh virtual environment,
then used from another folder — the built-in suites, the occupation lexicon and the start-up file of
a local Ray travel as package data, and listing or validating needs no dataset and no checkout.

No test reaches beyond loopback (tests/loopback_guard.py), so nothing comes from a package index:
the new environment sees this interpreter's packages (a .pth file) for the build (setuptools) and
for biaseval's dependencies, and pip installs the checkout alone, offline."""

from __future__ import annotations

import os
import subprocess
import sysconfig
import venv
from pathlib import Path

import pytest
import yaml

import loopback_guard
from conftest import REPO

pytestmark = pytest.mark.slow


def _run(args: list, cwd: Path, env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_pip_install_into_a_fresh_venv_then_list_and_validate_elsewhere(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BIASEVAL_DATA", "PYTHONPATH", "VIRTUAL_ENV"))}
    env.update(BIASEVAL_OFFLINE="1", BIASEVAL_CACHE_DIR=str(tmp_path / "cache"), PIP_DISABLE_PIP_VERSION_CHECK="1",
               PYTHONPATH=loopback_guard.STARTUP)  # the guard, and nothing of the checkout
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path, env)
    Path(site.stdout.strip(), "dependencies-from-the-test-interpreter.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    # the setuptools venv bundles would come first; the one biaseval's build asks for is this interpreter's
    assert _run([python, "-m", "pip", "uninstall", "--quiet", "-y", "setuptools"], tmp_path, env).returncode == 0
    installed = _run([python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-build-isolation",
                      str(REPO)], tmp_path, env)
    assert installed.returncode == 0, installed.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    biaseval = env_dir / "bin" / "biaseval"

    where = _run([python, "-c", "import biaseval; print(biaseval.__file__)"], elsewhere, env)
    assert str(env_dir) in where.stdout and str(REPO) not in where.stdout, where.stdout + where.stderr
    check = "from biaseval.run.cluster import RAY_STARTUP; print((RAY_STARTUP / 'sitecustomize.py').is_file())"
    startup = _run([python, "-c", check], elsewhere, env)
    assert startup.stdout.strip() == "True", startup.stdout + startup.stderr

    listed = _run([biaseval, "list", "suites"], elsewhere, env)
    assert listed.returncode == 0, listed.stderr
    names = {line.split()[0] for line in listed.stdout.splitlines()}
    assert {"otsc-en", "otsc-hi", "gender-words-en-it", "tgbi-hi", "winomt-hi", "winomt-en", "mittens-2en",
            "mittens-2xx"} <= names
    words = _run([python, "-c", "from biaseval.label.person_romance import person_words; "
                  "from biaseval.label.person_slavic import slavic_words; print(person_words('fr').nouns['mère'], "
                  "slavic_words('ru').version)"], elsewhere, env)  # the person readers' word data travels
    assert words.returncode == 0 and words.stdout.split()[0] == "f", words.stdout + words.stderr
    for kind in ("backends", "detectors", "datasets"):
        assert _run([biaseval, "list", kind], elsewhere, env).returncode == 0, kind

    config = elsewhere / "smoke.yaml"
    config.write_text(yaml.safe_dump({"name": "smoke", "suites": ["otsc-en"],
                                      "systems": {"copy": {"backend": "identity", "version": "v1"}}}), encoding="utf-8")
    checked = _run([biaseval, "validate", "--config", config], elsewhere, env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{config}: ok" in checked.stdout and ": 320 items in 1 shard" in checked.stdout
