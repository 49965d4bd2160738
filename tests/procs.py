"""Finding and stopping every process a test started, Ray's workers included.

Ray renames its worker processes (``ray::ShardWorker``) and puts them in their own process groups,
so neither a process-group kill nor matching the command line finds them all. They do stay in the
session of the process that started Ray, so tests start such processes in a new session and stop
the whole session.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time


def _table() -> list[tuple[int, int, str]]:
    """(pid, session id, command line) of every live process (zombies, already dead, left out)."""
    # -ww: full command lines. Without it ps cuts them at $COLUMNS, which pytest sets (80 in CI), and
    # markers such as a Ray temp dir deep in a raylet's arguments went unseen (and the processes lived on).
    out = subprocess.run(["ps", "-ww", "-e", "-o", "pid=,sid=,stat=,args="], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) >= 3 and not parts[2].startswith("Z"):
            rows.append((int(parts[0]), int(parts[1]), parts[3] if len(parts) > 3 else ""))
    return rows


def cpu_seconds() -> float:
    """CPU seconds used so far by this process and by its children that have ended (lt-proc, hspell):
    the clock for a test that bounds how much work something takes. A loaded machine stretches
    wall-clock time (other processes get the cores) but hardly the CPU time the work itself needs."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def session_members(sids: set[int]) -> list[int]:
    me = os.getpid()
    return [pid for pid, sid, _ in _table() if sid in sids and pid != me]


def sessions_matching(marker: str) -> set[int]:
    """Sessions of the processes whose command line mentions ``marker`` (e.g. a Ray temp dir)."""
    return {sid for pid, sid, args in _table() if marker in args and pid != os.getpid()}


def kill_sessions(sids: set[int], timeout: float = 30.0) -> list[int]:
    """SIGKILL every process of these sessions until none is left; returns the survivors (none, normally)."""
    if os.getsid(0) in sids:
        raise ValueError("refusing to kill the test's own session: start the processes with start_new_session=True")
    deadline = time.monotonic() + timeout  # timing: a bound on a hang only; normally all die in one pass
    while (alive := session_members(sids)) and time.monotonic() < deadline:
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)  # timing: a polling interval; only how often we look
    return session_members(sids)


def wait_sessions_gone(sids: set[int], timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout  # timing: a bound on a hang only; the caller asserts nothing is left
    while (alive := session_members(sids)) and time.monotonic() < deadline:
        time.sleep(0.1)  # timing: a polling interval
    return alive
