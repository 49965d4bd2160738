"""The live-translation machinery with a scripted backend: packing, rate limits, retries, bisection."""

from __future__ import annotations

import random

import pytest

from biaseval.credentials import redact
from biaseval.translate.ratelimit import Limiter, Schedule
from biaseval.translate.runner import RequestRunner, RetryPolicy
from biaseval.translate.packing import pack
from biaseval.translate.base import BatchLimits, BatchOutput, Retry, TextTranslator


class Throttled(Exception):
    def __init__(self, after=None):
        super().__init__("429 Too Many Requests")
        self.after = after


class Scripted(TextTranslator):
    """Upper-cases texts; fails according to a script of exceptions, one per request."""

    provider = "scripted"

    def __init__(self, script=(), limits=BatchLimits(3, 20), bad=(), clock=None):
        super().__init__("scripted", None)
        self.clock = clock
        self.sent_at: list[float] = []  # when each request was made, on ``clock``
        self.script = list(script)
        self._limits = limits
        self.bad = set(bad)
        self.calls: list[list[str]] = []

    def limits(self):
        return self._limits

    def translate_batch(self, texts, src, tgt, *, timeout):
        self.calls.append(list(texts))
        if self.clock is not None:
            self.sent_at.append(self.clock())
        if self.script:
            exc = self.script.pop(0)
            if exc is not None:
                raise exc
        if self.bad & set(texts):
            raise ValueError("400 invalid text")
        return BatchOutput([t.upper() for t in texts], model="m1")

    def classify(self, exc):
        if isinstance(exc, Throttled):
            return Retry(after=exc.after)
        return super().classify(exc)


def test_pack_respects_items_and_units():
    texts = ["aaaa", "bb", "cccccc", "d", "e" * 25, "ff"]
    batches = pack(texts, BatchLimits(max_items=2, max_units=8))
    assert sorted(b.indices for b in batches) == [[0, 1], [2, 3], [4], [5]]
    assert [b.indices for b in batches if b.too_long] == [[4]]
    assert all(b.units <= 8 for b in batches if not b.too_long)


def test_pack_counts_utf8_bytes_when_asked():
    limits = BatchLimits(max_items=10, max_units=6, unit="utf8_bytes")
    assert [b.indices for b in pack(["नम", "a"], limits)] == [[0], [1]]  # 6 bytes + 1 > 6


def busiest(starts, window):
    """The most units started in any closed window of ``window`` seconds: ``starts`` is a list of
    times, or of (time, units)."""
    starts = sorted(s if isinstance(s, tuple) else (s, 1) for s in starts)
    best = total = 0
    j = 0
    for t, units in starts:  # windows ending at each start: [t - window, t]
        total += units
        while starts[j][0] < t - window:
            total -= starts[j][1]
            j += 1
        best = max(best, total)
    return best


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def callers(schedule, clock, count, cost, seed=7, callers=8):
    """``callers`` callers asking ``schedule`` at the same instants (several actors), each asking
    again soon after it was let go, until ``count`` requests went; their (time, requests, chars)."""
    rng = random.Random(seed)
    went = []
    waiting = [(0.0, *cost(rng)) for _ in range(callers)]  # (asks at, requests, chars)
    while len(went) < count:
        waiting.sort()
        asks, requests, chars = waiting.pop(0)
        clock.now = max(clock.now, asks)
        wait = schedule.start(clock.now, requests, chars)
        if wait > 0:
            waiting.append((clock.now + wait, requests, chars))
            continue
        went.append((clock.now, requests, chars))
        waiting.append((clock.now + rng.uniform(0, 0.05), *cost(rng)))
    return went


@pytest.mark.parametrize("burst_s", [0.0, 1.0])
def test_requests_per_second_hold_in_every_window(burst_s):
    """A promise about every 1-second window, not an average, whoever asks and whatever a batch
    costs (``requests_for`` of 1 or 2); and the limit is used, not merely respected."""
    clock = FakeClock()
    went = callers(Schedule(requests_per_s=40, burst_s=burst_s), clock, 600,
                   lambda rng: (rng.choice((1, 1, 2)), 0))
    assert 36 <= busiest([(t, r) for t, r, _ in went], 1.0) <= 40
    assert sum(r for _, r, _ in went) / clock.now >= 0.9 * 40


def test_chars_per_minute_hold_in_every_window():
    clock = FakeClock()
    went = callers(Schedule(chars_per_min=6_000), clock, 300, lambda rng: (1, rng.randint(1, 400)))
    assert clock.now > 5 * 60  # many 60-s windows were checked
    assert busiest([(t, c) for t, _, c in went], 60.0) <= 6_000
    assert sum(c for _, _, c in went) / clock.now * 60 >= 0.9 * 6_000


def test_schedule_burst_zero_paces_and_burst_goes_at_once():
    paced = Schedule(requests_per_s=4, burst_s=0.0)
    assert paced.start(0.0, 1, 0) == 0.0
    assert paced.start(0.0, 1, 0) >= 0.25  # one at a time, a quarter second apart (plus the margin)
    bursty = Schedule(requests_per_s=4, burst_s=1.0)
    assert [bursty.start(0.0, 1, 0) for _ in range(4)] == [0.0] * 4  # a second's worth at once
    assert bursty.start(0.0, 1, 0) >= 1.0  # but never a fifth within the second
    big = Schedule(requests_per_s=4, burst_s=1.0)
    assert big.start(0.0, 3, 0) == 0.0 and big.start(0.0, 2, 0) >= 1.0  # requests_for > 1 counts each
    alone = Schedule(chars_per_min=100)
    assert alone.start(0.0, 1, 30) == 0.0 and alone.start(0.0, 1, 500) >= 60  # over the quota: alone


def test_long_run_rate_never_exceeds_the_limit():
    clock = FakeClock()
    limiter = Limiter(requests_per_s=5, burst_s=2.0, clock=clock, sleep=clock.sleep)
    sent = []
    for _ in range(500):
        limiter.acquire(1, 0)
        sent.append(clock.now)
    assert busiest(sent, 1.0) <= 5
    assert len(sent) / sent[-1] == pytest.approx(5.0, rel=0.06)  # close to the limit, the margin aside


def test_retries_honour_retry_after_and_count_attempts():
    clock = FakeClock()
    backend = Scripted(script=[Throttled(after=7.0), TimeoutError("read timed out"), None], clock=clock)
    runner = RequestRunner(backend, RetryPolicy(max_attempts=5, backoff_s=0.1), sleep=clock.sleep, clock=clock, seed=1)
    out = runner.translate(["a", "b"], "en", "es")
    assert [r.translation for r in out] == ["A", "B"]
    assert [r.attempts for r in out] == [3, 3]
    first, second, third = backend.sent_at
    assert second - first >= 7.0 and third - second <= 0.2  # Retry-After first, then jittered backoff
    assert runner.requests == 3


def test_giving_up_records_the_error_for_every_text():
    backend = Scripted(script=[Throttled()] * 10)
    out = RequestRunner(backend, RetryPolicy(max_attempts=3, backoff_s=0), sleep=lambda s: None).translate(["a", "b"], "en", "es")
    assert all(r.translation is None and r.attempts == 3 and "gave up after 3 attempts" in r.error for r in out)


def test_permanent_failure_is_isolated_by_bisection():
    backend = Scripted(limits=BatchLimits(8, 100), bad={"bad"})
    out = RequestRunner(backend, sleep=lambda s: None).translate(["a", "b", "bad", "c"], "en", "es")
    assert [r.translation for r in out] == ["A", "B", None, "C"]
    assert "400 invalid text" in out[2].error


def test_too_long_text_is_an_error_not_a_request():
    backend = Scripted(limits=BatchLimits(3, 5))
    out = RequestRunner(backend, sleep=lambda s: None).translate(["short", "much too long"], "en", "es")
    assert out[0].translation == "SHORT" and out[1].translation is None
    assert "over the provider's per-request limit of 5" in out[1].error
    assert backend.calls == [["short"]]


def test_rate_limit_is_applied_per_request():
    clock = FakeClock()
    backend = Scripted(limits=BatchLimits(1, 100), clock=clock)
    limiter = Limiter(requests_per_s=1, burst_s=0, clock=clock, sleep=clock.sleep, margin_s=0.0)
    RequestRunner(backend, acquire=limiter.acquire, sleep=clock.sleep).translate(list("abcd"), "en", "es")
    assert backend.sent_at == pytest.approx([0.0, 1.0, 2.0, 3.0])


def test_redact_scrubs_environment_secrets_and_known_shapes(monkeypatch):
    monkeypatch.setenv("AZURE_TRANSLATOR_KEY", "s3cr3t-value-123")
    text = redact("failed: key s3cr3t-value-123; Ocp-Apim-Subscription-Key: abc123; id AKIAABCDEFGHIJKLMNOP; url?key=zzz&x=1")
    assert "s3cr3t" not in text and "abc123" not in text and "AKIA" not in text and "zzz" not in text
    assert "x=1" in text
    text = redact("Authorization: Bearer ya29.a0AfH6SMC; creds ASIAABCDEFGHIJKLMNOP, Signature=0123456789abcdef0123")
    assert "ya29" not in text and "ASIA" not in text and "0123456789abcdef" not in text


def test_a_failure_of_every_text_is_not_bisected_to_the_end():
    class Down(Scripted):
        def translate_batch(self, texts, src, tgt, *, timeout):
            self.calls.append(list(texts))
            raise ValueError("400 unsupported language pair")

    backend = Down(limits=BatchLimits(256, 10**6))
    out = RequestRunner(backend, sleep=lambda s: None).translate([f"t{i}" for i in range(256)], "en", "xx")
    assert all(r.translation is None and "unsupported language pair" in r.error for r in out)
    assert len(backend.calls) <= 2 * 9 + 2  # the budget: a handful of requests, not 511


def test_retry_after_pauses_the_shared_limiter():
    clock = FakeClock()
    limiter = Limiter(requests_per_s=100, burst_s=0, clock=clock, sleep=clock.sleep)
    backend = Scripted(script=[Throttled(after=5.0)])
    runner = RequestRunner(backend, RetryPolicy(max_attempts=1), acquire=limiter.acquire, pause=limiter.pause,
                        sleep=clock.sleep, clock=clock)
    runner.translate(["a"], "en", "es")
    # another actor asking now must wait out the server's Retry-After too
    limiter.acquire(1, 0)
    assert clock.now >= 5.0


def carried(backend, texts):
    """How many requests the backend received carrying each text (what ``attempts`` must say)."""
    return [sum(text in call for call in backend.calls) for text in texts]


def test_attempts_count_every_request_that_carried_the_text():
    """A batch that times out, then fails for good, is split: texts of the healthy half went in three
    requests (two of the whole batch, one of their half), not one."""
    texts = ["a", "b", "bad", "c"]
    backend = Scripted(script=[TimeoutError("read timed out")], limits=BatchLimits(8, 100), bad={"bad"})
    out = RequestRunner(backend, RetryPolicy(backoff_s=0), sleep=lambda s: None).translate(texts, "en", "es")
    assert [r.translation for r in out] == ["A", "B", None, "C"]
    assert [r.attempts for r in out] == carried(backend, texts) == [3, 3, 4, 4]


def test_attempts_of_texts_left_unsent_when_the_budget_runs_out():
    class Down(Scripted):
        def translate_batch(self, texts, src, tgt, *, timeout):
            self.calls.append(list(texts))
            raise ValueError("400 unsupported language pair")

    texts = [f"t{i}" for i in range(64)]
    backend = Down(limits=BatchLimits(64, 10**6))
    out = RequestRunner(backend, sleep=lambda s: None).translate(texts, "en", "xx")
    assert [r.attempts for r in out] == carried(backend, texts)
    assert min(r.attempts for r in out) >= 1  # every text went at least in the first, whole request
