"""A local run stays on this machine: nothing `biaseval sweep` starts — its driver, Ray's gcs_server,
raylet, dashboard, agents and workers — attempts a connection beyond loopback (docs/security.md).

Python processes are watched by the loopback guard in every test (tests/loopback_guard.py); here the
whole process tree of a sweep is watched from the kernel's side, with strace, which sees what the
guard cannot: Ray's C++ processes and sockets opened below Python (gRPC)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import net_trace
from conftest import REPO


def test_local_ray_env_adds_its_settings_and_keeps_the_pythonpath():
    from biaseval.run.cluster import LOCAL_RAY_SETTINGS, RAY_STARTUP, local_ray_env

    env = local_ray_env({"PYTHONPATH": f"/mine{os.pathsep}/theirs", "HOME": "/home/x"})
    assert env["PYTHONPATH"] == os.pathsep.join([str(RAY_STARTUP), "/mine", "/theirs"])
    assert env["HOME"] == "/home/x" and LOCAL_RAY_SETTINGS.items() <= env.items()
    assert local_ray_env(env)["PYTHONPATH"] == env["PYTHONPATH"]  # once, however often applied
    assert local_ray_env({})["PYTHONPATH"] == str(RAY_STARTUP)


@pytest.mark.slow  # starts a local Ray
def test_a_local_rays_workers_run_at_the_drivers_priority(ray_local):
    """Ray starts its workers at niceness 15 unless told otherwise: on a busy machine an actor then gets
    a few per cent of a core against any ordinary process. A sweep's private Ray runs them at 0."""

    @ray_local.remote(num_cpus=0)
    def niceness() -> int:
        return os.getpriority(os.PRIO_PROCESS, 0)

    assert ray_local.get(niceness.remote(), timeout=120) == os.getpriority(os.PRIO_PROCESS, 0) == 0


def test_in_rays_dashboard_the_cloud_probe_is_off(tmp_path):
    """A process running a script at .../ray/dashboard/dashboard.py (as Ray starts its dashboard) with
    local_ray_env finds Ray's cloud-metadata probe replaced; Ray's own module is otherwise untouched."""
    from biaseval.run.cluster import local_ray_env

    script = tmp_path / "ray" / "dashboard" / "dashboard.py"
    script.parent.mkdir(parents=True)
    script.write_text(textwrap.dedent("""
        import sys
        from ray._common.usage import usage_lib
        probe = usage_lib.get_cloud_from_metadata_requests
        print(probe.__module__, probe(), usage_lib.usage_stats_enabled(), "_loopback_guard" in sys.modules)
    """))
    done = subprocess.run([sys.executable, str(script)], env=local_ray_env(os.environ), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # and the sitecustomize it hides (the tests' loopback guard, next on PYTHONPATH) ran too
    assert done.stdout.split() == ["sitecustomize", "unknown", "False", "True"]


@pytest.mark.slow  # a sweep on a local Ray, traced
def test_a_local_sweep_attempts_no_connection_beyond_loopback(tmp_path):
    out = tmp_path / "run"
    log = tmp_path / "sweep.strace"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    sweep = [sys.executable, "-m", "biaseval.cli", "sweep", "--config", str(REPO / "conf" / "smoke.yaml"), "--out", str(out)]
    done = net_trace.trace(sweep, log, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (out / "report.md").is_file()
    found = net_trace.attempts(log.read_text(encoding="utf-8", errors="replace"))
    programs = {a.program for a in found}
    # the trace did see the whole tree: Ray's C++ servers and its Python processes talking (on loopback)
    assert {"gcs_server", "raylet", "python default_worker.py", "python dashboard.py"} <= programs, programs
    beyond = net_trace.beyond_loopback(found)
    assert not beyond, "attempts beyond loopback:\n" + "\n".join(map(str, sorted(set(beyond), key=str)))


def test_the_trace_reader():
    log = textwrap.dedent("""\
        100 execve("/venv/bin/python", ["/venv/bin/python", "-m", "biaseval.cli", "sweep"], 0x7ffd /* 9 vars */) = 0
        100 clone3({flags=CLONE_VM|CLONE_FS, child_tid=0x7f, parent_tid=0x7f, exit_signal=0}, 88) = 101
        101 connect(9, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("8.8.8.8")}, 16) = 0
        100 vfork( <unfinished ...>
        102 execve("/venv/lib/ray/core/src/ray/gcs/gcs_server", ["/venv/lib/ray/core/src/ray/gcs/gcs_server", "--log_dir=/tmp"], 0x55 /* 9 vars */) = 0
        100 <... vfork resumed>)                 = 102
        102 connect(15, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::ffff:169.254.169.254", &sin6_addr), sin6_scope_id=0}, 28 <unfinished ...>
        102 connect(16, {sa_family=AF_INET, sin_port=htons(6379), sin_addr=inet_addr("127.0.0.1")}, 16) = 0
        102 connect(17, {sa_family=AF_UNIX, sun_path="/tmp/ray/sockets/raylet"}, 110) = 0
        103 sendto(5, "\\1\\2", 2, 0, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 2
    """)
    found = net_trace.attempts(log)
    assert [(a.program, a.address, a.port) for a in found] == [
        ("python -m biaseval.cli", "8.8.8.8", 53), ("gcs_server", "::ffff:169.254.169.254", 80),
        ("gcs_server", "127.0.0.1", 6379), ("?", "10.255.255.53", 53)]
    assert [a.address for a in net_trace.beyond_loopback(found)] == ["8.8.8.8", "::ffff:169.254.169.254",
                                                                     "10.255.255.53"]


def test_validating_a_hub_model_offline_asks_no_hub(tmp_path):
    """``local_files_only: true`` means the local cache and nothing else, without HF_HUB_OFFLINE:
    transformers' ``cached_file`` fetched the hub's "agent harnesses" list even so (the guard saw it)."""
    import loopback_guard

    config = tmp_path / "hub.yaml"
    config.write_text("name: hub\nsuites: [otsc-en]\ntargets: {otsc-en: [es]}\nsystems:\n"
                      "  nllb: {backend: hf, version: nllb, options: {model: facebook/nllb-200-distilled-600M}}\n")
    guard = tmp_path / "guard"
    guard.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    env.update({loopback_guard.LOG_ENV: str(guard), "HF_HOME": str(tmp_path / "hf")})
    done = subprocess.run([sys.executable, "-m", "biaseval.cli", "validate", "--config", str(config), "--data"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "not found in the local hub cache" in done.stderr, done.stderr
    assert f"{config}:5" in done.stderr  # at the system's line
    assert loopback_guard.recorded(guard) == []
