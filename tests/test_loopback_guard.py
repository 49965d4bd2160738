"""The loopback guard (tests/loopback_guard.py) that keeps every process of the test suite off the
network: what it refuses, that a child process gets it through PYTHONPATH without losing a
sitecustomize of its own, and that an attempt the code swallowed still fails the session."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import pytest

import loopback_guard
from conftest import REPO

TCP = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
TCP6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
UNIX = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)


@pytest.mark.parametrize(("event", "args", "refused"), [
    ("socket.connect", (TCP, ("127.0.0.1", 80)), None),
    ("socket.connect", (TCP, ("127.8.9.10", 80)), None),
    ("socket.connect", (TCP, ("localhost", 80)), None),
    ("socket.connect", (TCP6, ("::1", 80, 0, 0)), None),
    ("socket.connect", (TCP6, ("::ffff:127.0.0.1", 80, 0, 0)), None),
    ("socket.connect", (UNIX, "/tmp/ray/session/sockets/raylet"), None),
    ("socket.connect", (TCP, ("10.0.0.7", 443)), "connect to 10.0.0.7:443"),
    ("socket.connect", (TCP, ("169.254.169.254", 80)), "connect to 169.254.169.254:80"),
    ("socket.connect", (TCP, (b"192.0.2.2", 1)), "connect to 192.0.2.2:1"),
    ("socket.connect", (TCP6, ("::ffff:8.8.8.8", 53, 0, 0)), "connect to ::ffff:8.8.8.8:53"),
    ("socket.connect", (TCP6, ("2001:db8::1", 80, 0, 0)), "connect to 2001:db8::1:80"),
    ("socket.connect", (TCP, ("translate.googleapis.com", 443)), "connect to translate.googleapis.com:443"),
    ("socket.sendto", (TCP, ("8.8.8.8", 53)), "sendto to 8.8.8.8:53"),
    ("socket.sendto", (TCP, None), None),
    ("socket.sendmsg", (TCP, ("127.0.0.1", 53)), None),
    ("socket.getaddrinfo", ("localhost", 80, 0, 0, 0), None),
    ("socket.getaddrinfo", ("LOCALHOST.", 80, 0, 0, 0), None),
    ("socket.getaddrinfo", (None, 80, 0, 0, 0), None),
    ("socket.getaddrinfo", ("10.1.2.3", 80, 0, 0, 0), None),  # parsed, not asked for: connect decides
    ("socket.getaddrinfo", ("metadata.google.internal", 80, 0, 0, 0), "lookup of 'metadata.google.internal'"),
    ("socket.getaddrinfo", (b"example.com", None, 0, 0, 0), "lookup of 'example.com'"),
    ("socket.gethostbyname", ("usage-stats.ray.io",), "lookup of 'usage-stats.ray.io'"),
    ("socket.gethostbyaddr", ("127.0.0.1",), None),
    ("socket.gethostbyaddr", (socket.gethostname(),), None),  # http.server's getfqdn, on a server bound to ''
    ("socket.getaddrinfo", (socket.gethostname(), 80, 0, 0, 0), None),
    ("socket.gethostbyaddr", ("93.184.216.34",), "reverse lookup of '93.184.216.34'"),
    ("open", ("/etc/hosts", "r", 0), None),
])
def test_what_the_guard_refuses(event, args, refused):
    assert loopback_guard.refusal(event, args) == refused


CHILD = textwrap.dedent("""
    import socket
    server = socket.create_server(("127.0.0.1", 0))
    socket.create_connection(server.getsockname()).close()  # loopback: fine
    for call in (lambda: socket.create_connection(("192.0.2.1", 80), timeout=5),
                 lambda: socket.getaddrinfo("example.com", 443)):
        try:
            call()
        except OSError as error:  # swallowed, as the probes of Ray and the SDKs do
            print(type(error).__name__, error.__class__.__mro__[1].__name__)
    print("done")
""")  # timing: the 5 s timeout is reached only if the guard is broken (192.0.2.1 is never routed)


def _child_env(log, *first) -> dict:
    env = {k: v for k, v in os.environ.items() if k != loopback_guard.LOG_ENV}
    env[loopback_guard.LOG_ENV] = str(log)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, first), str(loopback_guard.STARTUP), env.get("PYTHONPATH", "")])
    return env


def test_a_child_process_is_guarded_and_each_attempt_recorded_even_when_swallowed(tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    done = subprocess.run([sys.executable, "-c", CHILD], env=_child_env(log), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["BeyondLoopback ConnectionRefusedError", "BeyondLoopbackLookup gaierror",
                                        "done"]
    found = loopback_guard.recorded(log)
    assert [e["what"] for e in found] == ["connect to 192.0.2.1:80", "lookup of 'example.com'"]
    assert all(e["argv"][:2] == [sys.executable, "-c"] and e["test"] == os.environ["PYTEST_CURRENT_TEST"]
               for e in found)
    assert "<string>" in loopback_guard.describe(found[0])  # where: the line of the child's code


def test_a_sitecustomize_the_guard_hides_still_runs(tmp_path):
    """The guard's folder goes first on PYTHONPATH; a user's own sitecustomize behind it runs too."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "sitecustomize.py").write_text("import builtins\nbuiltins.MINE = 'ran'\n")
    (tmp_path / "log").mkdir()
    code = textwrap.dedent("""
        import builtins, socket
        print(builtins.MINE)
        try:
            socket.gethostbyname("x.example")
        except OSError as error:
            print(type(error).__name__)
    """)
    env = _child_env(tmp_path / "log")
    env["PYTHONPATH"] = os.pathsep.join([str(loopback_guard.STARTUP), str(tmp_path / "mine")])
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ran", "BeyondLoopbackLookup"]


def test_the_session_here_guards_its_children():
    """(This process's own hook is the one test_an_attempt_swallowed_in_a_test_fails_the_session sees.)"""
    path = os.environ["PYTHONPATH"].split(os.pathsep)
    assert path[0] == str(loopback_guard.STARTUP) and os.path.isdir(os.environ[loopback_guard.LOG_ENV])


def test_an_attempt_swallowed_in_a_test_fails_the_session(tmp_path):  # a pytest session of its own
    (tmp_path / "test_swallow.py").write_text(textwrap.dedent("""
        import socket
        def test_swallowed():
            try:
                socket.create_connection(("203.0.113.9", 443), timeout=5)  # timing: never reached, see CHILD
            except OSError:
                pass
    """))
    env = {k: v for k, v in os.environ.items() if k != loopback_guard.LOG_ENV}  # the inner session's own
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "tests"), env.get("PYTHONPATH", "")])
    env["TMPDIR"] = str(tmp_path)  # where the failing session keeps its record
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_swallow.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert "1 passed" in done.stdout and "network beyond loopback" in done.stdout
    assert "connect to 203.0.113.9:443" in done.stdout and "test_swallow.py::test_swallowed" in done.stdout
