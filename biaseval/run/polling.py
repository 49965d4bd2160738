"""Asking a live system's actors how many texts they have sent so far (``ShardWorker.progress``),
without waiting for the answers, so that a sweep shows progress within a long task: 1,000 texts
at 5 requests a second is one task of more than three minutes.

Each actor counts the texts its send tasks finished, all together; the texts of its tasks that
have ended are counted by the driver already (``finished``), so what is still running is the
difference. One call per actor and second at most, none from the workers: a sweep of an instant
backend pays nothing for it.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Iterable


class SentPolls:
    def __init__(self, every: float = 1.0, clock: Callable[[], float] = time.monotonic):
        self.every, self.clock = every, clock
        self.asked: dict = {}  # ObjectRef of a progress call -> its actor
        self.sent: dict = {}  # actor -> texts it said it had sent (its latest answer)
        self.credited: dict = {}  # actor -> texts of its send tasks that have ended
        self.last = -math.inf

    def finished(self, actor, texts: int) -> None:
        """A send task of ``actor`` ended, with ``texts`` texts."""
        self.credited[actor] = self.credited.get(actor, 0) + texts

    def running(self, actors: Iterable) -> int:
        """The texts sent within the running tasks of ``actors``, by their latest answers."""
        return sum(max(0, self.sent.get(actor, 0) - self.credited.get(actor, 0)) for actor in actors)

    def poll(self, actors: Iterable) -> None:
        """Take the answers that came; once every ``every`` seconds, ask each of ``actors`` that has
        no question pending."""
        import ray

        if self.asked:
            ready, _ = ray.wait(list(self.asked), num_returns=len(self.asked), timeout=0)
            for ref in ready:
                actor = self.asked.pop(ref)
                try:
                    self.sent[actor] = ray.get(ref)
                except Exception:  # noqa: BLE001 - a lost actor: its tasks say so when they end
                    pass
        now = self.clock()
        if now - self.last < self.every:
            return
        self.last = now
        pending = set(self.asked.values())
        for actor in actors:
            if actor not in pending:
                self.asked[actor.progress.options(concurrency_group="progress").remote()] = actor
