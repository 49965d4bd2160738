"""One driver per run: a lock on ``--out`` held for the whole of a sweep or a scoring.

Two drivers on one run directory would both redo all the work (and, for live systems, send every
text twice). The first takes the lock; the second stops with exit 2, naming the holder.

- A local ``--out DIR``: the file ``.DIR.biaseval-lock`` beside DIR (in its parent folder, so that
  a new, empty DIR stays empty until the run starts), created with ``O_CREAT | O_EXCL`` and holding
  the holder's host, pid, start time and run id. A heartbeat thread touches it (its mtime) while
  the driver runs. It is stale, and taken over, when its process is gone (same host), or when its
  heartbeat is older than the time-to-live (another host, e.g. on a shared filesystem).
- An object-store ``--out s3://bucket/prefix``: a lease object ``prefix/.biaseval-lease`` naming the
  holder and an expiry, renewed by the heartbeat. Object stores offer no compare-and-swap through
  pyarrow, so a driver writes its token, waits ``SETTLE_S`` and reads the lease back: it holds the
  lease only if its own token is still there. Residual race: two drivers that find no live lease
  within the same moment, and one of whose uploads takes longer than ``SETTLE_S`` to become
  visible, can both believe they hold it. Expiry is judged by the reader's clock against the
  holder's, so hosts' clocks must agree to well within the time-to-live.

The time-to-live is ``BIASEVAL_LOCK_TTL`` seconds (default 60). A lock held by this process is
re-entrant (a sweep holds it while it scores). It is released on return and on any exception, and
on SIGTERM (turned into a normal exit while the lock is held).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from biaseval.credentials import describe
from biaseval.errors import OutputError, RunLockedError
from biaseval.run.filesystem import Folder, StoreOptions, is_remote, os_error

LEASE = ".biaseval-lease"
SETTLE_S = 1.0


def ttl_seconds() -> float:
    raw = os.environ.get("BIASEVAL_LOCK_TTL", "60")
    try:
        value = float(raw)
    except ValueError:
        raise OutputError(f"BIASEVAL_LOCK_TTL={raw!r}: expected a number of seconds") from None
    if value <= 0:
        raise OutputError(f"BIASEVAL_LOCK_TTL={raw!r}: must be positive")
    return value


def _node() -> str:
    """This machine and process namespace: pids are only comparable within the same one."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return f"{socket.gethostname()}|{namespace}"


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), to tell a reused pid apart; None
    where /proc is missing."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: alive
    return started is None or _process_start(pid) in (None, started)


@dataclass
class Holder:
    token: str
    host: str
    node: str
    pid: int
    pid_start: str | None
    since: str
    run_id: str | None = None
    heartbeat: float = 0.0  # seconds since the epoch, holder's clock (the lease; a lock file uses its mtime)

    @classmethod
    def me(cls, run_id: str | None) -> "Holder":
        return cls(uuid.uuid4().hex, socket.gethostname(), _node(), os.getpid(), _process_start(os.getpid()),
                   datetime.now(timezone.utc).isoformat(timespec="seconds"), run_id, time.time())

    @classmethod
    def parse(cls, data: bytes) -> "Holder | None":
        try:
            fields = json.loads(data.decode("utf-8"))
            return cls(**{k: fields[k] for k in cls.__dataclass_fields__ if k in fields})
        except (ValueError, TypeError, KeyError, AttributeError):
            return None

    def dump(self) -> bytes:
        return (json.dumps(asdict(self), sort_keys=True) + "\n").encode("utf-8")

    def describe(self) -> str:
        run = f", run {self.run_id}" if self.run_id else ""
        return f"host {self.host}, pid {self.pid}, since {self.since}{run}"

    def stale(self, heartbeat: float, ttl: float) -> str | None:
        """Why this holder no longer holds the lock, or None while it does."""
        if self.node == _node():
            return None if _alive(self.pid, self.pid_start) else f"its process {self.pid} is gone"
        age = time.time() - heartbeat
        return f"no heartbeat for {age:.0f} s (time-to-live {ttl:g} s)" if age > ttl else None


class LocalLock:
    def __init__(self, out: str | Path):
        self.out = Path(out).resolve()
        self.path = self.out.with_name(f".{self.out.name or 'root'}.biaseval-lock")
        self.key = str(self.path)

    def recorded_run_id(self) -> str | None:
        try:
            return json.loads((self.out / "run.json").read_text(encoding="utf-8")).get("run_id")
        except (OSError, ValueError, AttributeError):
            return None

    def _read(self) -> tuple[Holder | None, float] | None:
        """The current holder (None if unreadable) and its heartbeat; None when there is no lock."""
        try:
            with open(self.path, "rb") as fh:
                return Holder.parse(fh.read()), os.fstat(fh.fileno()).st_mtime
        except FileNotFoundError:
            return None

    def acquire(self, me: Holder, ttl: float, stream) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _unwritable(exc, self.path.parent, self.out) from None
        for _ in range(5):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                current = self._read()
                if current is None:
                    continue  # released meanwhile
                holder, heartbeat = current
                reason = (holder.stale(heartbeat, ttl) if holder is not None
                          else ("unreadable and untouched for longer than the time-to-live"
                                if time.time() - heartbeat > ttl else None))
                if reason is None:
                    raise RunLockedError(_in_use(str(self.out), holder, self.path))
                if self._take_over(holder):
                    print(f"biaseval: taking over the run lock {self.path} from "
                          f"{holder.describe() if holder else 'an unknown holder'}: {reason}", file=stream)
                continue
            except OSError as exc:
                raise _unwritable(exc, self.path, self.out) from None
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(me.dump())
                    fh.flush()
                    os.fsync(fh.fileno())
            except OSError as exc:
                self.path.unlink(missing_ok=True)
                raise _unwritable(exc, self.path, self.out) from None
            return
        raise RunLockedError(f"{self.out}: the run lock {self.path} keeps changing hands; is another biaseval "
                             f"starting on it? Try again")

    def _take_over(self, stale: Holder | None) -> bool:
        """Move the stale lock aside; True when what was moved is the lock judged stale (if another
        driver replaced it meanwhile, it is put back and False returned)."""
        aside = self.path.with_name(f"{self.path.name}.{uuid.uuid4().hex[:12]}.stale")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return False
        moved = Holder.parse(aside.read_bytes())
        if stale is not None and (moved is None or moved.token != stale.token):
            try:
                os.link(aside, self.path)  # put the live lock back, unless yet another one is there
            except OSError:
                pass
            aside.unlink(missing_ok=True)
            return False
        aside.unlink(missing_ok=True)
        return True

    def beat(self, me: Holder) -> bool:
        current = self._read()
        if current is None or current[0] is None or current[0].token != me.token:
            return False
        os.utime(self.path)
        return True

    def release(self, me: Holder) -> None:
        current = self._read()
        if current is not None and current[0] is not None and current[0].token == me.token:
            self.path.unlink(missing_ok=True)


class RemoteLease:
    def __init__(self, out: str, options: StoreOptions | None):
        self.store = Folder(out, options or StoreOptions())
        self.key = self.store.uri(LEASE)

    def recorded_run_id(self) -> str | None:
        try:
            if self.store.exists("run.json"):
                return json.loads(self.store.read_text("run.json")).get("run_id")
        except (OSError, ValueError, AttributeError):
            pass
        return None

    def _read(self) -> Holder | None:
        try:
            return Holder.parse(self.store.read_bytes(LEASE))
        except FileNotFoundError:
            return None

    def acquire(self, me: Holder, ttl: float, stream) -> None:
        self.store.check()  # reachable, bucket there: fails naming the URL before any work
        try:
            current = self._read()
            reason = None
            if current is not None:
                reason = current.stale(current.heartbeat, ttl)
                if reason is None:
                    raise RunLockedError(_in_use(self.store.location, current, self.key))
            self.store.write_bytes(LEASE, me.dump())
            time.sleep(SETTLE_S)
            back = self._read()
        except OSError as exc:
            raise self.store.failure(exc, LEASE) from None
        if back is None or back.token != me.token:
            raise RunLockedError(_in_use(self.store.location, back, self.key))
        if current is not None:
            print(f"biaseval: taking over the run lease {self.key} from {current.describe()}: {reason}", file=stream)

    def beat(self, me: Holder) -> bool:
        current = self._read()
        if current is None or current.token != me.token:
            return False
        me.heartbeat = time.time()
        self.store.write_bytes(LEASE, me.dump())
        return True

    def release(self, me: Holder) -> None:
        try:
            current = self._read()
            if current is not None and current.token == me.token:
                self.store.delete(LEASE)
        except OSError as exc:  # the lease then expires by itself
            print(f"biaseval: could not release the run lease {self.key} ({describe(exc)}); it expires by itself",
                  file=sys.stderr)


def _in_use(out: str, holder: Holder | None, where) -> str:
    who = holder.describe() if holder is not None else "a holder whose lock cannot be read"
    return (f"{out} is in use by another biaseval driver ({who}; lock {where}). Wait for it to finish; "
            f"a lock whose process is gone is taken over by the next run")


def _unwritable(exc: OSError, path: Path, out: Path) -> OutputError:
    error = os_error(exc, path) or OutputError(f"{path}: {exc.strerror or exc}")
    return type(error)(f"cannot take the run lock of --out {out}: {error}")


_held: dict[str, int] = {}
_held_guard = threading.Lock()


class _Heartbeat(threading.Thread):
    def __init__(self, lock, me: Holder, every: float, stream):
        super().__init__(name="biaseval-run-lock", daemon=True)
        self.lock, self.me, self.every, self.stream = lock, me, every, stream
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.every):
            try:
                if not self.lock.beat(self.me):
                    print(f"biaseval: lost the run lock {self.lock.key} (another driver took it over); this run "
                          f"and that one may now both write it", file=self.stream)
                    return
            except OSError:
                continue  # a blip; the next beat tries again


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


@contextmanager
def run_lock(out: str | Path, options: StoreOptions | None = None, *, stream=None,
             run_id: str | None = None) -> Iterator[None]:
    """Hold the run lock of ``out`` (a local folder or an object-store URI) for the block; raise
    RunLockedError (exit 2) naming the holder when another driver holds it. ``run_id``: the run's id
    when the caller knows it (else the one in the run's run.json, if any), shown to other drivers."""
    stream = stream if stream is not None else sys.stderr
    lock = RemoteLease(str(out), options) if is_remote(out) else LocalLock(out)
    with _held_guard:
        nested = lock.key in _held
        if nested:
            _held[lock.key] += 1
    if nested:
        try:
            yield
        finally:
            with _held_guard:
                _held[lock.key] -= 1
        return
    ttl = ttl_seconds()
    me = Holder.me(run_id or lock.recorded_run_id())
    lock.acquire(me, ttl, stream)
    heartbeat = _Heartbeat(lock, me, ttl / 4, stream)
    heartbeat.start()
    restore = None
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        restore = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    with _held_guard:
        _held[lock.key] = 1
    try:
        yield
    finally:
        with _held_guard:
            del _held[lock.key]
        if restore is not None and signal.getsignal(signal.SIGTERM) is _exit_on_sigterm:
            signal.signal(signal.SIGTERM, restore)
        heartbeat.done.set()
        heartbeat.join(timeout=30)
        lock.release(me)
