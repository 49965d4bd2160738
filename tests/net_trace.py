"""Every network destination a command and all its descendants try, seen by the kernel's side of
the process (``strace -f``): what the Python guard (tests/loopback_guard) cannot see — Ray's C++
processes (gcs_server, raylet), gRPC's C core in any process, apertium, hspell, chromium.

``trace`` runs a command under strace, following forks, threads and execs, recording ``connect``,
``sendto`` and ``sendmsg`` (a destination given with the call, as a DNS query over UDP does) and the
process calls (to name the program behind each thread). ``attempts`` reads such a log;
``beyond_loopback`` keeps the destinations that are not loopback. A UDP ``connect`` sends nothing
but is still counted: it is how a program picks the interface it would use to reach that address.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

_LINE = re.compile(r"^(?P<tid>\d+) +(?P<rest>.*)$")
_CALL = re.compile(r"^(?:<\.\.\. )?(?P<call>\w+)(?:\(| resumed>)")
_EXEC = re.compile(r'^execve\("(?P<path>[^"]*)", \[(?P<argv>[^\]]*)\]')
_CHILD = re.compile(r"= (?P<child>\d+)(?: <[^>]*>)?$")
_INET = re.compile(r'sa_family=(?P<family>AF_INET6?), sin6?_port=htons\((?P<port>\d+)\), '
                   r'(?:sin_addr=inet_addr\("(?P<v4>[^"]+)"\)|.*?inet_pton\(AF_INET6, "(?P<v6>[^"]+)")')


@dataclass(frozen=True)
class Attempt:
    """One call that names a network destination: who made it (the program of the thread, as it
    was exec'd), the call, and where to."""

    tid: int
    program: str
    call: str
    address: str
    port: int

    def __str__(self) -> str:
        return f"{self.program} (thread {self.tid}): {self.call} to {self.address}:{self.port}"


def is_loopback(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _program(argv: str, path: str) -> str:
    """A short name for an exec'd program: the script a Python interpreter runs, else the binary."""
    words = re.findall(r'"((?:[^"\\]|\\.)*)"', argv) or [path]
    scripts = [w for w in words[1:] if w.endswith(".py")]
    if scripts:
        return f"python {scripts[0].rsplit('/', 1)[-1]}"
    if len(words) > 2 and words[1] == "-m":
        return f"python -m {words[2]}"
    return words[0].rsplit("/", 1)[-1]


def attempts(log: str) -> list[Attempt]:
    """The network destinations in an ``strace -f`` log (one line per call, thread id first)."""
    parent: dict[int, int] = {}
    program: dict[int, str] = {}
    found: list[Attempt] = []
    for line in log.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        tid, rest = int(match["tid"]), match["rest"]
        call = _CALL.match(rest)
        name = call["call"] if call else ""
        if name in ("clone", "clone3", "fork", "vfork") and (child := _CHILD.search(rest)):
            parent[int(child["child"])] = tid
        elif name == "execve" and (exe := _EXEC.match(rest)):
            program[tid] = _program(exe["argv"], exe["path"])
        elif name in ("connect", "sendto", "sendmsg") and (inet := _INET.search(rest)):
            found.append(Attempt(tid, _owner(tid, parent, program), name, inet["v4"] or inet["v6"],
                                 int(inet["port"])))
    return found


def _owner(tid: int, parent: dict[int, int], program: dict[int, str]) -> str:
    seen = set()
    while tid not in program and tid in parent and tid not in seen:
        seen.add(tid)
        tid = parent[tid]
    return program.get(tid, "?")


def beyond_loopback(found: list[Attempt]) -> list[Attempt]:
    return [a for a in found if not is_loopback(a.address)]


def trace(argv: list[str], log: Path, **run) -> subprocess.CompletedProcess:
    """Run ``argv`` under ``strace -f`` (keyword arguments go to ``subprocess.run``), its log to ``log``."""
    strace = shutil.which("strace")
    if strace is None:
        raise RuntimeError("strace is not installed (apt-get install strace): it watches the processes "
                           "Python's audit hooks cannot (Ray's gcs_server and raylet, gRPC)")
    return subprocess.run([strace, "-f", "-qq", "-e", "signal=none", "-s", "256",
                           "-e", "trace=connect,sendto,sendmsg,execve,clone,clone3,fork,vfork",
                           "-o", str(log), *argv], **run)
