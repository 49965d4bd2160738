"""A wire-level fake of the OpenAI chat completions API (and Azure OpenAI's deployment paths), for
tests and benchmarks.

It listens on 127.0.0.1 (a free port) and answers ``POST /v1/chat/completions`` and
``POST /openai/deployments/<deployment>/chat/completions?api-version=...`` as the services do, in the
shape the ``openai`` SDK's types read (``ChatCompletion``: id, object, created, model,
system_fingerprint, choices with message, finish_reason; usage with prompt and completion tokens).
Errors use OpenAI's body, ``{"error": {"message", "type", "param", "code"}}``. What it does:

- checks the key (``Authorization: Bearer`` or Azure's ``api-key``; 401 otherwise) and the model
  (``models``; 404 ``model_not_found`` otherwise);
- "translates" deterministically: ``translate(text, tgt)`` is ``"[tgt] "`` and the text reversed
  (nothing a language check would place in another language). The target is read from the system
  message's "into <Name> (<code>)" (biaseval's default prompts), else ``target``. A user message that
  is a JSON array of ``{"id", "text"}`` is a batch: the reply is a JSON array of ``{"id",
  "translation"}``;
- honours ``max_tokens`` / ``max_completion_tokens``: a longer reply is cut, ``finish_reason`` length;
- scripted outcomes for the next requests (``script``, ``throttle``, ``fail``, ``slow``, ``answer``):
  an HTTP error (with Retry-After), a slow answer (to trip a client's timeout), or another reply
  (a refusal, a chatty or wrong-language answer, the API's refusal field, a batch list with a
  wrong count or order: see ``Reply`` and the content helpers below);
- ``batch_fault``: the content of every reply to a batch (``wrong_count``, ``swapped``);
- ``rules``: content-based replies, e.g. every text with "firefighter" refused, so that a rerun sees
  the same answers; ``fault_rate``: that share of requests, drawn with ``fault_seed``, fails
  transiently (429 with Retry-After, 500, 503, or a timeout of ``fault_delay_s``);
- records every request (``requests``: path, headers, body, texts, target, what it answered).

Only the standard library is used, so benchmarks can import it too.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

from .base import Failure, FakeHandler, FakeService, Record

_TARGET = re.compile(r"into [^()\n]+ \(([A-Za-z]{2,3}(?:[-_][A-Za-z0-9]+)*)\)")
_PATH = re.compile(r"^(?:/v1|/openai/deployments/(?P<deployment>[^/]+))/chat/completions$")
REFUSAL = "I'm sorry, but I can't help with translating this request."
CHATTY = "Sure! Here is the translation you asked for:\n\n{translation}\n\nNote: the gender of the friend is ambiguous."
FINGERPRINT = "fp_fake_0001"


def translate(text: str, tgt: str) -> str:
    """What the fake answers for ``text`` into ``tgt``."""
    return f"[{tgt}] {text[::-1]}"


def tokens(text: str) -> int:
    """The fake's token count of a text (about four characters a token)."""
    return max(1, math.ceil(len(text) / 4))


# -- replies other than a translation: content(texts, tgt) -> str -------------------------------------

def refusal(texts: list[str], tgt: str) -> str:
    return REFUSAL


def chatty(texts: list[str], tgt: str) -> str:
    return CHATTY.format(translation=translate(texts[0], tgt))


def untranslated(texts: list[str], tgt: str) -> str:
    """The source again: an answer in the wrong language."""
    return texts[0]


def wrapped(texts: list[str], tgt: str) -> str:
    """The translation inside a label and a code fence (wrappers a client strips)."""
    return f"Translation:\n```\n{translate(texts[0], tgt)}\n```"


def wrong_count(texts: list[str], tgt: str) -> str:
    """A batch reply with the last text missing (a single text is answered normally)."""
    if len(texts) == 1:
        return translate(texts[0], tgt)
    return json.dumps([{"id": i, "translation": translate(t, tgt)} for i, t in enumerate(texts, 1)][:-1])


def swapped(texts: list[str], tgt: str) -> str:
    """A batch reply with the first two translations in each other's place (a single text: normal)."""
    if len(texts) == 1:
        return translate(texts[0], tgt)
    items = [{"id": i, "translation": translate(t, tgt)} for i, t in enumerate(texts, 1)]
    items[0], items[1] = items[1], items[0]
    return json.dumps(items)


@dataclass(frozen=True)
class Reply:
    """A scripted answer with status 200: ``content`` (a string, or content(texts, tgt)), the
    ``finish_reason`` and the message's ``refusal`` field."""

    content: str | Callable[[list[str], str], str] | None = None
    finish_reason: str = "stop"
    refusal: str | None = None


@dataclass
class RecordedRequest(Record):
    """A request (``seq``, ``at``, ``done``, ``in_flight``: see base.Record) and its answer."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names in lower case
    body: Any = None
    deployment: str | None = None
    texts: list[str] = field(default_factory=list)
    target: str | None = None
    batched: bool = False
    status: int = 0
    outcome: str = ""  # "ok", "scripted", "rule", "injected", "http <status>", "cut"


class _HTTPError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None, kind: str = "invalid_request_error",
                 retry_after: float | None = None):
        self.status, self.message, self.code, self.kind, self.retry_after = status, message, code, kind, retry_after


class _Handler(FakeHandler):
    def do_POST(self):
        self.fake._handle(self)

    do_GET = do_POST


class FakeOpenAI(FakeService):
    """The fake service. All arguments are keyword-only; see the module docstring."""

    name = "fake-openai"
    Handler = _Handler

    def __init__(self, *, key: str = "sk-fake-openai-key-0123456789", models: tuple[str, ...] | None = None,
                 reported_model: str | None = None, target: str = "xx",
                 rules: list[tuple[Callable[[str], bool], Reply]] | None = None, fault_rate: float = 0.0,
                 fault_seed: int = 0, fault_delay_s: float = 2.0, batch_fault: Callable | None = None,
                 echo_key_in_errors: bool = False,
                 requests_per_s: float | None = None, chars_per_min: float | None = None, burst_s: float = 1.0,
                 latency_s: float = 0.0, host: str = "127.0.0.1"):
        super().__init__(latency_s=latency_s, requests_per_s=requests_per_s, chars_per_min=chars_per_min,
                         burst_s=burst_s, host=host)
        self.key = key
        self.models = models
        self.reported_model = reported_model
        self.target = target
        self.rules = list(rules or [])
        self.fault_rate = fault_rate
        self.fault_delay_s = fault_delay_s
        self.batch_fault = batch_fault  # content(texts, tgt) for every batch request (wrong_count, swapped)
        self.echo_key_in_errors = echo_key_in_errors
        self._rng = random.Random(fault_seed)

    @property
    def base_url(self) -> str:
        """What a system's ``options.base_url`` should be to use this fake."""
        return f"{self.url}/v1"

    # -- scripting --------------------------------------------------------------------------------

    def throttle(self, retry_after: float | None = 1, *, times: int = 1) -> None:
        self.script(Failure(status=429, code="rate_limit_exceeded", retry_after=retry_after), times=times)

    def fail(self, status: int, *, code: str | None = None, message: str | None = None, times: int = 1) -> None:
        self.script(Failure(status=status, code=code, message=message), times=times)

    def slow(self, delay_s: float, *, times: int = 1) -> None:
        self.script(Failure(delay_s=delay_s), times=times)

    def answer(self, content=None, *, finish_reason: str = "stop", refusal: str | None = None, times: int = 1) -> None:
        self.script(Reply(content, finish_reason, refusal), times=times)

    def served(self, **fields: Any) -> list[RecordedRequest]:
        """The requests answered with a reply (status 200), optionally those with these values."""
        return [r for r in self.requests if r.status == 200 and all(getattr(r, k) == v for k, v in fields.items())]

    # -- the service ------------------------------------------------------------------------------

    def _handle(self, handler: _Handler) -> None:
        url = urlsplit(handler.path)
        raw = handler.body()
        record = RecordedRequest(method=handler.command, path=url.path, query=parse_qs(url.query),
                                 headers={k.lower(): v for k, v in handler.headers.items()})
        with self.track(record):
            scripted = self.next_scripted(record)
            extra: dict[str, str] = {}
            try:
                scripted = scripted if scripted is not None else self._injected(record)
                if isinstance(scripted, Failure) and scripted.delay_s:
                    self.pause(scripted.delay_s)
                status, body = self._serve(handler, url, raw, record, scripted)
            except _HTTPError as err:
                message = err.message
                if self.echo_key_in_errors:
                    message += f" (received {handler.headers.get('Authorization') or handler.headers.get('api-key')})"
                status = err.status
                body = {"error": {"message": message, "type": err.kind, "param": None, "code": err.code}}
                if err.retry_after is not None:
                    extra["Retry-After"] = str(max(1, math.ceil(err.retry_after)))
                record.outcome = record.outcome or f"http {status}"
            record.status = status
        extra["x-request-id"] = f"req_fake_{record.seq}"
        if self.stopping.is_set():
            handler.close_connection = True
            return
        handler.reply(status, json.dumps(body, ensure_ascii=False).encode("utf-8"), extra)

    def _injected(self, record: RecordedRequest) -> Failure | None:
        with self._lock:
            draw, kind = self._rng.random(), self._rng.randrange(4)
        if draw >= self.fault_rate:
            return None
        record.outcome = "injected"
        return [Failure(status=429, code="rate_limit_exceeded", retry_after=1), Failure(status=500),
                Failure(status=503), Failure(delay_s=self.fault_delay_s)][kind]

    def _serve(self, handler, url, raw, record, scripted) -> tuple[int, Any]:
        match = _PATH.match(url.path)
        if handler.command != "POST" or not match:
            raise _HTTPError(404, f"Invalid URL ({handler.command} {url.path})")
        record.deployment = match.group("deployment")
        if record.deployment is not None:
            if not record.query.get("api-version"):
                raise _HTTPError(404, "Resource not found (no api-version)")
            given = handler.headers.get("api-key")
        else:
            given = (handler.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        if given != self.key:
            raise _HTTPError(401, "Incorrect API key provided.", "invalid_api_key")
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise _HTTPError(400, "We could not parse the JSON body of your request.") from None
        record.body = body
        model, messages = body.get("model"), body.get("messages")
        if not isinstance(model, str) or not isinstance(messages, list) or not messages:
            raise _HTTPError(400, "model and messages are required.", "missing_required_parameter")
        if self.models is not None and model not in self.models:
            raise _HTTPError(404, f"The model `{model}` does not exist or you do not have access to it.",
                             "model_not_found")
        if not all(isinstance(m, dict) and m.get("role") in ("system", "user", "assistant", "developer")
                   and isinstance(m.get("content"), str) for m in messages):
            raise _HTTPError(400, "Invalid messages.", "invalid_value")
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise _HTTPError(400, "max_tokens must be a positive integer.", "invalid_value")
        if not 0 <= body.get("temperature", 1) <= 2:
            raise _HTTPError(400, "temperature must be between 0 and 2.", "invalid_value")
        system = "\n".join(m["content"] for m in messages if m["role"] in ("system", "developer"))
        user = [m["content"] for m in messages if m["role"] == "user"][-1]
        found = _TARGET.search(system)
        record.target = found.group(1) if found else self.target
        record.texts, record.batched = _texts(user)
        if isinstance(scripted, Failure) and scripted.status is not None:
            raise _HTTPError(scripted.status, scripted.message or _MESSAGES.get(scripted.status, "Error."),
                             scripted.code, "requests" if scripted.status == 429 else "server_error",
                             scripted.retry_after)
        if self.quota is not None:
            wait = self.quota.take(sum(len(t) for t in record.texts))
            if wait > 0:
                raise _HTTPError(429, "Rate limit reached for requests.", "rate_limit_exceeded", "requests", wait)
        if self.latency_s:
            self.pause(self.latency_s)
        reply = scripted if isinstance(scripted, Reply) else None
        record.outcome = record.outcome or ("scripted" if reply else "ok")
        content, finish, refused = self._content(record, reply)
        if content is not None and limit is not None and tokens(content) > limit:
            content, finish, record.outcome = content[:limit * 4], "length", "cut"
        prompt = sum(tokens(m["content"]) + 4 for m in messages) + 3
        completion = tokens(content or refused or "")
        return 200, {
            "id": f"chatcmpl-fake-{record.seq}", "object": "chat.completion", "created": int(time.time()),
            "model": self.reported_model or model, "system_fingerprint": FINGERPRINT,
            "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                         "message": {"role": "assistant", "content": content, "refusal": refused}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }

    def _content(self, record: RecordedRequest, reply: Reply | None) -> tuple[str | None, str, str | None]:
        texts, tgt = record.texts, record.target
        if reply is not None:
            content = reply.content(texts, tgt) if callable(reply.content) else reply.content
            return content, reply.finish_reason, reply.refusal
        if record.batched and self.batch_fault is not None:
            record.outcome = "batch fault"
            return self.batch_fault(texts, tgt), "stop", None
        answers = []
        for text in texts:
            rule = next((r for when, r in self.rules if when(text)), None)
            if rule is not None and not record.batched:
                record.outcome = "rule"
                content = rule.content([text], tgt) if callable(rule.content) else rule.content
                return content, rule.finish_reason, rule.refusal
            if rule is not None and rule.content is not None:
                answers.append(rule.content([text], tgt) if callable(rule.content) else rule.content)
            else:
                answers.append(translate(text, tgt))
        if record.batched:
            return json.dumps([{"id": i, "translation": a} for i, a in enumerate(answers, 1)], ensure_ascii=False), \
                "stop", None
        return answers[0], "stop", None


_MESSAGES = {429: "Rate limit reached for requests.", 500: "The server had an error while processing your request.",
             503: "The engine is currently overloaded, please try again later."}


def _texts(user: str) -> tuple[list[str], bool]:
    """The texts of a request: a numbered JSON array (a batch), else the user message itself."""
    try:
        items = json.loads(user)
    except ValueError:
        return [user], False
    if isinstance(items, list) and items and all(isinstance(i, dict) and isinstance(i.get("text"), str) for i in items):
        return [i["text"] for i in items], True
    return [user], False
