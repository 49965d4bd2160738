"""Sending texts to a live backend (``RequestRunner``): requests packed within the provider's
limits, sent under the shared rate limit, retried with exponential backoff and full jitter when the
backend calls a failure transient (honouring Retry-After), a batch that fails for good split to
isolate the texts at fault. Every text ends with a translation or a recorded error, unless the
backend says the system cannot go on (``Stop``: a spent quota): then nothing more is sent and
``translate`` raises ``SystemStopped`` with what it finished.
"""

from __future__ import annotations

import math
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Callable, Sequence

from biaseval.credentials import describe
from biaseval.translate.base import BatchOutput, Stop, SystemStopped, TextDetails, TextTranslator
from biaseval.translate.base import SplitBatch
from biaseval.translate.packing import Batch, pack
from biaseval.translate.ratelimit import Limiter


@dataclass
class TextResult:
    translation: str | None
    error: str | None
    attempts: int
    model: str | None
    translated_at: datetime
    details: TextDetails | None = None

    @property
    def final(self) -> bool:
        """A translation, or a reply that is not one (a refusal): either way nothing to send again."""
        return self.translation is not None or (self.details is not None and self.details.rejected is not None)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    timeout_s: float = 60.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Full jitter: uniform in [0, min(cap, base * 2**(attempt-1))]."""
        return rng.uniform(0, min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)))


class RequestRunner:
    """Translates texts with one backend under a policy and a rate limit; never drops a text."""

    def __init__(self, translator: TextTranslator, policy: RetryPolicy = RetryPolicy(),
                 acquire: Callable[[int, int, int], None] | None = None, concurrency: int = 1,
                 sleep: Callable[[float], None] = time.sleep, seed: int | None = None,
                 pause: Callable[[float], None] | None = None, clock: Callable[[], float] = time.monotonic,
                 finished: Callable[[int], None] | None = None):
        """``finished``: told how many texts each batch ended (translated or failed for good), as it
        ends, so that a long call's progress can be shown (``ShardWorker.progress``)."""
        self.translator = translator
        self.policy = policy
        # without a shared limiter, one of its own: a Retry-After still holds all this runner's threads
        self.limiter = Limiter(clock=clock, sleep=sleep) if acquire is None and pause is None else None
        if self.limiter is not None:
            acquire, pause = self.limiter.acquire, self.limiter.pause
        self.acquire = acquire or (lambda requests, chars, tokens=0: None)  # blocks until the request may go
        self.pause = pause or (lambda seconds: None)  # tells the shared limiter about a Retry-After
        self.concurrency = concurrency
        self.sleep = sleep
        self.clock = clock
        self.finished = finished or (lambda texts: None)
        self.rng = random.Random(seed)
        self.requests = 0  # requests sent, successful or not
        self.stopped: Stop | None = None  # the backend's Stop verdict, once one came: nothing more is sent

    def translate(self, texts: Sequence[str], src: str, tgt: str) -> list[TextResult]:
        """A result per text; raises SystemStopped (carrying the results finished before it, None for
        the rest) once the backend calls a failure a Stop, in this call or an earlier one."""
        limits = self.translator.limits()
        results: list[TextResult | None] = [None] * len(texts)
        batches = pack(texts, limits)

        def run(batch: Batch) -> None:
            if self.stopped is not None:
                return
            if batch.too_long:
                results[batch.indices[0]] = TextResult(
                    None, f"text of {batch.units} {limits.unit} is over the provider's per-request limit of "
                          f"{limits.max_units}", 0, None, _now())
                self.finished(1)
                return
            batch_texts = [texts[i] for i in batch.indices]
            budget = [2 * math.ceil(math.log2(len(batch_texts) + 1)) + 2]
            try:
                done = self._send(batch_texts, src, tgt, budget)
            except _Halt as halt:
                done = halt.done
            for i, result in zip(batch.indices, done):
                results[i] = result
            self.finished(sum(result is not None for result in done))

        if self.concurrency > 1 and len(batches) > 1:
            with ThreadPoolExecutor(self.concurrency) as pool:
                list(pool.map(run, batches))
        else:
            for batch in batches:
                run(batch)
        if self.stopped is not None:
            raise SystemStopped(self.stopped.reason, results)
        return results  # type: ignore[return-value]

    def _send(self, texts: list[str], src: str, tgt: str, budget: list[int], carried: int = 0,
              spent: list[TextDetails | None] | None = None) -> list[TextResult]:
        """One batch with retries. A permanent failure of several texts is bisected to isolate the
        texts at fault, within ``budget`` permanent failures per batch: a failure that is not about
        particular texts (a wrong language pair, a revoked key) ends the batch quickly.

        ``carried``: requests that already carried these texts (those of the batch they were split
        from), so that a text's ``attempts`` counts every request it was part of; ``spent``: per text,
        what answered requests that were split again billed for it (``SplitBatch.spent``), added to
        its final result so that the row counts every billed reply."""
        chars = sum(map(len, texts))
        attempt = 0
        while True:
            attempt += 1
            if self.stopped is None:
                self.acquire(self.translator.requests_for(texts), chars, self.translator.tokens_for(texts, src, tgt))
            if self.stopped is not None:  # another batch was told to stop, while this one waited
                raise _Halt([None] * len(texts))
            self.requests += 1
            try:
                out = self.translator.translate_batch(texts, src, tgt, timeout=self.policy.timeout_s)
                if len(out.translations) != len(texts):
                    raise RuntimeError(f"provider returned {len(out.translations)} translations for {len(texts)} texts")
                return _charged(_results(out, carried + attempt), spent)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded result or a retry
                received = self.clock()
                advice = self.translator.classify(exc)
                if isinstance(advice, Stop):
                    self.stopped = self.stopped or advice
                    raise _Halt([None] * len(texts)) from None
                sent = carried + attempt
                if isinstance(exc, SplitBatch) and exc.spent is not None and len(exc.spent) == len(texts):
                    spent = [_plus(a, b) for a, b in zip(spent or [None] * len(texts), exc.spent)]
                if advice is not None and advice.after is not None:
                    # the quota is the system's: every actor holds off until the Retry-After has
                    # elapsed since the answer came (not since the limiter hears of it)
                    self.pause(max(0.0, advice.after - (self.clock() - received)))
                if advice is None and not isinstance(exc, SplitBatch):  # a split batch is not a failure
                    budget[0] -= 1
                if advice is None and len(texts) > 1 and budget[0] > 0:
                    half = len(texts) // 2
                    try:
                        first = self._send(texts[:half], src, tgt, budget, sent, spent and spent[:half])
                    except _Halt as halt:
                        raise _Halt(halt.done + [None] * (len(texts) - half)) from None
                    if budget[0] <= 0:  # no budget left: the rest fails with the same error, unsent again
                        error = next((r.error for r in first if r.error), None) or _message(exc, None, attempt)
                        rest = [TextResult(None, error, sent, None, _now()) for _ in texts[half:]]
                        return first + _charged(rest, spent and spent[half:])
                    try:
                        return first + self._send(texts[half:], src, tgt, budget, sent, spent and spent[half:])
                    except _Halt as halt:
                        raise _Halt(first + halt.done) from None
                if advice is None or attempt >= self.policy.max_attempts:
                    message = _message(exc, advice, attempt)
                    return _charged([TextResult(None, message, sent, None, _now()) for _ in texts], spent)
                wait = self.policy.backoff(attempt, self.rng)
                if advice.after is not None:
                    wait = max(wait, advice.after - (self.clock() - received))
                if wait > 0:
                    self.sleep(wait)


class _Halt(Exception):
    """A Stop verdict unwinding a batch's sends; ``done``: its texts' results so far (None: unfinished)."""

    def __init__(self, done: list[TextResult | None]):
        super().__init__("stopped")
        self.done = done


def _results(out: BatchOutput, attempts: int) -> list[TextResult]:
    """A request's answer per text: the translation, or the reason its reply is not one."""
    now = _now()
    if out.details is None and None not in out.translations:  # the common answer: a translation for each text
        return [TextResult(text, None, attempts, out.model, now) for text in out.translations]
    details = out.details or [None] * len(out.translations)
    if len(details) != len(out.translations):
        raise RuntimeError(f"backend returned {len(details)} details for {len(out.translations)} translations")
    results = []
    for text, detail in zip(out.translations, details):
        if text is not None:
            results.append(TextResult(text, None, attempts, out.model, now, detail))
        elif detail is not None and detail.rejected:
            results.append(TextResult(None, f"not a translation ({detail.rejected})", attempts, out.model, now, detail))
        else:
            results.append(TextResult(None, "the provider returned no text for it", attempts, out.model, now, detail))
    return results


_BILLED = ("input_tokens", "output_tokens", "billed_chars")


def _plus(a: TextDetails | None, b: TextDetails | None) -> TextDetails | None:
    """Billed units of ``a`` and ``b`` added (a field unknown in both stays unknown)."""
    if a is None or b is None:
        return a or b
    return TextDetails(**{f: None if getattr(a, f) is None and getattr(b, f) is None
                          else (getattr(a, f) or 0) + (getattr(b, f) or 0) for f in _BILLED})


def _charged(results: list[TextResult], spent: list[TextDetails | None] | None) -> list[TextResult]:
    """``results`` with the billed units of earlier answered requests (``spent``) added to each."""
    if not spent:
        return results
    for result, extra in zip(results, spent):
        if extra is None:
            continue
        details = result.details or TextDetails()
        total = _plus(details, extra)
        result.details = replace(details, **{f: getattr(total, f) for f in _BILLED})
    return results


def _message(exc: BaseException, advice, attempt: int) -> str:
    message = describe(exc, limit=2000)
    return f"gave up after {attempt} attempts: {message}" if advice is not None else message


def _now() -> datetime:
    return datetime.now(timezone.utc)
