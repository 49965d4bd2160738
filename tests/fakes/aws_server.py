"""A wire-level fake of Amazon Translate's TranslateText, for tests and benchmarks.

It speaks the protocol boto3 uses: ``POST /`` with ``X-Amz-Target:
AWSShineFrontendService_20170701.TranslateText``, ``Content-Type: application/x-amz-json-1.1``, a
SigV4 ``Authorization`` header (checked for shape, never verified) and a JSON body; it answers
``{TranslatedText, SourceLanguageCode, TargetLanguageCode}`` or an AWS JSON error (``__type`` and
``message`` in the body, ``x-amzn-ErrorType`` header).

A translation is ``"<tgt>:" + text.upper()``. Every request is recorded (headers, body, time,
outcome) along with the high-water mark of requests in flight. Scripted responses (``script``) answer
the next requests in order: throttling with Retry-After, 5xx faults, slow answers, any error. A quota
(``requests_per_s``, ``chars_per_min``: token buckets shared by all clients) throttles what goes over
it, and ``latency_s`` is added to every request; both are safe under concurrent clients. The server,
script, records and quota are base.py's.

    with FakeTranslate(latency_s=0.01) as fake:
        options = {"endpoint": fake.endpoint}
        ...
        assert fake.count == 3 and fake.max_in_flight <= 4
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field
from typing import Any

from .base import FakeHandler, FakeService, Record, fill

TARGET = "AWSShineFrontendService_20170701.TranslateText"
CONTENT_TYPE = "application/x-amz-json-1.1"
MAX_TEXT_BYTES = 10_000


@dataclass(frozen=True)
class Response:
    """A scripted answer to one request: an error (``code``) or, with ``code=None``, the translation;
    either after ``delay_s`` seconds. ``message`` may use ``{access_key_id}`` and ``{authorization}``,
    filled in from the request, to act as a server that echoes what it was sent."""

    code: str | None = None
    status: int = 400
    message: str = ""
    retry_after: str | None = None
    delay_s: float = 0.0


def throttle(retry_after: float | str | None = 1, status: int = 400) -> Response:
    """ThrottlingException (HTTP 400, the AWS front end's) or TooManyRequestsException (HTTP 429, the
    one Translate's API model declares), with a Retry-After header unless ``retry_after`` is None."""
    code = "TooManyRequestsException" if status == 429 else "ThrottlingException"
    return Response(code, status, "Rate exceeded", None if retry_after is None else _header_seconds(retry_after))


def server_error(status: int = 500) -> Response:
    """InternalServerException (500) or ServiceUnavailableException (503)."""
    if status == 503:
        return Response("ServiceUnavailableException", 503, "Service is temporarily unavailable")
    return Response("InternalServerException", status, "An internal error occurred")


def slow(seconds: float) -> Response:
    """A correct answer, ``seconds`` late (to trip the client's read timeout)."""
    return Response(delay_s=seconds)


def error(code: str, status: int = 400, message: str = "", retry_after: float | str | None = None) -> Response:
    return Response(code, status, message or code, None if retry_after is None else _header_seconds(retry_after))


@dataclass
class Recorded(Record):
    """One request the fake received (``seq``, ``at``, ``done``, ``in_flight``: see base.Record), and
    how it answered."""

    headers: dict[str, str]  # lower-case names
    body: dict[str, Any] = field(default_factory=dict)
    status: int = 0
    code: str | None = None  # the error code, None for a translation

    @property
    def text(self) -> str | None:
        return self.body.get("Text")

    @property
    def ok(self) -> bool:
        return self.status == 200


class _Handler(FakeHandler):
    content_type = CONTENT_TYPE

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        raw = self.body()
        if self.path != "/":
            status, extra, body = 404, {}, b'{"__type":"UnknownOperationException","message":"not found"}'
        else:
            status, extra, body = self.fake._handle(dict(self.headers.items()), raw)
        self.reply(status, body, {"x-amzn-RequestId": str(uuid.uuid4()), **extra})

    def do_GET(self) -> None:  # noqa: N802
        self.send_error(405)


class FakeTranslate(FakeService):
    """Amazon Translate on 127.0.0.1 (a free port), in a thread; ``start``/``stop`` or ``with``."""

    name = "fake-aws-translate"
    Handler = _Handler

    def __init__(self, *, requests_per_s: float | None = None, chars_per_min: float | None = None,
                 burst_s: float = 1.0, latency_s: float = 0.0, max_bytes: int = MAX_TEXT_BYTES,
                 throttle_status: int = 400, unsupported_pairs: set[tuple[str, str]] = frozenset(),
                 terminologies: set[str] | None = None):
        super().__init__(latency_s=latency_s, requests_per_s=requests_per_s, chars_per_min=chars_per_min,
                         burst_s=burst_s)
        self.max_bytes = max_bytes
        self.throttle_status = throttle_status
        self.unsupported_pairs = set(unsupported_pairs)
        self.terminologies = terminologies  # None: any name is accepted

    @property
    def endpoint(self) -> str:
        return self.url

    # -- scripting and inspection -----------------------------------------------------------------

    def fail_then_succeed(self, times: int, response: Response | None = None) -> None:
        self.script(response or server_error(), times=times)

    @property
    def texts(self) -> list[str | None]:
        return [r.text for r in self.requests]

    def stats(self) -> dict[str, float]:
        """Totals for benchmarks: requests, accepted, throttled, other errors, characters accepted,
        the span from the first request to the last answer, and the most in flight at once."""
        records = self.requests
        accepted = [r for r in records if r.ok]
        throttled = sum(1 for r in records if r.code in ("ThrottlingException", "TooManyRequestsException"))
        span = (max(r.done or r.at for r in records) - min(r.at for r in records)) if records else 0.0
        return {"requests": len(records), "accepted": len(accepted), "throttled": throttled,
                "errors": len(records) - len(accepted) - throttled,
                "chars_accepted": sum(len(r.text or "") for r in accepted), "span_s": span,
                "max_in_flight": self.max_in_flight}

    # -- serving ----------------------------------------------------------------------------------

    def _handle(self, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        """One request in: (status, extra headers, body) out."""
        record = Recorded(headers={k.lower(): v for k, v in headers.items()})
        with self.track(record):
            status, extra, body, code = self._answer(record, raw)
            record.status, record.code = status, code
        return status, extra, body

    def _answer(self, record: Recorded, raw: bytes) -> tuple[int, dict[str, str], bytes, str | None]:
        h = record.headers
        if h.get("x-amz-target") != TARGET:
            return self._error("UnknownOperationException", 400, f"unknown operation {h.get('x-amz-target')!r}")
        if h.get("content-type", "").split(";")[0].strip() != CONTENT_TYPE:
            return self._error("SerializationException", 400, f"expected Content-Type {CONTENT_TYPE}")
        auth = h.get("authorization", "")
        if not auth:
            return self._error("MissingAuthenticationTokenException", 403, "Missing Authentication Token")
        if (not auth.startswith("AWS4-HMAC-SHA256 Credential=") or "SignedHeaders=" not in auth
                or "Signature=" not in auth or "x-amz-date" not in h):
            return self._error("IncompleteSignatureException", 403, "Authorization header is not a SigV4 signature")
        try:
            body = json.loads(raw or b"{}")
            assert isinstance(body, dict)
        except (ValueError, AssertionError):
            return self._error("SerializationException", 400, "body is not a JSON object")
        record.body = body

        scripted = self.next_scripted()
        if scripted is not None and scripted.code is not None:
            self.pause(self.latency_s + scripted.delay_s)
            message = fill(scripted.message, {"access_key_id": _access_key_id(auth), "authorization": auth})
            return self._error(scripted.code, scripted.status, message, retry_after=scripted.retry_after)

        text, src, tgt = body.get("Text"), body.get("SourceLanguageCode"), body.get("TargetLanguageCode")
        missing = [k for k, v in (("text", text), ("sourceLanguageCode", src), ("targetLanguageCode", tgt))
                   if not isinstance(v, str)]
        if missing:
            return self._error("ValidationException", 400, f"{len(missing)} validation error(s) detected: "
                               f"value at '{missing[0]}' failed to satisfy constraint: Member must not be null")
        size = len(text.encode("utf-8"))
        if size > self.max_bytes:
            return self._error("TextSizeLimitExceededException", 400,
                               f"Input text size exceeds limit. Max length of request text allowed is "
                               f"{self.max_bytes} bytes while in this request the text size is {size} bytes")
        if not text:
            return self._error("ValidationException", 400, "1 validation error detected: Value at 'text' "
                               "failed to satisfy constraint: Member must have length greater than or equal to 1")
        for name, code in (("sourceLanguageCode", src), ("targetLanguageCode", tgt)):
            if not 2 <= len(code) <= 5:
                return self._error("ValidationException", 400, f"1 validation error detected: Value '{code}' at "
                                   f"'{name}' failed to satisfy constraint: Member must have length between 2 and 5")
        if (src, tgt) in self.unsupported_pairs:
            return self._error("UnsupportedLanguagePairException", 400,
                               f"Unsupported language pair: {src} to {tgt}",
                               extra={"SourceLanguageCode": src, "TargetLanguageCode": tgt})
        names = body.get("TerminologyNames") or []
        if len(names) > 1:
            return self._error("InvalidRequestException", 400, "only one terminology may be applied")
        unknown = [n for n in names if self.terminologies is not None and n not in self.terminologies]
        if unknown:
            return self._error("ResourceNotFoundException", 404, f"terminology {unknown[0]!r} does not exist")

        wait = self.quota.take(len(text)) if self.quota else 0.0  # a throttled request is answered at once
        if wait > 0:
            code = "TooManyRequestsException" if self.throttle_status == 429 else "ThrottlingException"
            return self._error(code, self.throttle_status, "Rate exceeded", retry_after=_header_seconds(wait))
        self.pause(self.latency_s + (scripted.delay_s if scripted else 0.0))

        out: dict[str, Any] = {"TranslatedText": f"{tgt}:{text.upper()}", "SourceLanguageCode": src,
                               "TargetLanguageCode": tgt}
        if names:
            out["AppliedTerminologies"] = [{"Name": n, "Terms": []} for n in names]
        if body.get("Settings"):
            out["AppliedSettings"] = body["Settings"]
        return 200, {}, json.dumps(out).encode(), None

    @staticmethod
    def _error(code: str, status: int, message: str, retry_after: str | None = None,
               extra: dict[str, Any] | None = None) -> tuple[int, dict[str, str], bytes, str]:
        headers = {"x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazonaws.shine/"}
        if retry_after is not None:
            headers["Retry-After"] = retry_after
        body = {"__type": f"com.amazonaws.shine#{code}", "message": message, **(extra or {})}
        return status, headers, json.dumps(body).encode(), code


def _header_seconds(value: float | str) -> str:
    if isinstance(value, str):
        return value
    return f"{math.ceil(value * 1000) / 1000:g}"


def _access_key_id(authorization: str) -> str:
    try:
        return authorization.split("Credential=", 1)[1].split("/", 1)[0]
    except IndexError:
        return ""
