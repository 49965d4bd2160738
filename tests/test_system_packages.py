"""The Debian packages biaseval runs (biaseval/system_packages.py): `make system-packages` (which `make test`
runs first) installs the missing ones as root or with sudo, and otherwise stops with one sentence that
names them and the command; a test that needs one and finds it missing fails with that sentence.

The machine is simulated with PATH: a folder holding only stand-ins (an `apt-get` that records its
arguments and "installs" a package by putting its programs on that PATH, a `sudo` that runs its
command), so the real tools on this machine are hidden; Apertium's data folders go to
$BIASEVAL_APERTIUM_DIR. The user without sudo is a real one (nobody, through setpriv)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from conftest import REPO

from biaseval import system_packages

ALL = system_packages.expand(["test"])

APT_GET = """#!/bin/bash
echo "$*" >> "$STANDIN_LOG"
[ "$1" = install ] || exit 0
for p in "$@"; do
  case "$p" in
    -*|install) ;;
    lttoolbox) /bin/ln -sf /bin/true "$STANDIN_BIN/lt-proc" ;;
    apertium-*) /bin/mkdir -p "$BIASEVAL_APERTIUM_DIR/$p" ;;
    *) /bin/ln -sf /bin/true "$STANDIN_BIN/$p" ;;
  esac
done
"""
SUDO = """#!/bin/bash
[ "$1" = -n ] && shift
PATH="$PATH:/usr/bin:/bin" exec "$@"
"""


@pytest.fixture
def machine():
    """A folder any user may write: bin/ (the PATH), apertium/ (the data), apt.log; removed after."""
    root = Path(tempfile.mkdtemp(prefix="biaseval-syspkg-"))
    for sub in ("bin", "apertium"):
        (root / sub).mkdir()
    for path in (root, root / "bin", root / "apertium"):
        path.chmod(0o777)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _standin(machine: Path, name: str, text: str) -> None:
    path = machine / "bin" / name
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH | stat.S_IRGRP | stat.S_IROTH)


def _env(machine: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(PATH=str(machine / "bin"), STANDIN_BIN=str(machine / "bin"), STANDIN_LOG=str(machine / "apt.log"),
               BIASEVAL_APERTIUM_DIR=str(machine / "apertium"), HOME=str(machine))
    return env


def _as_nobody() -> list[str]:
    """The prefix that runs a command as an ordinary user (nobody, without capabilities), or none when
    we are not root."""
    if os.geteuid() != 0:
        return []
    return [shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all"]


# The module needs only the standard library: the Makefile runs it with the system's Python (an
# ordinary user may not be able to run this venv's, which can live under root's home)
SYSTEM_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


def _make(machine: Path, prefix: list[str] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, shutil.which("make"), "-s", "-C", str(REPO), "system-packages",
                           f"PYTHON={SYSTEM_PYTHON}"], env=_env(machine), capture_output=True, text=True, timeout=60)


def _apt_calls(machine: Path) -> list[str]:
    log = machine / "apt.log"
    return log.read_text().splitlines() if log.exists() else []


def test_the_tools_are_hidden(machine):
    assert system_packages.missing(["test"], _env(machine)) == ALL


def test_as_root_make_installs_what_is_missing_then_nothing(machine):
    if os.geteuid() != 0:
        pytest.fail("this test shows the root path: run the suite as root (CI does)", pytrace=False)
    _standin(machine, "apt-get", APT_GET)
    done = _make(machine)
    assert done.returncode == 0, done.stderr
    assert _apt_calls(machine) == ["update -qq", "install -y -qq " + " ".join(ALL)]
    assert f"installing Debian packages: {' '.join(ALL)}" in done.stderr
    assert system_packages.missing(["test"], _env(machine)) == ()
    again = _make(machine)  # all there now: apt-get is not asked again
    assert again.returncode == 0 and len(_apt_calls(machine)) == 2 and again.stderr == ""


def test_a_user_with_sudo_installs_through_it(machine):
    _standin(machine, "apt-get", APT_GET)
    _standin(machine, "sudo", SUDO)
    done = _make(machine, _as_nobody())
    assert done.returncode == 0, done.stderr
    assert _apt_calls(machine)[-1] == "install -y -qq " + " ".join(ALL)


def test_a_user_without_sudo_gets_one_message_and_nothing_runs(machine):
    _standin(machine, "apt-get", APT_GET)
    hspell = system_packages.PACKAGES["hspell"]
    _standin(machine, "hspell", "#!/bin/sh\n")  # one package is there: not named
    done = _make(machine, _as_nobody())
    assert done.returncode != 0
    assert _apt_calls(machine) == []
    missing = [n for n in ALL if n != hspell.name]
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("make")]
    assert lines == [f"biaseval: {system_packages.missing_message(missing)} "
                     "[cannot install here: not root and no sudo without a password]"]
    assert f"sudo apt-get install -y {' '.join(missing)}" in lines[0]


def test_a_failing_apt_get_is_said_with_the_packages(machine):
    _standin(machine, "apt-get", "#!/bin/bash\nexit 100\n")
    done = subprocess.run([SYSTEM_PYTHON, "-m", "biaseval.system_packages", "install", "hspell"], cwd=REPO,
                          env=_env(machine), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "apt-get update failed (exit 100)" in done.stderr and "hspell (the Hebrew analyser)" in done.stderr


def test_groups_and_unknown_names():
    assert system_packages.expand(["apertium", "hspell", "apertium-eng-spa"])[:2] == ("apertium", "lttoolbox")
    assert len(set(system_packages.expand(["test", "analysers"]))) == len(ALL)
    with pytest.raises(ValueError, match="unknown system package or group 'hspel'"):
        system_packages.expand(["hspel"])


def test_a_test_needing_a_missing_package_fails_with_the_sentence(machine, tmp_path):
    """A marked test, and one whose code raises deep down (the Hebrew analyser without hspell), both
    fail with the one sentence and no traceback."""
    (tmp_path / "test_needs.py").write_text(textwrap.dedent("""
        import pytest
        from biaseval.label.analysers.hebrew import Hebrew

        @pytest.mark.system_packages("hspell")
        def test_marked():
            raise AssertionError("not reached")

        def test_deep_down():
            Hebrew().analyse([["המורה"]], [[0]])
    """))
    env = _env(machine)
    env["PATH"] = f"{machine / 'bin'}"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                           "--rootdir", str(tmp_path), "-c", str(REPO / "pyproject.toml"), str(tmp_path / "test_needs.py")],
                          cwd=REPO / "tests", env=env, capture_output=True, text=True, timeout=120)
    sentence = system_packages.missing_message(["hspell"])
    assert done.stdout.count(sentence) >= 2, done.stdout
    assert "1 failed, 1 error" in done.stdout  # the marked test fails at its setup
    assert "Traceback" not in done.stdout and "raise " not in done.stdout


def test_validate_installs_what_a_config_runs(machine, monkeypatch, tmp_path):
    """`biaseval validate --install-system-packages` (what `make sweep` runs first): an Apertium system
    whose language pair is not installed gets its package from apt-get (as root here), then validates;
    without the flag, validate says what is missing."""
    from click.testing import CliRunner

    from biaseval.cli import main

    if os.geteuid() != 0:
        pytest.fail("this test shows the root path: run the suite as root (CI does)", pytrace=False)
    _standin(machine, "apertium", "#!/bin/sh\n")
    modes = machine / "share" / "apertium" / "modes"  # where Apertium beside that program keeps its modes
    _standin(machine, "apt-get", APT_GET.replace('    apertium-*) /bin/mkdir -p "$BIASEVAL_APERTIUM_DIR/$p" ;;',
                                                 f'    apertium-*) /bin/mkdir -p {modes} && : > {modes}/${{p#apertium-}}.mode ;;'))
    config = tmp_path / "apertium.yaml"
    config.write_text(textwrap.dedent(f"""
        name: apertium-xyz
        suites: [otsc-en]
        targets: {{otsc-en: [es]}}
        systems: {{ap: {{backend: apertium, version: x, options: {{command: {machine / 'bin' / 'apertium'}, pair: eng-xyz}}}}}}
    """), encoding="utf-8")
    monkeypatch.setenv("PATH", f"{machine / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_LOG", str(machine / "apt.log"))
    monkeypatch.setenv("STANDIN_BIN", str(machine / "bin"))

    said = CliRunner().invoke(main, ["validate", "--config", str(config)])
    assert said.exit_code == 0 and _apt_calls(machine) == []
    assert f"note: not on this machine, {system_packages.missing_message(['apertium-eng-xyz'])}" in said.output

    done = CliRunner().invoke(main, ["validate", "--config", str(config), "--install-system-packages"])
    assert done.exit_code == 0, done.output
    assert _apt_calls(machine) == ["update -qq", "install -y -qq apertium-eng-xyz"]
    assert (modes / "eng-xyz.mode").exists() and "note:" not in done.output
