"""A wire-level fake of Google Cloud Translation v3 ``translateText``, over REST and gRPC.

Both servers listen on 127.0.0.1 (ports chosen by the OS) in threads of this process; what they
share with the other fakes (server, script, records, quota) is in base.py::

    with FakeGoogleTranslate(latency_s=0.01, requests_per_s=50) as fake:
        options = {"project": "p", "credentials": "anonymous", "transport": "rest",
                   "endpoint": fake.endpoint("rest")}
        ...
        fake.script(Failure.unavailable(), times=2)     # the next two requests fail, then it answers
        assert fake.count == 3 and fake.count_where(status="OK") == 1

- REST: ``POST /v3/projects/{p}[/locations/{l}]:translateText``, JSON in and out as the real API
  (camelCase fields; errors as ``{"error": {"code", "message", "status", "details"}}``).
- gRPC: ``google.cloud.translation.v3.TranslationService/TranslateText`` with the library's own
  proto-plus messages; errors carry google.rpc.Status details (RetryInfo, ErrorInfo).

Every request is recorded (``requests``: texts, languages, model, headers or metadata, outcome).
It translates deterministically (``translation(text, tgt)``: the target code, a colon, the text
reversed), names the model in the response when one was asked for (with the project as a number,
as Google does), and rejects with INVALID_ARGUMENT / 400 what the real API rejects: more than
``max_strings`` strings or ``max_codepoints`` code points, a bad parent or model, no target.

Failures: ``script(...)`` queues Failure outcomes, one per request, taken before anything else;
``poison`` texts make any request holding them INVALID_ARGUMENT (a permanent, per-text fault).
Quota: ``requests_per_s`` and ``chars_per_min`` are token buckets shared by all clients (capacity
``burst_s`` seconds' worth); a request over quota gets RESOURCE_EXHAUSTED / 429 with RetryInfo and
a Retry-After header and costs nothing. ``latency_s`` is added to every request. All of it is
thread-safe; ``stop()`` ends every thread the fake started (gRPC's included), waiting requests too.
"""

from __future__ import annotations

import json
import math
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import grpc
from google.cloud.translate_v3 import TranslateTextRequest, TranslateTextResponse, Translation
from google.protobuf import any_pb2, duration_pb2, json_format
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from .base import FakeHandler, FakeService, Record, fill

SERVICE = "google.cloud.translation.v3.TranslationService"
METHOD = "TranslateText"
MAX_STRINGS = 1024
MAX_CODEPOINTS = 30_000

# google.rpc.Code name -> HTTP status, as Google's HTTP mapping has it.
HTTP_STATUS = {
    "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400, "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403, "NOT_FOUND": 404, "ABORTED": 409, "ALREADY_EXISTS": 409,
    "RESOURCE_EXHAUSTED": 429, "CANCELLED": 499, "INTERNAL": 500, "UNKNOWN": 500, "DATA_LOSS": 500,
    "UNIMPLEMENTED": 501, "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504,
}
_PATH = re.compile(r"^/v3/(projects/[^/:]+(?:/locations/[^/:]+)?):translateText$")


@dataclass(frozen=True)
class Failure:
    """One scripted outcome. ``message`` may name request headers, e.g. ``"{authorization}"``
    (lower-case names; gRPC metadata alike), to play a server that echoes what it was sent."""

    status: str = "UNAVAILABLE"          # a google.rpc.Code name
    message: str = "The service is currently unavailable."
    retry_delay_s: float | None = None   # google.rpc.RetryInfo.retry_delay
    retry_after: str | None = None       # REST Retry-After header, verbatim
    http_status: int | None = None       # REST status other than the mapping's (e.g. 502)
    reason: str | None = None            # google.rpc.ErrorInfo.reason
    delay_s: float = 0.0                 # wait this long before answering
    succeed: bool = False                # then answer normally (a slow success)

    @classmethod
    def throttled(cls, retry_delay_s: float | None = 1.0, retry_after: str | None = None) -> "Failure":
        return cls("RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'v3 general model characters' and "
                   "limit 'v3 general model characters per minute per project'", retry_delay_s=retry_delay_s,
                   retry_after=retry_after, reason="RATE_LIMIT_EXCEEDED")

    @classmethod
    def internal(cls) -> "Failure":
        return cls("INTERNAL", "Internal error encountered.")

    @classmethod
    def unavailable(cls) -> "Failure":
        return cls("UNAVAILABLE", "The service is currently unavailable.")

    @classmethod
    def invalid(cls, message: str = "Invalid request.") -> "Failure":
        return cls("INVALID_ARGUMENT", message)

    @classmethod
    def slow(cls, delay_s: float) -> "Failure":
        """Answer correctly, but only after ``delay_s`` (to run into the client's timeout)."""
        return cls("OK", "", delay_s=delay_s, succeed=True)


@dataclass
class Recorded(Record):
    """A request (``seq``, ``at``, ``done``, ``in_flight``: see base.Record) and its outcome."""

    transport: str                # "rest" or "grpc"
    parent: str
    contents: list[str]
    source: str
    target: str
    model: str
    mime_type: str
    headers: dict[str, str]       # lower-case names (HTTP headers or gRPC metadata)
    status: str = "PENDING"       # "OK" or the google.rpc.Code name answered

    @property
    def codepoints(self) -> int:
        return sum(len(t) for t in self.contents)


class FakeError(Exception):
    def __init__(self, status: str, message: str, *, retry_delay_s: float | None = None,
                 retry_after: str | None = None, http_status: int | None = None, reason: str | None = None):
        super().__init__(message)
        self.status, self.message = status, message
        self.retry_delay_s, self.retry_after = retry_delay_s, retry_after
        self.http_status = http_status or HTTP_STATUS.get(status, 500)
        self.reason = reason


class _RestHandler(FakeHandler):
    fake: FakeGoogleTranslate
    content_type = "application/json; charset=UTF-8"

    def do_POST(self) -> None:
        body = self.body()
        path = self.path.split("?", 1)[0]
        match = _PATH.match(path)
        if match is None:
            return self._send(404, {"error": {"code": 404, "message": f"Not found: {path}", "status": "NOT_FOUND"}})
        message = TranslateTextRequest()
        try:
            json_format.Parse(body or b"{}", TranslateTextRequest.pb(message))
        except json_format.ParseError as exc:
            return self._send(400, _error_json(FakeError("INVALID_ARGUMENT", f"Invalid JSON payload received. {exc}")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = Recorded("rest", match.group(1), list(message.contents), message.source_language_code,
                          message.target_language_code, message.model, message.mime_type, headers)
        try:
            response = self.fake._translate(record)
        except FakeError as exc:
            extra = {"Retry-After": exc.retry_after} if exc.retry_after is not None else {}
            return self._send(exc.http_status, _error_json(exc), extra)
        self._send(200, json.loads(json_format.MessageToJson(TranslateTextResponse.pb(response))))

    def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        self.reply(status, json.dumps(payload).encode(), headers)


class FakeGoogleTranslate(FakeService):
    name = "fake-google"
    Handler = _RestHandler

    def __init__(self, *, latency_s: float = 0.0, requests_per_s: float | None = None,
                 chars_per_min: float | None = None, burst_s: float = 1.0, max_strings: int = MAX_STRINGS,
                 max_codepoints: int = MAX_CODEPOINTS, poison: tuple[str, ...] = (),
                 project_number: str = "123456789012", workers: int = 64):
        super().__init__(latency_s=latency_s, requests_per_s=requests_per_s, chars_per_min=chars_per_min,
                         burst_s=burst_s)
        self.max_strings, self.max_codepoints = max_strings, max_codepoints
        self.poison = frozenset(poison)
        self.project_number = project_number
        self.workers = workers
        self._grpc: grpc.Server | None = None
        self._grpc_pool: ThreadPoolExecutor | None = None
        self.grpc_port = 0

    # --- control ---------------------------------------------------------------------------

    @staticmethod
    def translation(text: str, tgt: str) -> str:
        return f"{tgt}:{text[::-1]}"

    def endpoint(self, transport: str) -> str:
        """What a system's ``options.endpoint`` should be to reach this fake over ``transport``."""
        return self.url if transport == "rest" else f"http://{self.host}:{self.grpc_port}"

    @property
    def rest_port(self) -> int:
        return self.port

    def stats(self) -> dict[str, float]:
        """Requests per outcome, code points translated, and the span (s) of the successful answers."""
        requests = self.requests
        out: dict[str, float] = {"requests": len(requests)}
        for r in requests:
            out[r.status] = out.get(r.status, 0) + 1
        ok = [r for r in requests if r.status == "OK"]
        out["codepoints_ok"] = sum(r.codepoints for r in ok)
        out["span_s"] = (max(r.done for r in ok) - min(r.done for r in ok)) if ok else 0.0
        return out

    def start(self) -> "FakeGoogleTranslate":
        super().start()  # REST
        self._grpc_pool = ThreadPoolExecutor(self.workers, thread_name_prefix="fake-google-grpc")
        self._grpc = grpc.server(self._grpc_pool)
        handler = grpc.unary_unary_rpc_method_handler(
            self._grpc_translate, request_deserializer=TranslateTextRequest.deserialize,
            response_serializer=TranslateTextResponse.serialize)
        self._grpc.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {METHOD: handler}),))
        self.grpc_port = self._grpc.add_insecure_port(f"{self.host}:0")
        self._grpc.start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # wakes every request waiting on latency or a slow failure
        if self._grpc is not None:
            self._grpc.stop(grace=None).wait()
            self._grpc = None
        if self._grpc_pool is not None:
            self._grpc_pool.shutdown(wait=True)
            self._grpc_pool = None
        super().stop()  # REST

    # --- the service ----------------------------------------------------------------------

    def _translate(self, record: Recorded, alive=None) -> TranslateTextResponse:
        with self.track(record):
            try:
                response = self._answer(record, alive)
            except FakeError as exc:
                record.status = exc.status
                raise
            record.status = "OK"
            return response

    def _answer(self, record: Recorded, alive) -> TranslateTextResponse:
        failure = self.next_scripted()
        if self.latency_s:
            self.pause(self.latency_s, alive)
        if failure is not None:
            self.pause(failure.delay_s, alive)
            if not failure.succeed:
                raise FakeError(failure.status, fill(failure.message, record.headers),
                                retry_delay_s=failure.retry_delay_s, retry_after=failure.retry_after,
                                http_status=failure.http_status, reason=failure.reason)
        self._validate(record)
        if self.quota is not None:
            wait = self.quota.take(record.codepoints)
            if wait > 0:
                raise FakeError("RESOURCE_EXHAUSTED", "Quota exceeded (fake quota).", retry_delay_s=wait,
                                retry_after=str(math.ceil(wait)), reason="RATE_LIMIT_EXCEEDED")
        model = re.sub(r"^projects/[^/]+/", f"projects/{self.project_number}/", record.model)
        return TranslateTextResponse(translations=[
            Translation(translated_text=self.translation(t, record.target), model=model)
            for t in record.contents])

    def _validate(self, r: Recorded) -> None:
        parent = re.fullmatch(r"projects/([^/]+)(?:/locations/([^/]+))?", r.parent)
        if parent is None:
            raise FakeError("INVALID_ARGUMENT", f"Invalid resource name {r.parent!r}.")
        if not r.contents:
            raise FakeError("INVALID_ARGUMENT", "Empty contents.")
        if len(r.contents) > self.max_strings:
            raise FakeError("INVALID_ARGUMENT", f"Number of strings in contents: {len(r.contents)} exceeds "
                                                f"the maximum of {self.max_strings}.")
        if r.codepoints > self.max_codepoints:
            raise FakeError("INVALID_ARGUMENT", f"Text is too long: {r.codepoints} code points exceed the "
                                                f"maximum of {self.max_codepoints}.")
        if not r.target:
            raise FakeError("INVALID_ARGUMENT", "Target language is required.")
        if r.mime_type not in ("", "text/plain", "text/html"):
            raise FakeError("INVALID_ARGUMENT", f"Unsupported mime type {r.mime_type!r}.")
        if r.model:
            location = parent.group(2) or "global"
            if not r.model.startswith(f"projects/{parent.group(1)}/locations/{location}/models/"):
                raise FakeError("INVALID_ARGUMENT", f"Model {r.model!r} is not in {r.parent!r}.")
        bad = self.poison & set(r.contents)
        if bad:
            raise FakeError("INVALID_ARGUMENT", f"Invalid text: {sorted(bad)[0]!r}.")

    def _grpc_translate(self, request: TranslateTextRequest, context: grpc.ServicerContext) -> TranslateTextResponse:
        headers = {k.lower(): v if isinstance(v, str) else v.decode("latin-1")
                   for k, v in context.invocation_metadata()}
        record = Recorded("grpc", request.parent, list(request.contents), request.source_language_code,
                          request.target_language_code, request.model, request.mime_type, headers)
        try:
            return self._translate(record, alive=context.is_active)
        except FakeError as exc:
            context.abort_with_status(rpc_status.to_status(_status_proto(exc)))
            raise  # not reached: abort raises


def _status_proto(exc: FakeError) -> status_pb2.Status:
    details = []
    if exc.reason:
        info = any_pb2.Any()
        info.Pack(error_details_pb2.ErrorInfo(reason=exc.reason, domain="translate.googleapis.com"))
        details.append(info)
    if exc.retry_delay_s is not None:
        delay = duration_pb2.Duration()
        delay.FromNanoseconds(int(exc.retry_delay_s * 1e9))
        retry = any_pb2.Any()
        retry.Pack(error_details_pb2.RetryInfo(retry_delay=delay))
        details.append(retry)
    return status_pb2.Status(code=code_pb2.Code.Value(exc.status), message=exc.message, details=details)


def _error_json(exc: FakeError) -> dict:
    details: list[dict] = []
    if exc.reason:
        details.append({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": exc.reason,
                        "domain": "translate.googleapis.com"})
    if exc.retry_delay_s is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": f"{exc.retry_delay_s:.3f}s"})
    error: dict[str, Any] = {"code": exc.http_status, "message": exc.message, "status": exc.status}
    if details:
        error["details"] = details
    return {"error": error}
