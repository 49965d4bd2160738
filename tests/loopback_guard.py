"""No test reaches beyond loopback: a guard in every Python process the test suite starts.

``install`` adds an audit hook (``sys.addaudithook``) that refuses, before anything is sent:

- a ``connect``, ``sendto`` or ``sendmsg`` to an internet address that is not loopback (127.0.0.0/8,
  ::1, ::ffff:127.x), or to a host name other than ``localhost`` (Python would look it up first);
- a name lookup (``getaddrinfo``, ``gethostbyname``) of a name other than ``localhost`` and this
  machine's own name: the DNS query itself leaves the machine. Numeric addresses are looked up
  without a query, so they pass here and meet the rule at ``connect``; a reverse lookup
  (``gethostbyaddr``) of a non-loopback address is a query too. The machine's own name is allowed
  because Python's ``http.server`` asks it (``getfqdn``) whenever a server binds to all interfaces,
  as Ray's metrics exporters do on a node not in single-node mode; it comes from /etc/hosts.

A refused connection raises ``BeyondLoopback`` (a ``ConnectionRefusedError``), a refused lookup
``BeyondLoopbackLookup`` (a ``socket.gaierror``): what a machine without a network would answer, so
the code under test fails the way it would offline. Every refusal is also written to a file of its
own process in the folder named by ``LOG_ENV`` (the process, its command line, the test running
when it was started or is running now, the call and the destination, where in the code), and
``tests/conftest.py`` fails the session naming each one: code that swallows the exception (as Ray's
and the SDKs' probes do) still fails the run.

Reach: the pytest process (conftest installs the hook) and every Python process started with
``STARTUP`` on its PYTHONPATH — conftest puts it there for the whole session, so CLI subprocesses,
Ray's workers, dashboard and agents, moto and fake servers all run ``STARTUP/sitecustomize.py``. A
test that builds a child's environment from scratch must keep PYTHONPATH. Not reached: programs
that are not Python (Ray's gcs_server and raylet, apertium, hspell, chromium) and sockets opened
below Python (gRPC's C core, libuv): for those, ``test_no_network.py`` runs a whole sweep under
strace. Standard library only, imported only when needed: it runs before anything else in every
process (about 5 ms more at each start).
"""

from __future__ import annotations

import _thread
import os
import sys

LOG_ENV = "BIASEVAL_LOOPBACK_GUARD_LOG"
STARTUP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard_startup")
LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


class BeyondLoopback(ConnectionRefusedError):
    """A test's process tried to reach an address beyond loopback."""


def _lookup_error(message: str) -> OSError:
    """A ``BeyondLoopbackLookup``: a ``socket.gaierror`` (socket is imported by then: a lookup was made)."""
    import socket

    global BeyondLoopbackLookup
    if "BeyondLoopbackLookup" not in globals():
        BeyondLoopbackLookup = type("BeyondLoopbackLookup", (socket.gaierror,), {
            "__doc__": "A test's process tried to look up a name that only a DNS server could answer.",
            "__module__": __name__})
    return BeyondLoopbackLookup(socket.EAI_NONAME, message)


def _text(host) -> str:
    return os.fsdecode(host) if isinstance(host, (bytes, bytearray)) else str(host)


def _literal(host: str):
    """The IP address ``host`` writes (an IPv4-mapped IPv6 address as IPv4), or None for a name."""
    import ipaddress

    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])  # an IPv6 scope (fe80::1%eth0) is not part of it
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _local_name(host: str) -> bool:
    import socket  # imported already: a socket call is being audited

    name = host.rstrip(".").lower()
    return name in LOCAL_NAMES or name == socket.gethostname().lower()


def refusal(event: str, args: tuple) -> str | None:
    """What is wrong with an audited call (``event``, ``args`` as ``sys.addaudithook`` gets them): a
    description of the destination beyond loopback, or None when the call stays on this machine."""
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        import socket  # imported already: a socket is being used

        sock, address = args[0], args[1]
        if address is None or getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6) \
                or not isinstance(address, tuple):
            return None  # a connected socket's own peer, a Unix socket, netlink: nothing leaves the machine
        host, port = _text(address[0]), address[1]
        ip = _literal(host)
        if (ip.is_loopback if ip is not None else _local_name(host)):
            return None
        return f"{event.split('.', 1)[1]} to {host}:{port}"
    if event in ("socket.getaddrinfo", "socket.gethostbyname"):
        host = args[0]
        if host is None or _text(host) in ("", "<broadcast>") or _literal(_text(host)) is not None \
                or _local_name(_text(host)):
            return None  # no name to look up (a numeric address is parsed, not asked for)
        return f"lookup of {_text(host)!r}"
    if event == "socket.gethostbyaddr":
        ip = _literal(_text(args[0]))
        if (ip.is_loopback if ip is not None else _local_name(_text(args[0]))):
            return None
        return f"reverse lookup of {_text(args[0])!r}"
    return None


_busy = _thread._local()


def _record(folder: str, event: str, what: str) -> None:
    import json
    import traceback

    libraries = tuple({sys.prefix, sys.base_prefix, os.path.dirname(os.__file__)})
    frames = [f for f in traceback.extract_stack() if not f.filename.endswith(("loopback_guard.py", "socket.py"))]
    ours = [f for f in frames if not f.filename.startswith(libraries) and "site-packages" not in f.filename]
    entry = {"pid": os.getpid(), "argv": list(getattr(sys, "orig_argv", sys.argv)),
             "test": os.environ.get("PYTEST_CURRENT_TEST"), "event": event, "what": what,
             # the innermost frames of the code under test (not a library's), then the innermost of all
             "where": [f"{f.filename}:{f.lineno} {f.name}" for f in ours[-4:]] + ["..."]
                      + [f"{f.filename}:{f.lineno} {f.name}" for f in frames[-3:]]}
    line = (json.dumps(entry) + "\n").encode()
    fd = os.open(os.path.join(folder, f"{os.getpid()}.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def install(folder: str) -> None:
    """Refuse, and record in ``folder``, every attempt of this process to reach beyond loopback."""

    def hook(event: str, args: tuple) -> None:
        if not event.startswith("socket.") or getattr(_busy, "on", False):
            return
        what = refusal(event, args)
        if what is None:
            return
        _busy.on = True
        try:
            _record(folder, event, what)
        finally:
            _busy.on = False
        message = f"loopback guard: {what} refused (tests never reach beyond loopback; tests/loopback_guard.py)"
        if event.startswith("socket.get"):
            raise _lookup_error(message)
        raise BeyondLoopback(message)

    sys.addaudithook(hook)


def recorded(folder) -> list[dict]:
    """Every refusal written to ``folder`` (a Path), by any process."""
    import json

    found = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:  # a process killed in the middle of a line
                found.append({"pid": path.stem, "what": f"(unreadable entry: {line[:200]!r})"})
    return found


def describe(entry: dict) -> str:
    argv = " ".join(entry.get("argv") or [])[:300]
    lines = [f"{entry.get('what')} — pid {entry.get('pid')}: {argv}"]
    if entry.get("test"):
        lines.append(f"    during {entry['test']}")
    lines += [f"    at {where}" for where in entry.get("where") or []]
    return "\n".join(lines)
