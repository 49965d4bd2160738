"""A wire-level fake of the Azure AI Translator text API, for tests and benchmarks.

It listens on 127.0.0.1 (a free port) and answers ``POST .../translate`` the way the service does,
in both request shapes the service accepts:

- ``api-version=3.0``: ``?from=..&to=..[&to=..][&category=..][&textType=..]``, body
  ``[{"Text": ...}, ...]``, response ``[{"translations": [{"text": ..., "to": ...}]}, ...]``;
- ``api-version=2026-06-06`` (and ``2025-10-01-preview``; what azure-ai-translation-text 2.x
  sends): body ``{"inputs": [{"text", "language", "textType", "targets": [{"language",
  "deploymentName", ...}]}]}``, response ``{"value": [{"translations": [{"language", "text",
  "sourceCharacters"}]}]}``.

Errors use the service's JSON shape, ``{"error": {"code": 400077, "message": "..."}}``, with its
numeric codes (HTTP status * 1000 + detail). What it does:

- translates deterministically: ``"<to>:" + text.upper()``;
- checks ``Ocp-Apim-Subscription-Key`` (and ``Ocp-Apim-Subscription-Region`` when ``region`` is
  set): 401 otherwise;
- enforces the real per-request limits (1,000 elements, 50,000 characters in all, counted per
  target language): 400 otherwise, so a client that packs badly fails loudly;
- records every request (``requests``: texts, languages, headers, the status it got);
- plays a script of failures, one per request, before normal service (``fail``, ``fail_times``,
  ``throttle``, ``slow``);
- a quota (``requests_per_s``, ``chars_per_min``, ``burst_s``): token buckets shared by all clients;
  a request over it gets 429 with ``Retry-After`` (when the tokens will be there) and costs nothing;
  ``latency_s`` is added to every admitted request (the service's own time). Both are thread-safe,
  and ``stats()`` says what was admitted and refused, and when, for throughput benchmarks.

Use it as a context manager (or ``start()``/``stop()``); stopping closes every connection and joins
every thread it started::

    with FakeAzureTranslator(key="k" * 32, region="westeurope") as fake:
        options = {"endpoint": fake.endpoint}   # a system's options.endpoint
        ...
        assert fake.count == 3

Only the standard library is used, so benchmarks can import it too.
"""

from __future__ import annotations

import json
import math
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable
from urllib.parse import parse_qs, urlsplit

MAX_ITEMS = 1_000  # elements per translate request
MAX_CHARS = 50_000  # characters per request, summed over elements and target languages
API_VERSIONS = ("3.0", "2025-10-01-preview", "2026-06-06")
_LANGUAGE = re.compile(r"^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$")

# Messages as the service words them (code -> message).
MESSAGES = {
    400000: "One of the request inputs is not valid.",
    400021: "The API version parameter is missing or invalid.",
    400035: "The source language is not valid.",
    400036: "The target language is not valid.",
    400050: "The input text is too long.",
    400072: "The array of input text has too many elements.",
    400074: "The body of the request is not valid JSON.",
    400077: "The maximum request size has been exceeded.",
    401000: "The request is not authorized because credentials are missing or invalid.",
    404000: "Resource not found.",
    429000: "The server rejected the request because the client has exceeded request limits.",
    429001: "The server rejected the request because the client has exceeded request limits.",
    500000: "An unexpected error occurred.",
    503000: "Service is temporarily unavailable. Please retry.",
}


@dataclass(frozen=True)
class Failure:
    """One scripted answer instead of a translation.

    ``status`` (with the service's error body, ``code`` defaulting to status * 1000), optionally with
    ``retry_after`` (seconds, sent as the Retry-After header); or, with ``delay_s``, a slow answer:
    the request waits that long, then is served normally (or fails, when ``status`` is set too).
    """

    status: int | None = None
    code: int | None = None
    message: str | None = None
    retry_after: float | None = None
    delay_s: float = 0.0


@dataclass
class RecordedRequest:
    method: str
    path: str
    api_version: str | None
    headers: dict[str, str]
    texts: list[str]
    source: str | None
    targets: list[str]
    category: str | None
    text_type: str | None
    body: Any
    status: int = 0  # the status the fake answered (0 until it has)
    at: float = 0.0  # time.monotonic() on arrival
    seq: int = 0  # 1 for the first request the fake saw
    answered: float = 0.0  # time.monotonic() when its answer was ready (0 until then)


@dataclass
class QuotaStats:
    accepted_requests: int = 0
    accepted_chars: int = 0
    throttled: int = 0
    first_at: float | None = None
    last_at: float | None = None
    accepted_at: list[float] = field(default_factory=list)

    def requests_per_s(self) -> float:
        """Accepted requests per second between the first and the last accepted request."""
        if self.accepted_requests < 2 or self.first_at is None or self.last_at == self.first_at:
            return 0.0
        return (self.accepted_requests - 1) / (self.last_at - self.first_at)


class _Bucket:
    """A token bucket: ``rate`` tokens per second, at most ``capacity`` stored (starts full)."""

    def __init__(self, rate: float, capacity: float, now: float):
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.at = now

    def refill(self, now: float) -> None:
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now

    def wait_for(self, cost: float) -> float:
        """Seconds until ``cost`` tokens may be taken (0: now). A cost over the capacity passes once the
        bucket is full, leaving a debt that later requests wait out, so no request is refused forever."""
        need = min(cost, self.capacity)
        if need <= self.tokens:
            return 0.0
        return (need - self.tokens) / self.rate


class _Quota:
    """Requests/s and characters/min limits across all clients; thread-safe."""

    def __init__(self, requests_per_s: float | None, chars_per_min: float | None, burst_s: float):
        now = time.monotonic()
        self.lock = threading.Lock()
        self.buckets: list[tuple[_Bucket, str]] = []
        if requests_per_s:
            self.buckets.append((_Bucket(requests_per_s, max(1.0, requests_per_s * burst_s), now), "requests"))
        if chars_per_min:
            rate = chars_per_min / 60
            self.buckets.append((_Bucket(rate, max(1.0, rate * burst_s), now), "chars"))

    def take(self, chars: int) -> float:
        """Take one request and ``chars`` characters; 0 if granted, else seconds to wait (nothing taken)."""
        with self.lock:
            now = time.monotonic()
            wait = 0.0
            for bucket, kind in self.buckets:
                bucket.refill(now)
                wait = max(wait, bucket.wait_for(1 if kind == "requests" else chars))
            if wait > 0:
                return wait
            for bucket, kind in self.buckets:
                bucket.tokens -= 1 if kind == "requests" else chars
            return 0.0


class _HTTPError(Exception):
    def __init__(self, status: int, code: int | None = None, message: str | None = None,
                 retry_after: float | None = None):
        self.status = status
        self.code = code if code is not None else status * 1000
        self.message = message or MESSAGES.get(self.code) or MESSAGES.get(status * 1000, "Error.")
        self.retry_after = retry_after


class FakeAzureTranslator:
    """The fake service. All arguments are keyword-only; see the module docstring."""

    def __init__(self, *, key: str = "fake-azure-key-0123456789abcdef", region: str | None = "westeurope",
                 max_items: int = MAX_ITEMS, max_chars: int = MAX_CHARS,
                 requests_per_s: float | None = None, chars_per_min: float | None = None,
                 burst_s: float = 1.0, latency_s: float = 0.0, integer_retry_after: bool = True,
                 echo_key_in_errors: bool = False, host: str = "127.0.0.1"):
        self.key = key
        self.region = region
        self.max_items = max_items
        self.max_chars = max_chars
        self.latency_s = latency_s
        self.integer_retry_after = integer_retry_after  # Retry-After in whole seconds, as HTTP says
        self.echo_key_in_errors = echo_key_in_errors  # a careless server: error text repeats the key
        self.host = host
        self._quota = _Quota(requests_per_s, chars_per_min, burst_s) if (requests_per_s or chars_per_min) else None
        self._lock = threading.Lock()
        self._script: list[Failure] = []
        self._requests: list[RecordedRequest] = []
        self._seq = 0
        self._in_flight = 0
        self.max_in_flight = 0  # the most requests the fake was handling at once
        self._stats = QuotaStats()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._serve_thread: threading.Thread | None = None
        self._conn_threads: set[threading.Thread] = set()
        self._conns: set[socket.socket] = set()

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> "FakeAzureTranslator":
        if self._server is not None:
            raise RuntimeError("already started")
        self._stopping.clear()
        self._server = _Server((self.host, 0), _Handler, self)
        self._serve_thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                              name="fake-azure-translator", daemon=True)
        self._serve_thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake sleeping handlers, close open connections and join every thread."""
        server = self._server
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        assert self._serve_thread is not None
        self._serve_thread.join(5)
        with self._lock:
            threads = list(self._conn_threads)
        for thread in threads:
            thread.join(5)
        self._server = None
        self._serve_thread = None

    def __enter__(self) -> "FakeAzureTranslator":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("not started")
        return self._server.server_address[1]

    @property
    def endpoint(self) -> str:
        """What a system's ``options.endpoint`` should be to use this fake."""
        return f"http://{self.host}:{self.port}"

    @property
    def threads(self) -> list[threading.Thread]:
        """Threads of this fake still alive (empty after ``stop``)."""
        with self._lock:
            conn = [t for t in self._conn_threads if t.is_alive()]
        serve = [self._serve_thread] if self._serve_thread and self._serve_thread.is_alive() else []
        return serve + conn

    # -- scripting and inspection -----------------------------------------------------------------

    def script(self, *failures: Failure | None) -> None:
        """Queue answers for the next requests, in order; None means "serve normally"."""
        with self._lock:
            self._script.extend(f if f is not None else Failure() for f in failures)

    def fail(self, status: int, *, code: int | None = None, message: str | None = None,
             retry_after: float | None = None, times: int = 1) -> None:
        self.script(*[Failure(status=status, code=code, message=message, retry_after=retry_after)] * times)

    def fail_times(self, n: int, status: int = 500) -> None:
        """The next ``n`` requests fail with ``status``; the one after succeeds."""
        self.fail(status, times=n)

    def throttle(self, retry_after: float | None = 1, *, times: int = 1) -> None:
        """The next request(s) get 429 with Retry-After."""
        self.fail(429, code=429001, retry_after=retry_after, times=times)

    def slow(self, delay_s: float, *, times: int = 1) -> None:
        """The next request(s) answer only after ``delay_s`` (to trip a client's timeout)."""
        self.script(*[Failure(delay_s=delay_s)] * times)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def pending_script(self) -> int:
        with self._lock:
            return len(self._script)

    def stats(self) -> QuotaStats:
        with self._lock:
            s = self._stats
            return QuotaStats(s.accepted_requests, s.accepted_chars, s.throttled, s.first_at, s.last_at,
                              list(s.accepted_at))

    def reset(self) -> None:
        """Forget recorded requests, statistics and any pending script."""
        with self._lock:
            self._requests.clear()
            self._script.clear()
            self._stats = QuotaStats()
            self.max_in_flight = 0

    # -- the service ------------------------------------------------------------------------------

    def _handle(self, handler: "_Handler") -> None:
        arrived = time.monotonic()
        url = urlsplit(handler.path)
        query = parse_qs(url.query, keep_blank_values=True)
        headers = {k: v for k, v in handler.headers.items()}
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        record = RecordedRequest(handler.command, url.path, _one(query, "api-version"), headers, [], None, [],
                                 None, None, None, at=arrived)
        with self._lock:
            self._seq += 1
            record.seq = self._seq
            self._requests.append(record)
            scripted = self._script.pop(0) if self._script else None
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if scripted is not None and scripted.delay_s:
                self._sleep(scripted.delay_s)
            status, body = self._serve(handler, url.path, query, raw, record, scripted)
            extra: dict[str, str] = {}
        except _HTTPError as err:
            message = err.message
            if self.echo_key_in_errors:
                message += f" (received {handler.headers.get('Ocp-Apim-Subscription-Key')})"
            status, body = err.status, {"error": {"code": err.code, "message": message}}
            extra = {}
            if err.retry_after is not None:
                extra["Retry-After"] = self._format_retry_after(err.retry_after)
        finally:
            with self._lock:
                self._in_flight -= 1
        extra["X-RequestId"] = f"fake-{record.seq}"
        record.status, record.answered = status, time.monotonic()
        if self._stopping.is_set():
            handler.close_connection = True
            return
        handler.reply(status, body, extra)

    def _serve(self, handler, path, query, raw, record, scripted) -> tuple[int, Any]:
        if handler.command != "POST" or not path.rstrip("/").endswith("/translate"):
            raise _HTTPError(404, 404000)
        version = record.api_version
        if version not in API_VERSIONS:
            raise _HTTPError(400, 400021)
        key = handler.headers.get("Ocp-Apim-Subscription-Key")
        if key != self.key:
            raise _HTTPError(401, 401000)
        if self.region is not None and (handler.headers.get("Ocp-Apim-Subscription-Region") or "") != self.region:
            raise _HTTPError(401, 401000, "The request is not authorized: the region header is missing or "
                                          "does not match the resource's region.")
        try:
            body = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise _HTTPError(400, 400074) from None
        record.body = body
        if version == "3.0":
            texts, source, targets, category, text_type = self._parse_v3(query, body)
        else:
            texts, source, targets, category, text_type = self._parse_v2026(body)
        record.texts, record.source, record.targets = texts, source, targets
        record.category, record.text_type = category, text_type
        if source is not None and not _LANGUAGE.match(source):
            raise _HTTPError(400, 400035)
        if not targets or any(not _LANGUAGE.match(t) for t in targets):
            raise _HTTPError(400, 400036)
        if len(texts) > self.max_items:
            raise _HTTPError(400, 400072)
        if any(len(t) > self.max_chars for t in texts):
            raise _HTTPError(400, 400050)
        chars = sum(len(t) for t in texts) * len(targets)  # len: Unicode code points, as the service counts
        if chars > self.max_chars:
            raise _HTTPError(400, 400077)
        if scripted is not None and scripted.status is not None:
            raise _HTTPError(scripted.status, scripted.code, scripted.message, scripted.retry_after)
        if self._quota is not None:
            wait = self._quota.take(chars)
            if wait > 0:
                with self._lock:
                    self._stats.throttled += 1
                raise _HTTPError(429, 429001, retry_after=wait)
        now = time.monotonic()
        with self._lock:
            s = self._stats
            s.accepted_requests += 1
            s.accepted_chars += chars
            s.first_at = now if s.first_at is None else s.first_at
            s.last_at = now
            s.accepted_at.append(now)
        if self.latency_s:
            self._sleep(self.latency_s)  # the service's own time, after admission
        if version == "3.0":
            return 200, [{"translations": [{"text": _translate(t, to), "to": to} for to in targets]} for t in texts]
        return 200, {"value": [{"translations": [{"language": to, "text": _translate(t, to), "sourceCharacters": len(t)}
                                                 for to in targets]} for t in texts]}

    @staticmethod
    def _parse_v3(query, body):
        if not isinstance(body, list) or not all(isinstance(e, dict) and isinstance(e.get("Text"), str) for e in body):
            raise _HTTPError(400, 400000, "The body must be an array of objects with a Text field.")
        return ([e["Text"] for e in body], _one(query, "from"), query.get("to", []), _one(query, "category"),
                _one(query, "textType"))

    @staticmethod
    def _parse_v2026(body):
        inputs = body.get("inputs") if isinstance(body, dict) else None
        if not isinstance(inputs, list):
            raise _HTTPError(400, 400000, "The body must be an object with an inputs array.")
        texts, sources, target_sets, categories, text_types = [], set(), set(), set(), set()
        for item in inputs:
            if not isinstance(item, dict) or not isinstance(item.get("text"), str):
                raise _HTTPError(400, 400000, "Every input needs a text.")
            targets = item.get("targets")
            if not isinstance(targets, list) or not targets or not all(isinstance(t, dict) for t in targets):
                raise _HTTPError(400, 400036)
            texts.append(item["text"])
            sources.add(item.get("language"))
            text_types.add(item.get("textType"))
            target_sets.add(tuple(str(t.get("language") or "") for t in targets))
            categories.update(t.get("deploymentName") for t in targets)
        if len(target_sets) > 1 or len(sources) > 1:
            # the service allows per-input settings; this fake (and biaseval) sends one pair per request
            raise _HTTPError(400, 400000, "This fake expects one language pair per request.")
        targets = list(next(iter(target_sets))) if target_sets else []
        return (texts, next(iter(sources)) if sources else None, targets,
                next(iter(categories)) if len(categories) == 1 else None,
                next(iter(text_types)) if len(text_types) == 1 else None)

    def _sleep(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def _format_retry_after(self, seconds: float) -> str:
        if self.integer_retry_after:
            return str(max(1, math.ceil(seconds)))
        return f"{seconds:.3f}"


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


def _translate(text: str, to: str) -> str:
    return f"{to}:{text.upper()}"


def expected(texts: Iterable[str], to: str) -> list[str]:
    """What the fake returns for ``texts`` translated into ``to``."""
    return [_translate(t, to) for t in texts]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # the fake joins its own threads in stop()

    def __init__(self, address, handler, fake: FakeAzureTranslator):
        self.fake = fake
        super().__init__(address, handler)

    def process_request(self, request, client_address):
        fake = self.fake
        thread = threading.Thread(target=self._run, args=(request, client_address), daemon=True,
                                  name="fake-azure-translator-conn")
        with fake._lock:
            fake._conns.add(request)
            fake._conn_threads.add(thread)
        thread.start()

    def _run(self, request, client_address):
        fake = self.fake
        try:
            self.process_request_thread(request, client_address)
        finally:
            with fake._lock:
                fake._conns.discard(request)
                fake._conn_threads.discard(threading.current_thread())

    def handle_error(self, request, client_address):
        pass  # clients that time out and hang up are expected here


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as clients use the real service
    server: _Server
    timeout = 30  # an idle keep-alive connection is closed after this

    def do_POST(self):
        self.server.fake._handle(self)

    do_GET = do_POST

    def reply(self, status: int, body: Any, headers: dict[str, str]) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True  # the client gave up (timeout) and closed its end

    def log_message(self, format: str, *args: Any) -> None:
        pass
