"""Translating with live systems: requests within the provider's limits, a rate limit shared by all
actors of a system, retries with backoff, and one result per text, success or recorded failure.

- ``pack``: texts into requests within a backend's ``BatchLimits``.
- ``TokenBuckets``: requests/s and characters/min limits as a reservation-based token bucket
  (GCRA): ``reserve`` books capacity and says how long to wait, so callers never contend.
- ``RateLimiter``: one Ray actor per system holding its buckets, shared by all its actors.
- ``LiveRunner``: runs a backend's batches (``concurrency`` at a time), retrying transient failures
  (``classify``) with exponential backoff and full jitter, honouring Retry-After; a batch that fails
  permanently is split to isolate the texts at fault. Every text ends with a translation or an error.
"""

from __future__ import annotations

import math
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Sequence

from .secrets import redact
from .translators.base import BatchLimits, TextTranslator


@dataclass(frozen=True)
class Batch:
    indices: list[int]
    units: int
    too_long: bool = False  # one text over the per-request size: never sent, recorded as an error


def pack(texts: Sequence[str], limits: BatchLimits) -> list[Batch]:
    """Consecutive texts into requests of at most ``max_items`` texts and ``max_units`` units."""
    batches: list[Batch] = []
    current: list[int] = []
    units = 0
    for i, text in enumerate(texts):
        size = limits.size(text)
        if size > limits.max_units:
            batches.append(Batch([i], size, too_long=True))
            continue
        if current and (len(current) >= limits.max_items or units + size > limits.max_units):
            batches.append(Batch(current, units))
            current, units = [], 0
        current.append(i)
        units += size
    if current:
        batches.append(Batch(current, units))
    return batches


class TokenBuckets:
    """Request and character rate limits with reservations (the generic cell rate algorithm).

    ``reserve(requests, chars)`` books the capacity and returns how many seconds the caller must
    wait before sending. Each bucket lets ``burst_s`` seconds' worth of capacity through at once;
    over time the rate never exceeds the limit. A limit of None is no limit.
    """

    def __init__(self, requests_per_s: float | None = None, chars_per_min: float | None = None,
                 burst_s: float = 1.0, clock: Callable[[], float] = time.monotonic):
        self.rates = [r for r in (requests_per_s, chars_per_min / 60 if chars_per_min else None)]
        self.burst_s = burst_s
        self.tat = [0.0, 0.0]  # theoretical arrival time per bucket
        self.clock = clock
        self.lock = threading.Lock()

    def pause(self, seconds: float) -> None:
        """The provider asked to wait (Retry-After): no reservation starts before ``seconds`` from now."""
        with self.lock:
            until = self.clock() + seconds + self.burst_s
            self.tat = [max(t, until) if rate else t for rate, t in zip(self.rates, self.tat)]

    def reserve(self, requests: int, chars: int) -> float:
        costs = (requests, chars)
        with self.lock:
            now = self.clock()
            delay = 0.0
            for rate, tat in zip(self.rates, self.tat):
                if rate:
                    delay = max(delay, tat - self.burst_s - now)
            start = now + delay
            for k, (rate, cost) in enumerate(zip(self.rates, costs)):
                if rate:
                    self.tat[k] = max(self.tat[k], start) + cost / rate
            return delay


class RateLimiter:
    """The Ray actor class that shares one system's ``TokenBuckets`` between all its actors."""

    def __init__(self, requests_per_s: float | None, chars_per_min: float | None, burst_s: float = 1.0):
        self.buckets = TokenBuckets(requests_per_s, chars_per_min, burst_s)

    def reserve(self, requests: int, chars: int) -> float:
        return self.buckets.reserve(requests, chars)

    def pause(self, seconds: float) -> None:
        self.buckets.pause(seconds)


@dataclass
class TextResult:
    translation: str | None
    error: str | None
    attempts: int
    model: str | None
    translated_at: datetime


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    timeout_s: float = 60.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Full jitter: uniform in [0, min(cap, base * 2**(attempt-1))]."""
        return rng.uniform(0, min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)))


class LiveRunner:
    """Translates texts with one backend under a policy and a rate limit; never drops a text."""

    def __init__(self, translator: TextTranslator, policy: RetryPolicy = RetryPolicy(),
                 reserve: Callable[[int, int], float] | None = None, concurrency: int = 1,
                 sleep: Callable[[float], None] = time.sleep, seed: int | None = None,
                 pause: Callable[[float], None] | None = None):
        self.translator = translator
        self.policy = policy
        self.reserve = reserve or (lambda requests, chars: 0.0)
        self.pause = pause or (lambda seconds: None)  # tells the shared limiter about a Retry-After
        self.concurrency = concurrency
        self.sleep = sleep
        self.rng = random.Random(seed)
        self.requests = 0  # requests sent, successful or not

    def translate(self, texts: Sequence[str], src: str, tgt: str) -> list[TextResult]:
        limits = self.translator.limits()
        results: list[TextResult | None] = [None] * len(texts)
        batches = pack(texts, limits)

        def run(batch: Batch) -> None:
            if batch.too_long:
                results[batch.indices[0]] = TextResult(
                    None, f"text of {batch.units} {limits.unit} is over the provider's per-request limit of "
                          f"{limits.max_units}", 0, None, _now())
                return
            batch_texts = [texts[i] for i in batch.indices]
            budget = [2 * math.ceil(math.log2(len(batch_texts) + 1)) + 2]
            for i, result in zip(batch.indices, self._send(batch_texts, src, tgt, budget)):
                results[i] = result

        if self.concurrency > 1 and len(batches) > 1:
            with ThreadPoolExecutor(self.concurrency) as pool:
                list(pool.map(run, batches))
        else:
            for batch in batches:
                run(batch)
        return results  # type: ignore[return-value]

    def _send(self, texts: list[str], src: str, tgt: str, budget: list[int]) -> list[TextResult]:
        """One batch with retries. A permanent failure of several texts is bisected to isolate the
        texts at fault, within ``budget`` permanent failures per batch: a failure that is not about
        particular texts (a wrong language pair, a revoked key) ends the batch quickly."""
        chars = sum(len(t) for t in texts)
        attempt = 0
        while True:
            attempt += 1
            wait = self.reserve(self.translator.requests_for(texts), chars)
            if wait > 0:
                self.sleep(wait)
            self.requests += 1
            try:
                out = self.translator.translate_batch(texts, src, tgt, timeout=self.policy.timeout_s)
                if len(out.translations) != len(texts):
                    raise RuntimeError(f"provider returned {len(out.translations)} translations for {len(texts)} texts")
                now = _now()
                return [TextResult(t, None, attempt, out.model, now) for t in out.translations]
            except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded result or a retry
                advice = self.translator.classify(exc)
                if advice is None:
                    budget[0] -= 1
                if advice is None and len(texts) > 1 and budget[0] > 0:
                    half = len(texts) // 2
                    first = self._send(texts[:half], src, tgt, budget)
                    if budget[0] <= 0:  # no budget left: the rest fails with the same error, unsent
                        error = next((r.error for r in first if r.error), None) or _message(exc, None, attempt)
                        return first + [TextResult(None, error, 0, None, _now()) for _ in texts[half:]]
                    return first + self._send(texts[half:], src, tgt, budget)
                if advice is None or attempt >= self.policy.max_attempts:
                    message = _message(exc, advice, attempt)
                    return [TextResult(None, message, attempt, None, _now()) for _ in texts]
                wait = self.policy.backoff(attempt, self.rng)
                if advice.after is not None:
                    wait = max(wait, advice.after)
                    self.pause(advice.after)  # the quota is the system's: every actor holds off
                self.sleep(wait)


def _message(exc: BaseException, advice, attempt: int) -> str:
    message = redact(f"{type(exc).__name__}: {exc}".strip())[:2000]
    return f"gave up after {attempt} attempts: {message}" if advice is not None else message


def _now() -> datetime:
    return datetime.now(timezone.utc)
