"""Translating with live systems: requests within the provider's limits, a rate limit shared by all
actors of a system, retries with backoff, and one result per text, success or recorded failure.

- ``pack``: texts into requests within a backend's ``BatchLimits``.
- ``Schedule``: a system's requests/s and characters/min quotas as sliding-window promises (never
  more than the limit in any window, measured when requests are let go), paced, and paused by a
  server's Retry-After. ``Limiter`` shares one between threads, ``RateLimiter`` (a Ray actor)
  between all the actors of a system; both answer ``acquire`` when a request may go.
- ``LiveRunner``: runs a backend's batches (``concurrency`` at a time), retrying transient failures
  (``classify``) with exponential backoff and full jitter, honouring Retry-After; a batch that fails
  permanently is split to isolate the texts at fault. Every text ends with a translation or an error.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections import deque
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


SEND_MARGIN_S = 0.05
"""Seconds added to every window the limiter keeps: a request is let go at one instant and reaches
the provider a little later, by a latency that varies (a Ray call's answer, the client building and
signing the request). Spacing requests by the window plus this margin keeps the promise at the
provider for any such delay up to the margin, at the cost of a slightly lower rate."""


class Quota:
    """At most ``capacity`` units started in any window of ``window_s`` seconds.

    A log of the starts within the last window (plus ``margin_s``) is the promise; on top of it,
    starts are paced evenly (the generic cell rate algorithm) with ``burst_s`` seconds of tolerance:
    with ``burst_s`` 0 one request at a time, each a window's share apart. A single request costing
    more than ``capacity`` waits for an empty window and then goes alone.
    """

    def __init__(self, capacity: int, window_s: float, burst_s: float = 0.0, margin_s: float = SEND_MARGIN_S):
        self.capacity = capacity
        self.span = window_s + margin_s
        self.interval = self.span / capacity  # seconds per unit when paced
        self.burst_s = burst_s
        self.log: deque[tuple[float, int]] = deque()  # (start, cost), oldest first
        self.used = 0  # units in the log
        self.tat = -math.inf  # theoretical arrival time of the pacing

    def earliest(self, now: float, cost: int) -> float:
        """The earliest time from ``now`` on at which ``cost`` units may start."""
        while self.log and self.log[0][0] <= now - self.span:
            self.used -= self.log.popleft()[1]
        at = max(now, self.tat - self.burst_s)
        excess = self.used if cost > self.capacity else self.used + cost - self.capacity
        if excess > 0:  # wait until enough of the oldest starts have left the window
            freed = 0
            for start, units in self.log:
                freed += units
                if freed >= excess:
                    at = max(at, start + self.span)
                    break
        return at

    def take(self, now: float, cost: int) -> None:
        self.log.append((now, cost))
        self.used += cost
        self.tat = max(self.tat, now) + cost * self.interval

    def hold(self, until: float) -> None:
        """Nothing starts before ``until``, and no burst right after it."""
        self.tat = max(self.tat, until + self.burst_s)


class Schedule:
    """A system's request and character quotas and the server's pauses, on one clock.

    ``requests_per_s`` promises at most that many requests (``floor``, at least 1) in any 1-second
    window (below 1 per second: at most one in any ``1/requests_per_s`` seconds); ``chars_per_min`` at
    most that many characters in any 60-second window. ``start`` decides at ``now`` and records what
    it lets go, so the promise holds for the instants requests are let go, whoever asks and however
    late; ``pause`` holds everything back for a Retry-After.
    """

    def __init__(self, requests_per_s: float | None = None, chars_per_min: float | None = None,
                 burst_s: float = 0.0, margin_s: float = SEND_MARGIN_S):
        self.quotas: list[tuple[int, Quota]] = []  # (index of the cost: 0 requests, 1 chars, quota)
        if requests_per_s:
            capacity, window = (math.floor(requests_per_s), 1.0) if requests_per_s >= 1 else (1, 1 / requests_per_s)
            self.quotas.append((0, Quota(capacity, window, burst_s, margin_s)))
        if chars_per_min:
            self.quotas.append((1, Quota(max(1, math.floor(chars_per_min)), 60.0, burst_s, margin_s)))
        self.paused_until = -math.inf

    def start(self, now: float, requests: int, chars: int) -> float:
        """0.0 when a request of this cost may start now (and it is recorded as started), else the
        seconds to wait before asking again."""
        costs = (requests, chars)
        at = max([now, self.paused_until] + [q.earliest(now, costs[k]) for k, q in self.quotas])
        if at > now:
            return at - now
        for k, quota in self.quotas:
            quota.take(now, costs[k])
        return 0.0

    def pause(self, now: float, seconds: float) -> None:
        self.paused_until = max(self.paused_until, now + seconds)
        for _, quota in self.quotas:
            quota.hold(self.paused_until)


class Limiter:
    """A ``Schedule`` shared by the threads of one process: ``acquire`` blocks until a request may go."""

    def __init__(self, requests_per_s: float | None = None, chars_per_min: float | None = None,
                 burst_s: float = 0.0, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, margin_s: float = SEND_MARGIN_S):
        self.schedule = Schedule(requests_per_s, chars_per_min, burst_s, margin_s)
        self.clock, self.sleep = clock, sleep
        self._turn = threading.Lock()  # one waiter at a time asks the schedule; the others queue
        self._state = threading.Lock()

    def acquire(self, requests: int, chars: int) -> None:
        with self._turn:
            while True:
                with self._state:
                    wait = self.schedule.start(self.clock(), requests, chars)
                if wait <= 0:
                    return
                self.sleep(wait)

    def pause(self, seconds: float) -> None:
        """The provider asked to wait (Retry-After): nothing starts before ``seconds`` from now."""
        with self._state:
            self.schedule.pause(self.clock(), seconds)


class RateLimiter:
    """The Ray actor class (asyncio) that shares one system's ``Schedule`` between all its actors.

    ``acquire`` answers when the request may go, so the decision is taken, and recorded, at the
    instant the caller is let go; a caller sends as soon as it has the answer."""

    def __init__(self, requests_per_s: float | None, chars_per_min: float | None, burst_s: float = 0.0):
        self.schedule = Schedule(requests_per_s, chars_per_min, burst_s)
        self._turn = None  # an asyncio.Lock (first in, first out), made in the actor's event loop

    async def acquire(self, requests: int, chars: int) -> None:
        import asyncio

        if self._turn is None:
            self._turn = asyncio.Lock()
        async with self._turn:
            while (wait := self.schedule.start(time.monotonic(), requests, chars)) > 0:
                await asyncio.sleep(wait)

    async def pause(self, seconds: float) -> None:
        self.schedule.pause(time.monotonic(), seconds)


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
                 acquire: Callable[[int, int], None] | None = None, concurrency: int = 1,
                 sleep: Callable[[float], None] = time.sleep, seed: int | None = None,
                 pause: Callable[[float], None] | None = None, clock: Callable[[], float] = time.monotonic):
        self.translator = translator
        self.policy = policy
        self.acquire = acquire or (lambda requests, chars: None)  # blocks until the request may go
        self.pause = pause or (lambda seconds: None)  # tells the shared limiter about a Retry-After
        self.concurrency = concurrency
        self.sleep = sleep
        self.clock = clock
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

    def _send(self, texts: list[str], src: str, tgt: str, budget: list[int], carried: int = 0) -> list[TextResult]:
        """One batch with retries. A permanent failure of several texts is bisected to isolate the
        texts at fault, within ``budget`` permanent failures per batch: a failure that is not about
        particular texts (a wrong language pair, a revoked key) ends the batch quickly.

        ``carried``: requests that already carried these texts (those of the batch they were split
        from), so that a text's ``attempts`` counts every request it was part of."""
        chars = sum(len(t) for t in texts)
        attempt = 0
        while True:
            attempt += 1
            self.acquire(self.translator.requests_for(texts), chars)
            self.requests += 1
            try:
                out = self.translator.translate_batch(texts, src, tgt, timeout=self.policy.timeout_s)
                if len(out.translations) != len(texts):
                    raise RuntimeError(f"provider returned {len(out.translations)} translations for {len(texts)} texts")
                now = _now()
                return [TextResult(t, None, carried + attempt, out.model, now) for t in out.translations]
            except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded result or a retry
                received = self.clock()
                advice = self.translator.classify(exc)
                sent = carried + attempt
                if advice is not None and advice.after is not None:
                    # the quota is the system's: every actor holds off until the Retry-After has
                    # elapsed since the answer came (not since the limiter hears of it)
                    self.pause(max(0.0, advice.after - (self.clock() - received)))
                if advice is None:
                    budget[0] -= 1
                if advice is None and len(texts) > 1 and budget[0] > 0:
                    half = len(texts) // 2
                    first = self._send(texts[:half], src, tgt, budget, sent)
                    if budget[0] <= 0:  # no budget left: the rest fails with the same error, unsent again
                        error = next((r.error for r in first if r.error), None) or _message(exc, None, attempt)
                        return first + [TextResult(None, error, sent, None, _now()) for _ in texts[half:]]
                    return first + self._send(texts[half:], src, tgt, budget, sent)
                if advice is None or attempt >= self.policy.max_attempts:
                    message = _message(exc, advice, attempt)
                    return [TextResult(None, message, sent, None, _now()) for _ in texts]
                wait = self.policy.backoff(attempt, self.rng)
                if advice.after is not None:
                    wait = max(wait, advice.after - (self.clock() - received))
                if wait > 0:
                    self.sleep(wait)


def _message(exc: BaseException, advice, attempt: int) -> str:
    message = redact(f"{type(exc).__name__}: {exc}".strip())[:2000]
    return f"gave up after {attempt} attempts: {message}" if advice is not None else message


def _now() -> datetime:
    return datetime.now(timezone.utc)
