"""Rate limits that are promises about every sliding window: never more than ``requests_per_s``
requests in any second, nor ``chars_per_min`` characters (``tokens_per_min`` estimated tokens, for
LLMs) in any minute, over all of a system's actors, retries included; a server's Retry-After pauses
them all, with or without limits (a schedule with no limit is a pause and nothing else). ``Limiter``
for threads in one process, ``RateLimiter`` as the Ray actor a system's actors share.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from typing import Callable

SEND_MARGIN_S = 0.05


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
    most that many characters in any 60-second window; ``tokens_per_min`` at most that many tokens, as
    the backend estimates them before sending (``TextTranslator.tokens_for``), in any 60-second window. ``start`` decides at ``now`` and records what
    it lets go, so the promise holds for the instants requests are let go, whoever asks and however
    late; ``pause`` holds everything back for a Retry-After.
    """

    def __init__(self, requests_per_s: float | None = None, chars_per_min: float | None = None,
                 burst_s: float = 0.0, margin_s: float = SEND_MARGIN_S, tokens_per_min: float | None = None):
        self.quotas: list[tuple[int, Quota]] = []  # (index of the cost: 0 requests, 1 chars, 2 tokens; quota)
        if requests_per_s:
            capacity, window = (math.floor(requests_per_s), 1.0) if requests_per_s >= 1 else (1, 1 / requests_per_s)
            self.quotas.append((0, Quota(capacity, window, burst_s, margin_s)))
        if chars_per_min:
            self.quotas.append((1, Quota(max(1, math.floor(chars_per_min)), 60.0, burst_s, margin_s)))
        if tokens_per_min:
            self.quotas.append((2, Quota(max(1, math.floor(tokens_per_min)), 60.0, burst_s, margin_s)))
        self.paused_until = -math.inf

    def start(self, now: float, requests: int, chars: int, tokens: int = 0) -> float:
        """0.0 when a request of this cost may start now (and it is recorded as started), else the
        seconds to wait before asking again."""
        costs = (requests, chars, tokens)
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

    def paused_for(self, now: float) -> float:
        """Seconds left of the server's pause (0.0 when none holds)."""
        return max(0.0, self.paused_until - now)


class Limiter:
    """A ``Schedule`` shared by the threads of one process: ``acquire`` blocks until a request may go."""

    def __init__(self, requests_per_s: float | None = None, chars_per_min: float | None = None,
                 burst_s: float = 0.0, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, margin_s: float = SEND_MARGIN_S,
                 tokens_per_min: float | None = None):
        self.schedule = Schedule(requests_per_s, chars_per_min, burst_s, margin_s, tokens_per_min)
        self.clock, self.sleep = clock, sleep
        self._turn = threading.Lock()  # one waiter at a time asks the schedule; the others queue
        self._state = threading.Lock()

    def acquire(self, requests: int, chars: int, tokens: int = 0) -> None:
        with self._turn:
            while True:
                with self._state:
                    wait = self.schedule.start(self.clock(), requests, chars, tokens)
                if wait <= 0:
                    return
                self.sleep(wait)

    def pause(self, seconds: float) -> None:
        """The provider asked to wait (Retry-After): nothing starts before ``seconds`` from now."""
        with self._state:
            self.schedule.pause(self.clock(), seconds)

    def paused_for(self) -> float:
        with self._state:
            return self.schedule.paused_for(self.clock())


class RateLimiter:
    """The Ray actor class (asyncio) that shares one system's ``Schedule`` between all its actors. Every
    live system has one, limits or not: without limits it is the pause every actor honours.

    ``acquire`` answers when the request may go, so the decision is taken, and recorded, at the
    instant the caller is let go; a caller sends as soon as it has the answer."""

    def __init__(self, requests_per_s: float | None, chars_per_min: float | None, burst_s: float = 0.0,
                 tokens_per_min: float | None = None):
        self.schedule = Schedule(requests_per_s, chars_per_min, burst_s, tokens_per_min=tokens_per_min)
        self._turn = None  # an asyncio.Lock (first in, first out), made in the actor's event loop

    async def acquire(self, requests: int, chars: int, tokens: int = 0) -> None:
        import asyncio

        if self._turn is None:
            self._turn = asyncio.Lock()
        async with self._turn:
            while (wait := self.schedule.start(time.monotonic(), requests, chars, tokens)) > 0:
                await asyncio.sleep(wait)

    async def pause(self, seconds: float) -> None:
        self.schedule.pause(time.monotonic(), seconds)

    async def paused_for(self) -> float:
        return self.schedule.paused_for(time.monotonic())
