"""Which processes hold a TCP connection to a fake server: read from /proc (Linux), so a test can
tell that several Ray actors, not one, sent to it.

A sampler thread looks every ``every_s`` seconds while the test runs; keep-alive connections stay
open between requests, so an actor that sent anything is seen."""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["connected_pids", "SenderSampler"]


def _socket_inodes(port: int) -> set[str]:
    """Inodes of this machine's TCP sockets (IPv4 and IPv6) whose remote end is ``port``."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port == port and fields[9] != "0":
                inodes.add(fields[9])
    return inodes


def connected_pids(port: int) -> set[int]:
    """Processes with an open TCP connection to ``port`` on this machine."""
    wanted = {f"socket:[{inode}]" for inode in _socket_inodes(port)}
    pids: set[int] = set()
    if not wanted:
        return pids
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            for fd in os.scandir(f"/proc/{entry.name}/fd"):
                if os.readlink(fd.path) in wanted:
                    pids.add(int(entry.name))
                    break
        except OSError:  # the process ended, or is not ours to read
            continue
    return pids


class SenderSampler:
    """Collects, until stopped, every process seen connected to ``port``."""

    def __init__(self, port: int, every_s: float = 0.1):
        self.port, self.every_s = port, every_s
        self.pids: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sender-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.pids |= connected_pids(self.port)
            self._stop.wait(self.every_s)  # timing: a sampling interval; connections stay open far longer

    def __enter__(self) -> "SenderSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
