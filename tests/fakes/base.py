"""What the fake translation services have in common: a server on 127.0.0.1, scripted faults,
recorded requests and a quota. Each fake (google_server, azure_server, aws_server) adds its wire
protocol on top::

    class ThingHandler(FakeHandler):
        def do_POST(self):
            fake, record = self.fake, ThingRecord(...)  # a Record with what the request says
            with fake.track(record):                    # numbered, timed, counted in flight
                scripted = fake.next_scripted(record)   # the gate's or fake.script(...)'s outcome, or None
                wait = fake.quota.take(chars) if fake.quota else 0.0
                ...
            self.reply(200, body)

    class FakeThing(FakeService):
        Handler = ThingHandler

- ``FakeService.start()``/``stop()`` (or ``with``): an HTTP server on a free port of 127.0.0.1, served
  by threads of this process (one per connection, kept alive as real front ends do). ``stop()`` wakes
  requests still waiting (``pause``), cuts open connections and joins every thread it started.
- ``script(*outcomes, times=1)``: outcomes for the next requests, one each, in order, before normal
  answers; what an outcome is (an error, a slow answer) is up to the fake.
- ``gate``: a ``Gate`` that holds requests until a client's every sender is waiting, throttles one
  and lets the others go only once ``release()`` says so (a fake that passes its record to
  ``next_scripted`` honours it: the OpenAI fake).
- ``requests``: a ``Record`` per request, in arrival order, with ``seq`` (1 for the first request),
  ``at`` (arrival), ``done`` (when its answer was decided; None until then) and ``in_flight`` (how many
  requests the fake was handling when it arrived, itself included); ``max_in_flight``, ``count``.
- ``RateLimit``: requests/s and characters/min token buckets, shared by all clients; on the wall
  clock, or on a ``ManualClock`` (``fake.quota.use_clock``) that moves only when the test says, so
  that what a quota answers does not depend on how fast the machine runs the test.

Only the standard library is used, so the benchmarks can import the fakes too.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

R = TypeVar("R", bound="Record")


class RateLimit:
    """Token buckets of ``requests_per_s`` and ``chars_per_min`` (either may be None), each holding
    ``burst_s`` seconds' worth (at least one token) and starting full. A request is admitted whole or
    not at all. One that costs more than a bucket holds passes once the bucket is full and leaves a
    debt that later requests wait out, so that no request is refused for ever. Thread-safe."""

    def __init__(self, requests_per_s: float | None = None, chars_per_min: float | None = None,
                 burst_s: float = 1.0):
        self._lock = threading.Lock()
        self._rates = [requests_per_s, chars_per_min / 60 if chars_per_min else None]
        self._capacity = [max(1.0, rate * burst_s) if rate else 0.0 for rate in self._rates]
        self._tokens = list(self._capacity)
        self._clock: Callable[[], float] = time.monotonic
        self._at = self._clock()

    def use_clock(self, clock: Callable[[], float]) -> None:
        """Measure time on ``clock`` from now on (the buckets keep what they hold)."""
        with self._lock:
            self._clock = clock
            self._at = clock()

    def take(self, chars: int) -> float:
        """Take one request and ``chars`` characters: 0.0 if admitted, else the seconds until the
        request would be (and nothing is taken)."""
        costs = (1, chars)
        with self._lock:
            now = self._clock()
            wait = 0.0
            for k, rate in enumerate(self._rates):
                if rate:
                    self._tokens[k] = min(self._capacity[k], self._tokens[k] + rate * (now - self._at))
                    need = min(costs[k], self._capacity[k])
                    wait = max(wait, (need - self._tokens[k]) / rate)
            self._at = now
            if wait > 0:
                return wait
            for k, rate in enumerate(self._rates):
                if rate:
                    self._tokens[k] -= costs[k]
            return 0.0


class ManualClock:
    """A logical clock for quotas: it stands still until ``advance``d, or with ``step`` moves that much
    each time it is read (each request the quota sees), however fast the machine sends them."""

    def __init__(self, now: float = 1000.0, step: float = 0.0):
        self.now, self.step = now, step

    def __call__(self) -> float:
        now = self.now
        self.now += self.step
        return now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(frozen=True)
class Failure:
    """One scripted answer instead of a normal one, for the HTTP fakes: ``status`` (with the service's
    error body and ``code``; Retry-After from ``retry_after`` seconds); ``delay_s``: wait that long
    first (then serve normally when no status is set); ``hang_s``: wait that long, then close the
    connection unanswered (a request the client times out on). Each fake reads the fields it serves."""

    status: int | None = None
    code: int | str | None = None
    message: str | None = None
    retry_after: float | None = None
    delay_s: float = 0.0
    hang_s: float = 0.0


class Gate:
    """Holds requests until ``senders`` of them are waiting at once, answers the last to arrive with
    ``outcome`` (a throttle, say), and holds the others until ``release()`` is true (polled every
    ``poll_s``); later requests pass. With every sender of a client waiting here, none of them can send
    anything more until the gate opens: what each does next is decided by what the throttle told them.
    ``fired`` (the throttled request's record), ``opened`` (time.monotonic() when the others went on).
    A gate that does not see ``senders`` requests within ``timeout_s`` throttles the last one anyway,
    so that a test fails on its checks instead of hanging."""

    def __init__(self, senders: int, outcome: Any, release: Callable[[], bool], *, poll_s: float = 0.01,
                 timeout_s: float = 120.0):
        self.senders, self.outcome, self.release = senders, outcome, release
        self.poll_s, self.timeout_s = poll_s, timeout_s
        self.waiting = 0  # requests held so far
        self.fired: Record | None = None
        self.opened: float | None = None
        self._cond = threading.Condition()

    def enter(self, record: "Record", stopping: threading.Event) -> Any | None:
        """``outcome`` for the request the gate throttles, None for the others (once it is open)."""
        with self._cond:
            if self.opened is not None:
                return None
            self.waiting += 1
            if self.fired is None and self.waiting >= self.senders:
                self.fired = record
                self._cond.notify_all()
                return self.outcome
            deadline = time.monotonic() + self.timeout_s
            while self.fired is None and not stopping.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    self.fired = record
                    self._cond.notify_all()
                    return self.outcome
                self._cond.wait(min(left, 0.1))
        while self.opened is None and not stopping.is_set():
            if self.release():
                with self._cond:
                    self.opened = self.opened or time.monotonic()
                break
            stopping.wait(self.poll_s)
        return None


@dataclass(kw_only=True)
class Record:
    """One request a fake received; each fake adds what it read from the request and its answer."""

    seq: int = 0  # 1 for the first request the fake saw
    at: float = 0.0  # time.monotonic() on arrival
    done: float | None = None  # time.monotonic() when its answer was decided (None until then)
    in_flight: int = 0  # requests being handled when it arrived, itself included


class FakeService:
    """A fake service on 127.0.0.1. Subclasses set ``Handler`` (a FakeHandler subclass)."""

    Handler: type[FakeHandler]
    name = "fake"

    def __init__(self, *, latency_s: float = 0.0, requests_per_s: float | None = None,
                 chars_per_min: float | None = None, burst_s: float = 1.0, host: str = "127.0.0.1"):
        self.latency_s = latency_s
        self.quota = RateLimit(requests_per_s, chars_per_min, burst_s) if requests_per_s or chars_per_min else None
        self.host = host
        self.stopping = threading.Event()  # set by stop(): wakes every request waiting in pause()
        self._lock = threading.Lock()
        self._script: deque[Any] = deque()
        self._records: list[Record] = []
        self._seq = 0
        self._in_flight = 0
        self._max_in_flight = 0
        self.gate: Gate | None = None  # set by a test: see Gate
        self._server: _Server | None = None
        self._serve_thread: threading.Thread | None = None
        self.port = 0  # the HTTP port, once started (and still after stop: where it was)

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self):
        if self._server is not None:
            raise RuntimeError("already started")
        self.stopping.clear()
        self._server = _Server((self.host, 0), self.Handler, self)
        self.port = self._server.server_address[1]
        self._serve_thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                              name=f"{self.name}-http", daemon=True)
        self._serve_thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake waiting requests, cut open connections and join every thread."""
        self.stopping.set()
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()  # no more connections accepted
        server.close_connections()  # handlers waiting on an idle keep-alive connection end
        server.server_close()  # joins the handler threads
        self._serve_thread.join()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def threads(self) -> list[threading.Thread]:
        """Threads of this fake's HTTP server still alive (none after ``stop``)."""
        serving = [self._serve_thread] if self._serve_thread and self._serve_thread.is_alive() else []
        server = self._server
        return serving + (server.live_threads() if server is not None else [])

    # -- scripting --------------------------------------------------------------------------------

    def script(self, *outcomes: Any, times: int = 1) -> None:
        """Queue ``outcomes`` (``times`` rounds of them) for the next requests, one each, in order."""
        with self._lock:
            self._script.extend(list(outcomes) * times)

    def next_scripted(self, record: "Record | None" = None) -> Any | None:
        """The outcome for this request: the gate's (``gate``, given the request's ``record``), else the
        one queued for it, if any (taken off the queue)."""
        gate = self.gate
        if gate is not None and record is not None and (outcome := gate.enter(record, self.stopping)) is not None:
            return outcome
        with self._lock:
            return self._script.popleft() if self._script else None

    @property
    def pending_script(self) -> int:
        with self._lock:
            return len(self._script)

    # -- recording --------------------------------------------------------------------------------

    @contextmanager
    def track(self, record: R) -> Iterator[R]:
        """Record a request for as long as it is handled: numbered, timed, counted in flight."""
        with self._lock:
            self._seq += 1
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            record.seq, record.at, record.in_flight = self._seq, time.monotonic(), self._in_flight
            self._records.append(record)
        try:
            yield record
        finally:
            record.done = time.monotonic()
            with self._lock:
                self._in_flight -= 1

    @property
    def requests(self) -> list:
        with self._lock:
            return list(self._records)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._records)

    def count_where(self, **fields: Any) -> int:
        """How many requests have these values, e.g. ``count_where(status="OK")``."""
        return sum(1 for r in self.requests if all(getattr(r, k) == v for k, v in fields.items()))

    @property
    def max_in_flight(self) -> int:
        """The most requests the fake was handling at once."""
        with self._lock:
            return self._max_in_flight

    def reset(self) -> None:
        """Forget the recorded requests and any pending script."""
        with self._lock:
            self._records.clear()
            self._script.clear()
            self._max_in_flight = self._in_flight

    # -- time -------------------------------------------------------------------------------------

    def pause(self, seconds: float, alive: Callable[[], bool] | None = None) -> None:
        """Wait ``seconds``; cut short by ``stop()``, or when ``alive()`` says the client has gone."""
        end = time.monotonic() + seconds
        while not self.stopping.is_set() and (alive is None or alive()):
            left = end - time.monotonic()
            if left <= 0:
                return
            self.stopping.wait(left if alive is None else min(left, 0.02))


def fill(template: str, values: dict[str, str]) -> str:
    """``template`` with ``{name}`` taken from ``values`` (empty when missing): a server echoing what
    it was sent, e.g. ``"{authorization}"``."""
    return template.format_map(_Blank(values))


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return ""


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread: nothing outlives stop()
    block_on_close = True
    request_queue_size = 512  # listen backlog: many clients connect at once (the default 5 drops SYNs)

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], fake: FakeService):
        self.fake = fake
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._handlers: set[threading.Thread] = set()
        super().__init__(address, handler)

    def process_request(self, request, client_address) -> None:
        with self._lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        with self._lock:
            self._handlers.add(threading.current_thread())
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._connections.discard(request)
                self._handlers.discard(threading.current_thread())

    def close_connections(self) -> None:
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def live_threads(self) -> list[threading.Thread]:
        with self._lock:
            return [t for t in self._handlers if t.is_alive()]

    def handle_error(self, request, client_address) -> None:
        pass  # a client that gave up (timeout) before its answer: nothing to report


class FakeHandler(BaseHTTPRequestHandler):
    """One connection to a fake: keep-alive HTTP/1.1, quiet. Subclasses define ``do_POST``."""

    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, as clients of the real services use them
    timeout = 30  # an idle keep-alive connection is closed after this
    content_type = "application/json"

    @property
    def fake(self) -> Any:
        return self.server.fake

    def body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", self.content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            self.close_connection = True  # the client gave up (timeout) and closed its end

    def log_message(self, format: str, *args: Any) -> None:
        pass
