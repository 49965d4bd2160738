"""The Debian packages biaseval runs for real, what each one provides, and how the missing ones get
installed: the one place that knows them.

Apertium translates (``apertium`` and a package per language pair) and its analysers read WinoMT's
and MiTTenS's genders (``lt-proc``); hspell reads Hebrew. The tests also open report.html in
Chromium and watch a sweep under strace. ``make test``, ``make sweep`` and ``.ci/run`` call this
module before anything else, with the system's Python (it imports nothing outside the standard
library, so it runs before ``.venv`` exists)::

    python3 -m biaseval.system_packages check [GROUP ...]     # exit 1 and one message if any is missing
    python3 -m biaseval.system_packages install [GROUP ...]   # apt-get what is missing (as root or with sudo)

A group is a package name or one of ``GROUPS`` (``test``: all of them). The code that runs a tool
(the Apertium backend, the analysers) and the tests that need one say what is missing with the same
sentence, ``missing_message``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from biaseval.errors import ConfigError

# Where Apertium's language data is looked for: its Debian prefix and /usr/local, or only
# $BIASEVAL_APERTIUM_DIR when that is set (label/analysers/lt_proc.py reads the same).
APERTIUM_DIR_ENV = "BIASEVAL_APERTIUM_DIR"
APERTIUM_DIRS = (Path("/usr/share/apertium"), Path("/usr/local/share/apertium"))


@dataclass(frozen=True)
class Package:
    """A Debian package: the programs it puts on PATH, or the Apertium data folder it installs."""

    name: str
    purpose: str
    programs: tuple[str, ...] = ()
    apertium_data: bool = False  # installs /usr/share/apertium/<name>/

    def installed(self, env: os._Environ | dict | None = None) -> bool:
        env = os.environ if env is None else env
        path = env.get("PATH", os.defpath)
        if any(shutil.which(p, path=path) is None for p in self.programs):
            return False
        return not self.apertium_data or any((d / self.name).is_dir() for d in apertium_dirs(env))


PACKAGES = {p.name: p for p in (
    Package("apertium", "Apertium machine translation (the apertium backend)", programs=("apertium",)),
    Package("lttoolbox", "Apertium's analysers (lt-proc): WinoMT and MiTTenS genders in es, fr, it, pt",
            programs=("lt-proc",)),
    Package("apertium-eng-spa", "English<->Spanish translation, and the Spanish analyser", apertium_data=True),
    Package("apertium-spa-ita", "Spanish->Italian translation, and the Italian analyser", apertium_data=True),
    Package("apertium-fra-cat", "the French analyser", apertium_data=True),
    Package("apertium-por-cat", "the Portuguese analyser", apertium_data=True),
    Package("apertium-hbs-eng", "English->Serbo-Croatian translation, and the Serbo-Croatian analyser (GEST: hr, sr)",
            apertium_data=True),
    Package("apertium-hbs-slv", "the Slovenian analyser (GEST: sl)", apertium_data=True),
    Package("apertium-bel-rus", "the Belarusian analyser (GEST: be)", apertium_data=True),
    Package("hspell", "the Hebrew analyser", programs=("hspell",)),
    Package("chromium", "tests: report.html opened in a headless browser", programs=("chromium",)),
    Package("strace", "tests: a whole sweep watched for connections beyond loopback", programs=("strace",)),
)}

# What each use needs; a group may also be a single package's name.
GROUPS = {
    "apertium": ("apertium", "lttoolbox", "apertium-eng-spa", "apertium-spa-ita"),
    "analysers": ("lttoolbox", "apertium-eng-spa", "apertium-spa-ita", "apertium-fra-cat", "apertium-por-cat",
                  "apertium-hbs-eng", "apertium-hbs-slv", "apertium-bel-rus", "hspell"),
    "test": tuple(PACKAGES),
}

# An Apertium mode (what `apertium MODE` translates with) and the package that installs it.
APERTIUM_MODES = {"eng-spa": "apertium-eng-spa", "spa-eng": "apertium-eng-spa", "spa-ita": "apertium-spa-ita",
                  "ita-spa": "apertium-spa-ita", "fra-cat": "apertium-fra-cat", "cat-fra": "apertium-fra-cat",
                  "por-cat": "apertium-por-cat", "cat-por": "apertium-por-cat",
                  "eng-hbs_HR": "apertium-hbs-eng", "eng-hbs_SR": "apertium-hbs-eng", "eng-hbs_BS": "apertium-hbs-eng",
                  "hbs-eng": "apertium-hbs-eng"}


class MissingPackages(ConfigError):
    """Debian packages that a run or a test needs are not installed: the message is
    ``missing_message``, after what needed them (``needed_by``)."""

    def __init__(self, names: Iterable[str], needed_by: str = ""):
        self.names = tuple(dict.fromkeys(names))
        super().__init__(f"{needed_by}: {missing_message(self.names)}" if needed_by else missing_message(self.names))


def apertium_dirs(env: os._Environ | dict | None = None) -> tuple[Path, ...]:
    env = os.environ if env is None else env
    chosen = env.get(APERTIUM_DIR_ENV)
    return (Path(chosen),) if chosen else APERTIUM_DIRS


def expand(groups: Iterable[str]) -> tuple[str, ...]:
    """Package names of some groups and packages, each once, in the order given."""
    names: list[str] = []
    for group in groups:
        if group in GROUPS:
            names.extend(GROUPS[group])
        elif group in PACKAGES:
            names.append(group)
        else:
            known = ", ".join([*GROUPS, *PACKAGES])
            raise ValueError(f"unknown system package or group {group!r}; known: {known}")
    return tuple(dict.fromkeys(names))


def missing(groups: Iterable[str], env: os._Environ | dict | None = None) -> tuple[str, ...]:
    """The packages of these groups that are not installed here."""
    return tuple(name for name in expand(groups) if not PACKAGES[name].installed(env))


def install_command(names: Sequence[str]) -> str:
    return "sudo apt-get install -y " + " ".join(names)


def missing_message(names: Sequence[str]) -> str:
    """The one sentence said wherever a package is missing: what, what for, and how to install it."""
    listed = "; ".join(f"{n} ({PACKAGES[n].purpose})" if n in PACKAGES else n for n in names)
    return (f"missing Debian package{'s' if len(names) > 1 else ''}: {listed}. Install with: "
            f"{install_command(names)}  (or `make system-packages`, which does it when run as root)")


def require(*groups: str, needed_by: str = "") -> None:
    """Raise ``MissingPackages`` naming every missing package of these groups."""
    absent = missing(groups)
    if absent:
        raise MissingPackages(absent, needed_by)


def _privilege(env) -> list[str] | None:
    """The prefix that runs apt-get as root: none for root, ``sudo -n`` where sudo works without a
    password; None where neither does."""
    if os.geteuid() == 0:
        return []
    sudo = shutil.which("sudo", path=env.get("PATH", os.defpath))
    if sudo and subprocess.run([sudo, "-n", "true"], capture_output=True).returncode == 0:
        return [sudo, "-n"]
    return None


def apt_install(names: Sequence[str], env: os._Environ | dict | None = None, out=sys.stderr) -> bool:
    """apt-get these packages (as root, or with sudo, non-interactive); False, having said
    ``missing_message`` and why, when that cannot be done here or apt-get fails."""
    env = dict(os.environ if env is None else env)
    prefix = _privilege(env)
    apt = shutil.which("apt-get", path=env.get("PATH", os.defpath))
    if prefix is None or apt is None:
        why = "not root and no sudo without a password" if apt else "no apt-get on this machine"
        print(f"biaseval: {missing_message(names)} [cannot install here: {why}]", file=out)
        return False
    print(f"biaseval: installing Debian packages: {' '.join(names)}", file=out)
    env["DEBIAN_FRONTEND"] = "noninteractive"
    for args in (["update", "-qq"], ["install", "-y", "-qq", *names]):
        done = subprocess.run([*prefix, apt, *args], env=env, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            print(f"biaseval: apt-get {args[0]} failed (exit {done.returncode}); {missing_message(names)}", file=out)
            return False
    return True


def install(groups: Iterable[str], env: os._Environ | dict | None = None, out=sys.stderr) -> int:
    """apt-get the missing packages of these groups; 0 when all are there afterwards, 1 (having said
    ``missing_message``) when they cannot be installed here."""
    groups = list(groups)
    absent = missing(groups, env)
    if not absent:
        return 0
    if not apt_install(absent, env, out):
        return 1
    still = missing(groups, env)
    if still:
        print(f"biaseval: after apt-get, still {missing_message(still)}", file=out)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m biaseval.system_packages", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("check", "install", "list"))
    parser.add_argument("groups", nargs="*", default=["test"], help=f"groups ({', '.join(GROUPS)}) or packages")
    args = parser.parse_args(argv)
    try:
        names = expand(args.groups)
    except ValueError as err:
        print(f"biaseval: {err}", file=sys.stderr)
        return 2
    if args.action == "list":
        for name in names:
            state = "installed" if PACKAGES[name].installed() else "missing"
            print(f"{name:18} {state:10} {PACKAGES[name].purpose}")
        return 0
    if args.action == "install":
        return install(names)
    absent = missing(names)
    if absent:
        print(f"biaseval: {missing_message(absent)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
