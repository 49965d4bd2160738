"""A wire-level fake of the DeepL API (text translation), for tests and benchmarks.

It listens on 127.0.0.1 (a free port; give its ``url`` as a system's ``options.server_url``) and
answers what the ``deepl`` SDK sends:

- ``POST /v2/translate`` with a JSON body (what the SDK sends: ``{"text": [...], "target_lang",
  "source_lang", "show_billed_characters": true, "formality", "model_type", "glossary_id",
  "context", "split_sentences", "preserve_formatting"}``) or a form body (the API takes both);
  the answer is ``{"translations": [{"detected_source_language", "text", "billed_characters",
  "model_type_used"}]}`` (``billed_characters`` only when asked, ``model_type_used`` only when a
  ``model_type`` was given, as DeepL does);
- ``GET /v2/usage``: ``{"character_count", "character_limit"}``;
- ``GET /v2/languages?type=source|target``.

What it does:

- translates deterministically (``translate=``, default ``"<TARGET>:" + text.upper()``);
- checks ``Authorization: DeepL-Auth-Key <key>``: 403 otherwise;
- enforces DeepL's limits: 50 texts (400) and a 128 KiB body (413) per request, known language
  codes (``EN``/``PT`` are not targets: 400), formality ``more``/``less`` only for the targets that
  have it (400);
- bills characters (code points of the texts; not the context) against ``character_limit``: a
  request that would go over it gets 456 and bills nothing; ``set_limit`` restores the quota;
- records every request (``requests``: texts, languages, fields, headers, content type, status);
- plays a script of failures, one per request, before normal service (``script(Failure(...))``, or
  ``fail``, ``throttle``, ``quota_exceeded``, ``slow``, ``hang``), and ``faults(every=5)`` injects a
  fault into every fifth request (429 with Retry-After, 500, 503, a request left unanswered);
- a rate quota (``requests_per_s``, ``chars_per_min``): 429 with Retry-After when over it.

Only the standard library is used, so benchmarks can import it too.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs, urlsplit

from .base import Failure, FakeHandler, FakeService, Record

MAX_TEXTS = 50
MAX_BODY = 128 * 1024
SOURCES = ("AR", "BG", "CS", "DA", "DE", "EL", "EN", "ES", "ET", "FI", "FR", "HE", "HU", "ID", "IT", "JA", "KO",
           "LT", "LV", "NB", "NL", "PL", "PT", "RO", "RU", "SK", "SL", "SV", "TH", "TR", "UK", "VI", "ZH")
TARGETS = ("AR", "BG", "CS", "DA", "DE", "EL", "EN-GB", "EN-US", "ES", "ET", "FI", "FR", "HE", "HU", "ID", "IT",
           "JA", "KO", "LT", "LV", "NB", "NL", "PL", "PT-BR", "PT-PT", "RO", "RU", "SK", "SL", "SV", "TH", "TR",
           "UK", "VI", "ZH", "ZH-HANS", "ZH-HANT")
FORMALITY_TARGETS = ("DE", "FR", "IT", "ES", "NL", "PL", "PT-BR", "PT-PT", "JA", "RU")
MODEL_TYPES = {"quality_optimized": "quality_optimized", "prefer_quality_optimized": "quality_optimized",
               "latency_optimized": "latency_optimized"}
FAULTS = ("429", "500", "timeout", "503")


@dataclass
class DeepLRequest(Record):
    """A request (``seq``, ``at``, ``done``, ``in_flight``: see base.Record) and its answer."""

    method: str
    path: str
    headers: dict[str, str]
    content_type: str = ""
    body: Any = None  # the parsed body (JSON object or form fields)
    size: int = 0  # body bytes
    texts: list[str] = field(default_factory=list)
    source_lang: str | None = None
    target_lang: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # every other body field
    status: int = 0  # the status the fake answered (0 until it has; -1: left unanswered)
    fault: str | None = None  # what was injected, if anything


class _HTTPError(Exception):
    def __init__(self, status: int, message: str, retry_after: float | None = None):
        self.status, self.message, self.retry_after = status, message, retry_after


MESSAGES = {400: "Bad request.", 403: "Forbidden.", 413: "Request Entity Too Large", 429: "Too many requests",
            456: "Quota Exceeded", 500: "Internal Server Error", 503: "Service Unavailable"}


class _Handler(FakeHandler):
    def do_POST(self):
        self.fake._handle(self)

    do_GET = do_POST


def translate(text: str, source: str | None, target: str, fields: dict) -> str:
    """The fake's default translation."""
    return f"{target}:{text.upper()}"


class FakeDeepL(FakeService):
    """The fake service. All arguments are keyword-only; see the module docstring."""

    name = "fake-deepl"
    Handler = _Handler

    def __init__(self, *, key: str = "fake-deepl-key-0123456789abcdef:fx", character_limit: int | None = None,
                 translate: Callable[[str, str | None, str, dict], str] = translate,
                 requests_per_s: float | None = None, chars_per_min: float | None = None, burst_s: float = 1.0,
                 latency_s: float = 0.0, echo_key_in_errors: bool = False, host: str = "127.0.0.1"):
        super().__init__(latency_s=latency_s, requests_per_s=requests_per_s, chars_per_min=chars_per_min,
                         burst_s=burst_s, host=host)
        self.key = key
        self.character_limit = character_limit
        self.character_count = 0
        self.translator = translate
        self.echo_key_in_errors = echo_key_in_errors  # a careless server: error text repeats the key
        self._fault_every = 0
        self._fault_counted = 0  # translate requests since faults() was called
        self._fault_kinds: Iterable[str] = ()
        self._fault_hang_s = 0.0

    # -- scripting and inspection -----------------------------------------------------------------

    def script(self, *failures: Failure | None, times: int = 1) -> None:
        """Queue answers for the next requests, in order; None means "serve normally"."""
        super().script(*(f if f is not None else Failure() for f in failures), times=times)

    def fail(self, status: int, *, message: str | None = None, retry_after: float | None = None, times: int = 1):
        self.script(Failure(status=status, message=message, retry_after=retry_after), times=times)

    def throttle(self, retry_after: float | None = 1, *, times: int = 1) -> None:
        self.fail(429, retry_after=retry_after, times=times)

    def quota_exceeded(self, *, times: int = 1) -> None:
        self.fail(456, times=times)

    def slow(self, delay_s: float, *, times: int = 1) -> None:
        self.script(Failure(delay_s=delay_s), times=times)

    def hang(self, hang_s: float, *, times: int = 1) -> None:
        self.script(Failure(hang_s=hang_s), times=times)

    def faults(self, every: int = 5, kinds: Iterable[str] = FAULTS, *, hang_s: float = 3.0) -> None:
        """From now on, every ``every``-th translate request (by arrival) gets the next of ``kinds`` in turn:
        "429" (Retry-After: 1), "500", "503", "timeout" (left unanswered for ``hang_s``, then cut). 0: none."""
        with self._lock:
            self._fault_every, self._fault_kinds, self._fault_hang_s = every, itertools.cycle(tuple(kinds)), hang_s
            self._fault_counted = 0

    def set_limit(self, character_limit: int | None) -> None:
        """A new character limit (None: none), e.g. the quota restored for a new billing period."""
        with self._lock:
            self.character_limit = character_limit

    @property
    def translate_requests(self) -> list[DeepLRequest]:
        return [r for r in self.requests if r.path == "/v2/translate"]

    def count_status(self, status: int) -> int:
        return sum(1 for r in self.translate_requests if r.status == status)

    # -- the service ------------------------------------------------------------------------------

    def _handle(self, handler: _Handler) -> None:
        url = urlsplit(handler.path)
        raw = handler.body()
        record = DeepLRequest(handler.command, url.path, dict(handler.headers.items()),
                              content_type=(handler.headers.get("Content-Type") or "").split(";")[0].strip(),
                              size=len(raw))
        extra: dict[str, str] = {}
        with self.track(record):
            scripted = self.next_scripted() if url.path == "/v2/translate" else None
            scripted = scripted or self._injected(record)
            if scripted is not None and (scripted.delay_s or scripted.hang_s):
                self.pause(scripted.delay_s or scripted.hang_s)
            if scripted is not None and scripted.hang_s:
                record.status = -1
                handler.close_connection = True
                return
            try:
                status, body = self._serve(handler, url, raw, record, scripted)
            except _HTTPError as err:
                message = err.message
                if self.echo_key_in_errors:
                    message += f" (received {handler.headers.get('Authorization')})"
                status, body = err.status, {"message": message}
                if err.retry_after is not None:
                    extra["Retry-After"] = str(max(1, math.ceil(err.retry_after)))
            record.status = status
        if self.stopping.is_set():
            handler.close_connection = True
            return
        handler.reply(status, json.dumps(body, ensure_ascii=False).encode("utf-8"), extra)

    def _injected(self, record: DeepLRequest) -> Failure | None:
        if record.path != "/v2/translate":
            return None
        with self._lock:
            if not self._fault_every:
                return None
            self._fault_counted += 1
            if self._fault_counted % self._fault_every:
                return None
            kind = next(self._fault_kinds)  # type: ignore[call-overload]
        record.fault = kind
        if kind == "timeout":
            return Failure(hang_s=self._fault_hang_s)
        return Failure(status=int(kind), retry_after=1 if kind == "429" else None)

    def _serve(self, handler, url, raw, record, scripted) -> tuple[int, Any]:
        if handler.headers.get("Authorization") != f"DeepL-Auth-Key {self.key}":
            raise _HTTPError(403, "Wrong endpoint" if self._wrong_endpoint(handler) else MESSAGES[403])
        if url.path == "/v2/usage" and handler.command == "GET":
            with self._lock:
                return 200, {"character_count": self.character_count,
                             "character_limit": self.character_limit if self.character_limit is not None else 10**12}
        if url.path == "/v2/languages" and handler.command == "GET":
            asked = {**parse_qs(raw.decode("utf-8", "replace")), **parse_qs(url.query)}  # the SDK sends a form body
            kind = (asked.get("type") or ["source"])[0]
            codes = TARGETS if kind == "target" else SOURCES
            return 200, [{"language": c, "name": c, **({"supports_formality": c in FORMALITY_TARGETS}
                                                       if kind == "target" else {})} for c in codes]
        if url.path != "/v2/translate" or handler.command != "POST":
            raise _HTTPError(404, "Not found")
        if len(raw) > MAX_BODY:
            raise _HTTPError(413, MESSAGES[413])
        body = self._parse(record, raw)
        texts, source, target = body.get("text"), body.get("source_lang"), body.get("target_lang")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise _HTTPError(400, "Parameter 'text' not specified.")
        record.texts, record.source_lang, record.target_lang = texts, source, target
        record.fields = {k: v for k, v in body.items() if k not in ("text", "source_lang", "target_lang")}
        if len(texts) > MAX_TEXTS:
            raise _HTTPError(400, f"Too many texts: at most {MAX_TEXTS} per request.")
        target = str(target or "").upper()
        if target not in TARGETS:
            raise _HTTPError(400, "Value for 'target_lang' not supported.")
        if source is not None and str(source).upper() not in SOURCES:
            raise _HTTPError(400, "Value for 'source_lang' not supported.")
        formality = body.get("formality")
        if formality in ("more", "less") and target not in FORMALITY_TARGETS:
            raise _HTTPError(400, "'formality' is not supported for given 'target_lang'.")
        if body.get("model_type") is not None and body["model_type"] not in MODEL_TYPES:
            raise _HTTPError(400, "Value for 'model_type' not supported.")
        if body.get("glossary_id") is not None and source is None:
            raise _HTTPError(400, "Use of a glossary requires the 'source_lang' parameter to be specified.")
        if scripted is not None and scripted.status is not None:
            raise _HTTPError(scripted.status, scripted.message or MESSAGES.get(scripted.status, "Error."),
                             scripted.retry_after)
        billed = [len(t) for t in texts]  # code points, as DeepL counts
        if self.quota is not None:
            wait = self.quota.take(sum(billed))
            if wait > 0:
                raise _HTTPError(429, MESSAGES[429], retry_after=wait)
        with self._lock:
            if self.character_limit is not None and self.character_count + sum(billed) > self.character_limit:
                raise _HTTPError(456, MESSAGES[456])
            self.character_count += sum(billed)
        if self.latency_s:
            self.pause(self.latency_s)
        show = body.get("show_billed_characters") in (True, "1", "true")
        used = MODEL_TYPES.get(body.get("model_type"))
        out = []
        for text, chars in zip(texts, billed):
            item = {"detected_source_language": str(source or "EN").upper(),
                    "text": self.translator(text, source, target, record.fields)}
            if show:
                item["billed_characters"] = chars
            if used:
                item["model_type_used"] = used
            out.append(item)
        return 200, {"translations": out}

    @staticmethod
    def _parse(record: DeepLRequest, raw: bytes) -> dict:
        try:
            if record.content_type == "application/json":
                body = json.loads(raw.decode("utf-8"))
            else:  # form fields, a repeated "text" for several texts
                form = parse_qs(raw.decode("utf-8"), keep_blank_values=True)
                body = {k: (v if k == "text" else v[0]) for k, v in form.items()}
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise _HTTPError(400, "Invalid request body.") from None
        if not isinstance(body, dict):
            raise _HTTPError(400, "Invalid request body.")
        record.body = body
        return body

    def _wrong_endpoint(self, handler) -> bool:
        sent = (handler.headers.get("Authorization") or "").removeprefix("DeepL-Auth-Key ")
        return sent.endswith(":fx") != self.key.endswith(":fx")


def expected(texts: Iterable[str], target: str) -> list[str]:
    """What the fake returns by default for ``texts`` translated into ``target``."""
    return [translate(t, None, target, {}) for t in texts]
