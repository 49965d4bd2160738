"""Shared fixtures. Tests that need the mirrored datasets fail (never skip) when they are missing.

Test tiers: a test that starts Ray or otherwise takes seconds is marked ``slow`` (``make test-fast``
leaves those out; ``make test`` runs everything): by the module's ``pytestmark``, by its own mark, or
here when it uses a slow fixture — ``ray_local``, or one its module names in its own SLOW_FIXTURES
(a model trained once for the module, say). A test that starts Ray without the mark fails.

No test reaches beyond loopback: every Python process of the session runs the loopback guard
(tests/loopback_guard.py), and the session fails naming any process that tried, even where the
code under test swallowed the refusal."""

from __future__ import annotations

import gc
import os
import shutil
import socket
import sys
import tempfile
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import loopback_guard
from biaseval import system_packages

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
HINDI = "Gender-Bias-Hi-En-Eval"

# A test that uses one of these (directly or through another fixture) is slow; a module may add its
# own fixtures by naming them in a SLOW_FIXTURES set of its own.
SLOW_FIXTURES = {"ray_local"}
# What starting Ray runs: its head processes (ray.init in this process) or the `ray start` command.
RAY_PROGRAMS = {"gcs_server", "raylet"}

_running: pytest.Item | None = None  # the test being set up, run or torn down

# How many generated inputs a run of the tests draws: its profile, BIASEVAL_TEST_PROFILE (the Makefile
# sets it per tier). For the property-based tests (hypothesis, marked `property`) three profiles, all
# without a deadline (a deadline is a timing allowance that a loaded machine breaks):
# - "ci" (`make test`, the release check): 200 examples from a fixed seed (derandomize), the same on
#   every machine and every rerun;
# - "quick" (`make test-fast`): 25 examples, also from a fixed seed, and each test's @example cases:
#   the quick tier runs every property, on fewer inputs; tests that check our code against a
#   reference on a corpus (``QUICK``) check a fixed part of it there, and all of it in "ci";
# - "long" (`make test-long`): 5,000 examples drawn at random each time, to look for what the fixed
#   ones miss; a counterexample it finds becomes an @example of its test.
settings.register_profile("ci", max_examples=200, derandomize=True, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("quick", max_examples=25, derandomize=True, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=5000, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
PROFILE = os.environ.get("BIASEVAL_TEST_PROFILE") or os.environ.get("BIASEVAL_HYPOTHESIS_PROFILE") or "ci"
settings.load_profile(PROFILE)
QUICK = PROFILE == "quick"


# Parallel workers (pytest-xdist, `-n N --dist loadfile`: the Makefile's tiers). A module's tests stay
# on one worker, so its module-scoped fixtures (a Ray, a trained model, a sweep) are built once. Clusters
# that tests start with `ray start` take free ports for what Ray would otherwise put on fixed ones
# (``ray_start_ports``), so that they can run beside each other and beside any other Ray.


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        slow = SLOW_FIXTURES | getattr(getattr(item, "module", None), "SLOW_FIXTURES", set())
        if slow & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        if "ray_local" in getattr(item, "fixturenames", ()):
            _RAY_LOCAL_MODULES.add(item.path)
    # modules with slow tests first (each module's tests stay together, in their order): workers take
    # the long ones while the short ones fill in (pytest-xdist hands out files in this order)
    # and of those, the ones that share a Ray (ray_local) first, one after another
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: (item.path not in slow_modules, item.path not in _RAY_LOCAL_MODULES))


def pytest_collection_finish(session: pytest.Session) -> None:
    """What import and collection made lives for the whole session: out of the collector's sight
    (gc.freeze), every collection, automatic or a library's own gc.collect() (statsmodels' Holm calls
    one each time), walks only what the tests make."""
    gc.freeze()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``system_packages("hspell", ...)`` (or a group: ``"analysers"``) fails at once,
    with the one sentence ``biaseval.system_packages`` says everywhere, when one is missing."""
    groups = [g for mark in item.iter_markers("system_packages") for g in mark.args]
    absent = system_packages.missing(groups) if groups else ()
    if absent:
        pytest.fail(system_packages.missing_message(absent), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failure whose cause is a missing Debian package (raised deep in a test, or printed by a command
    it ran) reads as the one sentence that names the packages and the install command, not a traceback."""
    report = yield
    if report.failed and call.excinfo is not None and not call.excinfo.errisinstance(pytest.fail.Exception):
        sentence = _missing_packages_sentence(call.excinfo.value)
        if sentence:
            report.longrepr = sentence
    return report


def _missing_packages_sentence(exc: BaseException) -> str | None:
    """The sentence for a failure caused by a missing package: one raised out of the test (a Ray task's
    error is an instance of its cause), or one a command or a worker printed, when a package was
    missing on this machine as the session started (not merely hidden by a test's own PATH)."""
    if isinstance(exc, system_packages.MissingPackages):
        return system_packages.missing_message(exc.names)
    if _MISSING_AT_START and "missing Debian package" in str(exc):
        return system_packages.missing_message(_MISSING_AT_START)
    return None


_MISSING_AT_START = system_packages.missing(["test"])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    global _running
    _running = item
    try:
        return (yield)
    finally:
        _running = None


def _ray_guard(event: str, args: tuple) -> None:
    """An audit hook: a test not marked slow may not start a process of Ray (the fast tier stays fast)."""
    if event != "subprocess.Popen" or _running is None or _running.get_closest_marker("slow"):
        return
    executable, argv = args[0], args[1]
    argv = [argv] if isinstance(argv, (str, bytes)) else list(argv or ())
    words = " ".join(os.fsdecode(a) for a in argv).split()  # a shell's command line split too
    names = [os.path.basename(w) for w in [os.fsdecode(executable or ""), *words]]
    if RAY_PROGRAMS & set(names) or ("ray", "start") in pairwise(names):
        raise RuntimeError(f"{_running.nodeid} starts Ray but is not marked slow: "
                           "add @pytest.mark.slow (or use the ray_local fixture)")


def pytest_configure(config: pytest.Config) -> None:
    sys.addaudithook(_ray_guard)  # for the life of the process; it acts only while a test runs
    # the loopback guard, here and (through PYTHONPATH, first: a sitecustomize earlier on it would hide
    # ours; the one ours hides still runs) in every Python process the tests start
    # (the guard). With parallel workers (pytest-xdist) the controller makes the folder and each worker,
    # started with the controller's environment, writes into it: the controller reads it at the end.
    if _is_worker(config) and os.environ.get(loopback_guard.LOG_ENV):
        folder = os.environ[loopback_guard.LOG_ENV]
    else:
        folder = tempfile.mkdtemp(prefix="loopback-guard-")
        config.stash[_GUARD] = Path(folder)
    os.environ[loopback_guard.LOG_ENV] = folder
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(loopback_guard.STARTUP)]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(loopback_guard.STARTUP), *path])
    loopback_guard.install(folder)
    # Hugging Face's libraries ask the hub even for a model they are told to find locally
    # (huggingface_hub 2.4 fetches its "agent harnesses" list whenever it builds request headers); read
    # when they are imported, hence here, before collection imports them
    os.environ["HF_HUB_OFFLINE"] = "1"


_GUARD = pytest.StashKey[Path]()  # the guard's folder, in the process that made it (not in workers)
_BEYOND = pytest.StashKey[list]()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")  # a pytest-xdist worker


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Any attempt beyond loopback fails the session, whatever the tests' own outcome."""
    _SharedRay.stop()
    if _GUARD not in session.config.stash:  # a worker: its controller reads the records
        return
    found = loopback_guard.recorded(session.config.stash[_GUARD])
    session.config.stash[_BEYOND] = found
    if found and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    found = config.stash.get(_BEYOND, [])
    if found:
        terminalreporter.section("network beyond loopback", red=True)
        terminalreporter.line(f"{len(found)} attempt(s) refused by the loopback guard (tests/loopback_guard.py); "
                              "the session fails:")
        for entry in found:
            terminalreporter.line(loopback_guard.describe(entry), red=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_GUARD, None)
    if folder is not None and not config.stash.get(_BEYOND, []):
        shutil.rmtree(folder, ignore_errors=True)


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


@pytest.fixture(scope="module", autouse=True)
def _suites_kept():
    """Loading a config puts its suites, narrowed to its targets, in the process's suite registry (until
    the next config replaces them): each module starts from the registry as collection left it, so
    no test depends on which module ran before it on its worker."""
    from biaseval.suites import SUITES

    with SUITES.kept():
        yield


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


def _ray_environment() -> dict:
    """The environment a Ray's processes would start with, less what pytest changes for each test."""
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


class _SharedRay:
    """The local Ray that ``ray_local`` shares between modules: starting one costs about 5 s and 6 s of
    CPU (its head's processes, agents, a first worker), and most modules only need a Ray."""

    module: Path | None = None  # the module that last asked for it
    environment: dict | None = None  # the environment its processes started with (their workers inherit it)

    @classmethod
    def up(cls) -> bool:
        ray = sys.modules.get("ray")
        return cls.module is not None and ray is not None and ray.is_initialized()

    @classmethod
    def stop(cls) -> None:
        if cls.up():
            sys.modules["ray"].shutdown()
        cls.module = cls.environment = None


@pytest.fixture(scope="module")
def ray_local(request):
    """A local Ray (2 CPUs, no dashboard, on loopback; the private one a sweep starts). One is shared by
    the modules that use this fixture one after another, while the environment is the one it started
    with: a module that sets variables for the workers (a key, say) gets a fresh one. A module that
    does not use it, and a test of a module before that module first asks for it, run without it,
    as they would with a Ray per module; the last one stops at the end of the session."""
    import ray

    from biaseval.run.cluster import start_local_ray

    if _SharedRay.up() and _SharedRay.environment != _ray_environment():
        if os.environ.get("BIASEVAL_TEST_RAY_LOG"):
            now = _ray_environment()
            changed = sorted(k for k in set(now) | set(_SharedRay.environment) if now.get(k) != _SharedRay.environment.get(k))
            open(os.environ["BIASEVAL_TEST_RAY_LOG"], "a").write(f"restart {request.path.name}: {changed}\n")
        _SharedRay.stop()
    if not _SharedRay.up():
        if os.environ.get("BIASEVAL_TEST_RAY_LOG"):
            open(os.environ["BIASEVAL_TEST_RAY_LOG"], "a").write(f"start {request.path.name}\n")
        start_local_ray(2, logging_level="WARNING")
        _SharedRay.environment = _ray_environment()
    _SharedRay.module = request.path
    yield ray


@pytest.fixture(scope="module", autouse=True)
def _shared_ray_left_before_other_modules(request):
    if _SharedRay.module not in (None, request.path) and request.path not in _RAY_LOCAL_MODULES:
        _SharedRay.stop()  # before this module's own fixtures (some start a Ray of their own)
    yield


@pytest.fixture(autouse=True)
def _shared_ray_left_before_other_tests(request):
    if _SharedRay.module not in (None, request.path) and "ray_local" not in request.fixturenames:
        _SharedRay.stop()
    yield


_RAY_LOCAL_MODULES: set[Path] = set()  # the modules some test of which uses ray_local (collection)


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_start_ports() -> list[str]:
    """Options for a test's `ray start --head`: free ports instead of Ray's fixed defaults for its
    client server (10001) and its job agent (52365), which a second Ray on this machine (a test on
    another worker) would find taken — then no job can be submitted ("No available agent")."""
    return [f"--ray-client-server-port={free_port()}", f"--dashboard-agent-listen-port={free_port()}"]


def ray_start_env(env: dict | None = None, *, single_node: bool = True) -> dict:
    """The environment for a test's `ray start` that stays on this machine: biaseval's local Ray settings
    (``local_ray_env``: one node on 127.0.0.1, the dashboard's cloud probe off) and no usage report
    to usage-stats.ray.io — `ray start` sends one even with usage stats off, saying so; Ray skips it
    only for clusters ray.init started — so its address is a closed port on loopback. The nodes of a
    cluster of several (``single_node=False``) cannot be in Ray's single-node mode, and outside it Ray
    replaces 127.0.0.1 with the machine's network address: give each node a loopback address of its
    own (``--node-ip-address=127.0.0.2``, ``127.0.0.3``; a joining node ``--address=127.0.0.2:PORT``)."""
    from biaseval.run.cluster import local_ray_env

    env = local_ray_env(os.environ if env is None else env)
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_USAGE_STATS_REPORT_URL="http://127.0.0.1:9/")
    if not single_node:
        env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    return env


@pytest.fixture(scope="session")
def paper_config() -> Path:
    return REPO / "conf" / "paper.yaml"
