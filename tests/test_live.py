"""The live-translation machinery with a scripted backend: packing, rate limits, retries, bisection."""

from __future__ import annotations

import pytest

from biaseval.live import LiveRunner, RetryPolicy, TokenBuckets, pack
from biaseval.secrets import redact
from biaseval.translators.base import BatchLimits, BatchOutput, Retry, TextTranslator


class Throttled(Exception):
    def __init__(self, after=None):
        super().__init__("429 Too Many Requests")
        self.after = after


class Scripted(TextTranslator):
    """Upper-cases texts; fails according to a script of exceptions, one per request."""

    provider = "scripted"

    def __init__(self, script=(), limits=BatchLimits(3, 20), bad=()):
        super().__init__("scripted", None)
        self.script = list(script)
        self._limits = limits
        self.bad = set(bad)
        self.calls: list[list[str]] = []

    def limits(self):
        return self._limits

    def translate_batch(self, texts, src, tgt, *, timeout):
        self.calls.append(list(texts))
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


def test_token_buckets_rate_and_burst():
    now = [0.0]
    buckets = TokenBuckets(requests_per_s=2, chars_per_min=600, burst_s=1.0, clock=lambda: now[0])
    delays = [buckets.reserve(1, 1) for _ in range(6)]
    # 2 requests/s with one second of burst: 3 go at once, then one every 0.5 s
    assert delays == pytest.approx([0, 0, 0, 0.5, 1.0, 1.5])
    now[0] = 100.0
    # 600 chars/min = 10 chars/s: a 100-char request, then the next waits for the debt to be paid
    assert buckets.reserve(1, 100) == 0
    assert buckets.reserve(1, 10) == pytest.approx(9.0)


def test_long_run_rate_never_exceeds_the_limit():
    now = [0.0]
    buckets = TokenBuckets(requests_per_s=5, clock=lambda: now[0])
    sent = []
    for _ in range(500):
        now[0] += buckets.reserve(1, 0)
        sent.append(now[0])
    # in any window [0, T]: at most rate * T plus the burst (rate * burst_s + 1)
    for t in (1.0, 10.0, 50.0, sent[-1]):
        assert sum(1 for s in sent if s <= t) <= 5 * t + 6 + 1e-9
    assert len(sent) / sent[-1] == pytest.approx(5.0, rel=0.02)


def test_retries_honour_retry_after_and_count_attempts():
    backend = Scripted(script=[Throttled(after=7.0), TimeoutError("read timed out"), None])
    sleeps = []
    runner = LiveRunner(backend, RetryPolicy(max_attempts=5, backoff_s=0.1), sleep=sleeps.append, seed=1)
    out = runner.translate(["a", "b"], "en", "es")
    assert [r.translation for r in out] == ["A", "B"]
    assert [r.attempts for r in out] == [3, 3]
    assert sleeps[0] >= 7.0 and sleeps[1] <= 0.2  # Retry-After first, then jittered backoff
    assert runner.requests == 3


def test_giving_up_records_the_error_for_every_text():
    backend = Scripted(script=[Throttled()] * 10)
    out = LiveRunner(backend, RetryPolicy(max_attempts=3, backoff_s=0), sleep=lambda s: None).translate(["a", "b"], "en", "es")
    assert all(r.translation is None and r.attempts == 3 and "gave up after 3 attempts" in r.error for r in out)


def test_permanent_failure_is_isolated_by_bisection():
    backend = Scripted(limits=BatchLimits(8, 100), bad={"bad"})
    out = LiveRunner(backend, sleep=lambda s: None).translate(["a", "b", "bad", "c"], "en", "es")
    assert [r.translation for r in out] == ["A", "B", None, "C"]
    assert "400 invalid text" in out[2].error


def test_too_long_text_is_an_error_not_a_request():
    backend = Scripted(limits=BatchLimits(3, 5))
    out = LiveRunner(backend, sleep=lambda s: None).translate(["short", "much too long"], "en", "es")
    assert out[0].translation == "SHORT" and out[1].translation is None
    assert "over the provider's per-request limit of 5" in out[1].error
    assert backend.calls == [["short"]]


def test_rate_limit_is_applied_per_request():
    backend = Scripted(limits=BatchLimits(1, 100))
    now = [0.0]
    buckets = TokenBuckets(requests_per_s=1, burst_s=0, clock=lambda: now[0])
    waits = []

    def sleep(s):
        waits.append(s)
        now[0] += s

    LiveRunner(backend, reserve=buckets.reserve, sleep=sleep).translate(list("abcd"), "en", "es")
    assert waits == pytest.approx([1.0, 1.0, 1.0])


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
    out = LiveRunner(backend, sleep=lambda s: None).translate([f"t{i}" for i in range(256)], "en", "xx")
    assert all(r.translation is None and "unsupported language pair" in r.error for r in out)
    assert len(backend.calls) <= 2 * 9 + 2  # the budget: a handful of requests, not 511


def test_retry_after_pauses_the_shared_limiter():
    now = [0.0]
    buckets = TokenBuckets(requests_per_s=100, burst_s=0, clock=lambda: now[0])
    backend = Scripted(script=[Throttled(after=5.0), None])
    LiveRunner(backend, reserve=buckets.reserve, pause=buckets.pause, sleep=lambda s: None).translate(["a"], "en", "es")
    # another actor asking now must wait out the server's Retry-After too
    assert buckets.reserve(1, 0) >= 5.0 - 1e-9
