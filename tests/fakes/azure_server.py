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
- the target's ``gender`` (female, male, neutral; 400 for anything else), once ``genders(...)`` is
  called: "my friend" is then rendered with a gendered word of the target language (amigo/amiga/
  amigue, amico/amica/amicə, ami/amie/ami·e, Freund/Freundin/Freund_in), the requested gender for
  a given share of the texts (``honour``: 0.9 honours 90 %, 0 ignores the request) and the fake's own
  choice otherwise (``unasked``: the gender of the English pronoun, or a fixed gender); which texts
  were honoured is recorded (``honoured``), so a test can count them by hand;
- checks ``Ocp-Apim-Subscription-Key`` (and ``Ocp-Apim-Subscription-Region`` when ``region`` is
  set): 401 otherwise;
- enforces the real per-request limits (1,000 elements, 50,000 characters in all, counted per
  target language): 400 otherwise, so a client that packs badly fails loudly;
- reports the model family in ``X-MT-System`` (``mt_system``: "Team", the general model, unless a
  test sets another, e.g. "Custom", to play a model swap) and the characters billed in
  ``X-Metered-Usage`` and in each translation's ``sourceCharacters``;
- records every request (``requests``: texts, languages, headers, the status it got);
- plays a script of failures, one per request, before normal service (``script(Failure(...))``, or
  ``fail``, ``fail_times``, ``throttle``, ``slow``);
- a quota (``requests_per_s``, ``chars_per_min``, ``burst_s``): token buckets shared by all clients;
  a request over it gets 429 with ``Retry-After`` (when the tokens will be there) and costs nothing;
  ``latency_s`` is added to every admitted request (the service's own time). Both are thread-safe,
  and ``stats()`` says what was admitted and refused, and when, for throughput benchmarks.

Use it as a context manager (or ``start()``/``stop()``); stopping closes every connection and joins
every thread it started. The server, script, records and quota are base.py's::

    with FakeAzureTranslator(key="k" * 32, region="westeurope") as fake:
        options = {"endpoint": fake.endpoint}   # a system's options.endpoint
        ...
        assert fake.count == 3

Only the standard library is used, so benchmarks can import it too.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Iterable
from urllib.parse import parse_qs, urlsplit

from .base import Failure, FakeHandler, FakeService, Record

MAX_ITEMS = 1_000  # elements per translate request
MAX_CHARS = 50_000  # characters per request, summed over elements and target languages
API_VERSIONS = ("3.0", "2025-10-01-preview", "2026-06-06")
GENDERS = ("female", "male", "neutral")
# "my friend" in each target language, per gender, as the otsc-friend-* detectors read it (German has
# no neutral word they know: Freund_in reads as unknown)
FRIEND_WORDS = {
    "es": {"male": "amigo", "female": "amiga", "neutral": "amigue"},
    "it": {"male": "amico", "female": "amica", "neutral": "amicə"},
    "fr": {"male": "ami", "female": "amie", "neutral": "ami·e"},
    "de": {"male": "Freund", "female": "Freundin", "neutral": "Freund_in"},
}
_FRIEND = re.compile(r"\bFRIEND\b")
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


@dataclass
class RecordedRequest(Record):
    """A request (``seq``, ``at``, ``done``, ``in_flight``: see base.Record) and its answer."""

    method: str
    path: str
    api_version: str | None
    headers: dict[str, str]  # as sent
    texts: list[str] = field(default_factory=list)
    source: str | None = None
    targets: list[str] = field(default_factory=list)
    category: str | None = None
    text_type: str | None = None
    gender: str | None = None  # the gender the request's target asked for (2026-06-06 shape)
    body: Any = None
    status: int = 0  # the status the fake answered (0 until it has)


@dataclass(frozen=True)
class Genders:
    """How the fake renders "my friend" (``FakeAzureTranslator.genders``)."""

    honour: float = 1.0  # share of texts whose requested gender is used
    unasked: str = "source"  # the fake's own choice: "source" (the English pronoun's gender) or a gender

    def own(self, text: str) -> str:
        if self.unasked != "source":
            return self.unasked
        return "female" if re.search(r"\b(her|she)\b", text, re.IGNORECASE) else "male"

    def honours(self, text: str, to: str, gender: str) -> bool:
        """Whether this text's request is honoured: a fixed draw per (text, language, gender)."""
        digest = hashlib.sha256(f"{to}|{gender}|{text}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.honour


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


class _HTTPError(Exception):
    def __init__(self, status: int, code: int | None = None, message: str | None = None,
                 retry_after: float | None = None):
        self.status = status
        self.code = code if code is not None else status * 1000
        self.message = message or MESSAGES.get(self.code) or MESSAGES.get(status * 1000, "Error.")
        self.retry_after = retry_after


class _Handler(FakeHandler):
    content_type = "application/json; charset=utf-8"

    def do_POST(self):
        self.fake._handle(self)

    do_GET = do_POST


class FakeAzureTranslator(FakeService):
    """The fake service. All arguments are keyword-only; see the module docstring."""

    name = "fake-azure-translator"
    Handler = _Handler

    def __init__(self, *, key: str = "fake-azure-key-0123456789abcdef", region: str | None = "westeurope",
                 max_items: int = MAX_ITEMS, max_chars: int = MAX_CHARS,
                 requests_per_s: float | None = None, chars_per_min: float | None = None,
                 burst_s: float = 1.0, latency_s: float = 0.0, integer_retry_after: bool = True,
                 echo_key_in_errors: bool = False, host: str = "127.0.0.1"):
        super().__init__(latency_s=latency_s, requests_per_s=requests_per_s, chars_per_min=chars_per_min,
                         burst_s=burst_s, host=host)
        self.key = key
        self.region = region
        self.max_items = max_items
        self.max_chars = max_chars
        self.integer_retry_after = integer_retry_after  # Retry-After in whole seconds, as HTTP says
        self.echo_key_in_errors = echo_key_in_errors  # a careless server: error text repeats the key
        self._stats = QuotaStats()
        self._genders: Genders | None = None
        self.mt_system = "Team"  # X-MT-System of successful answers: set "Custom" to play a model swap
        self.honoured: set[tuple[str, str, str]] = set()  # (target language, gender, text) rendered as asked

    @property
    def endpoint(self) -> str:
        """What a system's ``options.endpoint`` should be to use this fake."""
        return self.url

    # -- scripting and inspection -----------------------------------------------------------------

    def script(self, *failures: Failure | None, times: int = 1) -> None:
        """Queue answers for the next requests, in order; None means "serve normally"."""
        super().script(*(f if f is not None else Failure() for f in failures), times=times)

    def fail(self, status: int, *, code: int | None = None, message: str | None = None,
             retry_after: float | None = None, times: int = 1) -> None:
        self.script(Failure(status=status, code=code, message=message, retry_after=retry_after), times=times)

    def fail_times(self, n: int, status: int = 500) -> None:
        """The next ``n`` requests fail with ``status``; the one after succeeds."""
        self.fail(status, times=n)

    def throttle(self, retry_after: float | None = 1, *, times: int = 1) -> None:
        """The next request(s) get 429 with Retry-After."""
        self.fail(429, code=429001, retry_after=retry_after, times=times)

    def slow(self, delay_s: float, *, times: int = 1) -> None:
        """The next request(s) answer only after ``delay_s`` (to trip a client's timeout)."""
        self.script(Failure(delay_s=delay_s), times=times)

    def genders(self, honour: float = 1.0, unasked: str = "source") -> None:
        """Render "my friend" with a gendered word: the requested gender for the share ``honour`` of
        texts (a fixed draw per text, language and gender; 0: the request is ignored), else the fake's
        own choice, ``unasked``: "source" (female for a source with her/she, else male) or a gender."""
        if not 0 <= honour <= 1 or unasked not in ("source", *GENDERS):
            raise ValueError("honour is a share in [0, 1]; unasked is 'source' or a gender")
        with self._lock:
            self._genders = Genders(honour, unasked)

    def stats(self) -> QuotaStats:
        with self._lock:
            s = self._stats
            return QuotaStats(s.accepted_requests, s.accepted_chars, s.throttled, s.first_at, s.last_at,
                              list(s.accepted_at))

    def reset(self) -> None:
        """Forget recorded requests, statistics and any pending script."""
        super().reset()
        with self._lock:
            self._stats = QuotaStats()
            self.honoured = set()

    # -- the service ------------------------------------------------------------------------------

    def _handle(self, handler: _Handler) -> None:
        url = urlsplit(handler.path)
        query = parse_qs(url.query, keep_blank_values=True)
        raw = handler.body()
        record = RecordedRequest(handler.command, url.path, _one(query, "api-version"), dict(handler.headers.items()))
        with self.track(record):
            scripted = self.next_scripted()
            try:
                if scripted is not None and scripted.delay_s:
                    self.pause(scripted.delay_s)
                status, body = self._serve(handler, url.path, query, raw, record, scripted)
                extra: dict[str, str] = {"X-MT-System": self.mt_system,
                                         "X-Metered-Usage": str(sum(len(t) for t in record.texts) * len(record.targets))}
            except _HTTPError as err:
                message = err.message
                if self.echo_key_in_errors:
                    message += f" (received {handler.headers.get('Ocp-Apim-Subscription-Key')})"
                status, body = err.status, {"error": {"code": err.code, "message": message}}
                extra = {}
                if err.retry_after is not None:
                    extra["Retry-After"] = self._format_retry_after(err.retry_after)
            record.status = status
        extra["X-RequestId"] = f"fake-{record.seq}"
        if self.stopping.is_set():
            handler.close_connection = True
            return
        handler.reply(status, json.dumps(body, ensure_ascii=False).encode("utf-8"), extra)

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
            record.gender = self._requested_gender(body)
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
        if self.quota is not None:
            wait = self.quota.take(chars)
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
            self.pause(self.latency_s)  # the service's own time, after admission
        if version == "3.0":
            return 200, [{"translations": [{"text": _translate(t, to), "to": to} for to in targets]} for t in texts]
        return 200, {"value": [{"translations": [{"language": to, "text": self._render(t, to, record.gender),
                                                  "sourceCharacters": len(t)} for to in targets]} for t in texts]}

    @staticmethod
    def _requested_gender(body) -> str | None:
        genders = {t.get("gender") for item in body["inputs"] for t in item["targets"]}
        if len(genders) > 1:
            raise _HTTPError(400, 400000, "This fake expects one gender per request.")
        gender = next(iter(genders))
        if gender is not None and gender not in GENDERS:
            raise _HTTPError(400, 400000, f"The gender {gender!r} is not valid (female, male or neutral).")
        return gender

    def _render(self, text: str, to: str, gender: str | None) -> str:
        """The translation: ``_translate``, with "my friend" gendered once ``genders`` was called."""
        plain = _translate(text, to)
        with self._lock:
            genders = self._genders
        if genders is None or to not in FRIEND_WORDS or not _FRIEND.search(plain):
            return plain
        chosen = genders.own(text)
        if gender is not None and genders.honours(text, to, gender):
            chosen = gender
            with self._lock:
                self.honoured.add((to, gender, text))
        return _FRIEND.sub(FRIEND_WORDS[to][chosen], plain)

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
