"""The Google Cloud Translation v3 backend, driven by the real RequestRunner against a wire-level fake
(tests/fakes/google_server.py) over both of the client's transports, gRPC and REST."""

from __future__ import annotations

import email.utils
import re
import sys
import threading
import time

import pytest
from fakes.base import ManualClock
from fakes.google_server import MAX_CODEPOINTS, MAX_STRINGS, Failure, FakeGoogleTranslate
from pydantic import ValidationError

from biaseval.errors import ConfigError
from biaseval.translate.runner import RequestRunner, RetryPolicy
from biaseval.translate.base import TRANSLATORS, BatchLimits, Retry
from biaseval.errors import MissingExtra
from biaseval.translate.backends.google import GoogleTranslator

TRANSPORTS = ["grpc", "rest"]
FAST = RetryPolicy(max_attempts=5, backoff_s=0.01, max_backoff_s=0.05, timeout_s=5.0)
T = FakeGoogleTranslate.translation


@pytest.fixture
def fake():
    before = set(threading.enumerate())
    with FakeGoogleTranslate() as server:
        yield server
    # (_DummyThread: a thread of gRPC's core that called into Python, e.g. for auth metadata)
    left = [t.name for t in set(threading.enumerate()) - before
            if t.is_alive() and not isinstance(t, threading._DummyThread)]
    assert not left, f"threads left running after the fake stopped: {left}"


@pytest.fixture
def make():
    """Builds backends (anonymous unless told) and closes them all afterwards."""
    built: list[GoogleTranslator] = []

    def build(server: FakeGoogleTranslate, transport: str, **options) -> GoogleTranslator:
        options = {"project": "proj", "credentials": "anonymous", "transport": transport,
                   "endpoint": server.endpoint(transport), **options}
        backend = GoogleTranslator("google", GoogleTranslator.Options(**options))
        built.append(backend)
        return backend

    yield build
    for backend in built:
        backend.close()


def run(backend, texts, policy=FAST, tgt="hi", **kwargs):
    sleeps: list[float] = []
    if "sleep" not in kwargs:  # sleeps are recorded, not slept: the runner's clock moves only by them
        kwargs["sleep"] = sleeps.append
        kwargs.setdefault("clock", lambda: sum(sleeps))
    runner = RequestRunner(backend, policy, seed=0, **kwargs)
    return runner.translate(texts, "en", tgt), sleeps, runner


# --- configuration --------------------------------------------------------------------------

def test_registered_with_its_options():
    assert TRANSLATORS.get("google") is GoogleTranslator
    assert GoogleTranslator.provider == "Google Cloud Translation v3"
    opts = GoogleTranslator.Options(project="p", model="general/translation-llm")
    assert (opts.location, opts.transport, opts.credentials) == ("global", "grpc", "default")
    assert opts.model_name == "projects/p/locations/global/models/general/translation-llm"
    full = "projects/p/locations/us-central1/models/NM123"
    assert GoogleTranslator.Options(project="p", location="us-central1", model=full).model_name == full
    for bad in ({}, {"project": "p", "transport": "http"}, {"project": "p", "credentials": "key"},
                {"project": "p", "api_key": "x"}):
        with pytest.raises(ValidationError):
            GoogleTranslator.Options(**bad)
    # where the texts went is part of the system's identity: an emulator's outputs are never reused for real ones
    assert {"endpoint", "transport", "credentials", "model"}.isdisjoint(GoogleTranslator.OPERATIONAL)


def test_limits_are_the_apis():
    backend = GoogleTranslator("g", GoogleTranslator.Options(project="p", credentials="anonymous", transport="rest"))
    try:
        assert backend.limits() == BatchLimits(max_items=1024, max_units=30_000, unit="chars")
        assert (MAX_STRINGS, MAX_CODEPOINTS) == (1024, 30_000)  # what the fake enforces
    finally:
        backend.close()


def test_missing_library_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.cloud.translate_v3", None)
    with pytest.raises(MissingExtra, match="google-cloud-translate"):
        GoogleTranslator("g", GoogleTranslator.Options(project="p", credentials="anonymous"))


def test_missing_adc_is_a_config_error(monkeypatch):
    import google.auth
    import google.auth.exceptions

    def no_adc(**kwargs):
        raise google.auth.exceptions.DefaultCredentialsError("Your default credentials were not found.")

    monkeypatch.setattr(google.auth, "default", no_adc)
    with pytest.raises(ConfigError, match="Application Default Credentials"):
        GoogleTranslator("g", GoogleTranslator.Options(project="p"))


# --- requests, batching, model ----------------------------------------------------------------

@pytest.mark.parametrize("transport", TRANSPORTS)
def test_batches_stay_within_the_limits(fake, make, transport):
    backend = make(fake, transport)
    texts = [f"the doctor {i} finished her shift" for i in range(2500)] + ["x" * 7000 + str(i) for i in range(10)]
    out, sleeps, runner = run(backend, texts)
    assert [r.translation for r in out] == [T(t, "hi") for t in texts]
    assert all(r.error is None and r.attempts == 1 for r in out)
    requests = fake.requests
    assert len(requests) == runner.requests >= 5
    assert all(len(r.contents) <= MAX_STRINGS and r.codepoints <= MAX_CODEPOINTS for r in requests)
    assert sum(len(r.contents) for r in requests) == len(texts)  # each text sent once
    assert {r.status for r in requests} == {"OK"}
    assert {(r.parent, r.source, r.target, r.mime_type, r.model) for r in requests} == {
        ("projects/proj/locations/global", "en", "hi", "text/plain", "")}
    assert sleeps == []


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_fake_rejects_requests_over_the_limits(fake, make, transport):
    from google.api_core import exceptions

    backend = make(fake, transport)
    for texts in (["a"] * (MAX_STRINGS + 1), ["x" * 20_000, "y" * 10_001]):
        with pytest.raises(exceptions.BadRequest) as caught:  # REST maps 400 to BadRequest
            backend.translate_batch(texts, "en", "hi", timeout=5)
        assert backend.classify(caught.value) is None
    assert fake.count_where(status="INVALID_ARGUMENT") == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_reported_model_is_recorded(fake, make, transport):
    out, _, _ = run(make(fake, transport, model="general/translation-llm"), ["the nurse"])
    assert out[0].translation == T("the nurse", "hi") and out[0].model == "general/translation-llm"
    assert fake.requests[-1].model == "projects/proj/locations/global/models/general/translation-llm"
    out, _, _ = run(make(fake, transport), ["the nurse"])
    assert out[0].model is None and fake.requests[-1].model == ""


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_billed_characters_are_the_sources_code_points(fake, make, transport):
    """Google bills the characters sent and does not report them: each text records its code points."""
    out, _, _ = run(make(fake, transport), ["the nurse", "né", "ok"])
    assert [r.details.billed_chars for r in out] == [9, 2, 2]


# --- retries --------------------------------------------------------------------------------

@pytest.mark.parametrize("transport", TRANSPORTS)
def test_throttling_waits_the_delay_the_server_asks(fake, make, transport):
    fake.script(Failure.throttled(retry_delay_s=3.5))
    out, sleeps, runner = run(make(fake, transport), ["a", "b"])
    assert [r.translation for r in out] == [T("a", "hi"), T("b", "hi")]
    assert [r.attempts for r in out] == [2, 2] and runner.requests == 2
    assert len(sleeps) == 1 and sleeps[0] == pytest.approx(3.5)
    assert [r.status for r in fake.requests] == ["RESOURCE_EXHAUSTED", "OK"]


def test_retry_after_header_is_honoured_over_rest(fake, make):
    fake.script(Failure.throttled(retry_delay_s=None, retry_after="7"))
    out, sleeps, _ = run(make(fake, "rest"), ["a"])
    assert out[0].translation == T("a", "hi") and out[0].attempts == 2
    assert sleeps == [pytest.approx(7.0)]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_server_errors_are_retried(fake, make, transport):
    fake.script(Failure.internal(), Failure.unavailable())
    if transport == "rest":
        fake.script(Failure("UNAVAILABLE", "Bad gateway", http_status=502))
    out, sleeps, _ = run(make(fake, transport), ["a", "b", "c"])
    attempts = 4 if transport == "rest" else 3
    assert [r.translation for r in out] == [T(t, "hi") for t in "abc"]
    assert [r.attempts for r in out] == [attempts] * 3 and len(sleeps) == attempts - 1
    assert [r.status for r in fake.requests][:2] == ["INTERNAL", "UNAVAILABLE"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_timeout_is_retried(fake, make, transport):
    fake.script(Failure.slow(2.0))
    policy = RetryPolicy(max_attempts=3, backoff_s=0.01, timeout_s=0.3)
    out, sleeps, runner = run(make(fake, transport), ["slow text"], policy=policy)
    assert out[0].translation == T("slow text", "hi") and out[0].attempts == 2
    assert runner.requests == 2 and len(fake.requests) == 2
    first, second = fake.requests
    # the client gave up and asked again before the slow answer was due (over gRPC the server sees the
    # cancellation, so when it stopped says nothing)
    assert second.at < first.at + 2.0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_fail_twice_then_succeed(fake, make, transport):
    fake.script(Failure.unavailable(), times=2)
    texts = ["he is a doctor", "she is a doctor", "they are doctors"]
    out, sleeps, runner = run(make(fake, transport), texts)
    assert len(out) == len(texts)
    assert [r.translation for r in out] == [T(t, "hi") for t in texts]
    assert all(r.attempts == 3 and r.error is None for r in out)
    assert runner.requests == len(fake.requests) == 3 and len(sleeps) == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_giving_up_after_max_attempts(fake, make, transport):
    fake.script(Failure.unavailable(), times=10)
    out, _, runner = run(make(fake, transport), ["a"], policy=RetryPolicy(max_attempts=3, backoff_s=0))
    assert out[0].translation is None and out[0].attempts == 3 and runner.requests == 3
    assert out[0].error.startswith("gave up after 3 attempts: ServiceUnavailable: 503")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_permanent_400_is_recorded_without_retry(fake, make, transport):
    fake.script(Failure.invalid("Target language 'xx' is not supported."))
    out, sleeps, runner = run(make(fake, transport), ["one text"])
    assert out[0].translation is None and out[0].attempts == 1
    assert re.match(r"(InvalidArgument|BadRequest): 400", out[0].error) and "'xx' is not supported" in out[0].error
    assert sleeps == [] and runner.requests == len(fake.requests) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_bad_text_is_isolated_and_the_rest_translated(make, transport):
    with FakeGoogleTranslate(poison=("BAD",)) as server:
        out, sleeps, _ = run(make(server, transport), ["a", "b", "BAD", "c"])
        assert [r.translation for r in out] == [T("a", "hi"), T("b", "hi"), None, T("c", "hi")]
        assert "Invalid text: 'BAD'" in out[2].error
        # attempts: every request that carried the text (the whole batch, then halves until alone)
        assert [r.attempts for r in out] == [sum(t in q.contents for q in server.requests) for t in ("a", "b", "BAD", "c")]
        assert out[2].attempts == 3
        assert sleeps == []


# --- secrets ---------------------------------------------------------------------------------

@pytest.mark.parametrize("transport", TRANSPORTS)
def test_secrets_never_reach_the_recorded_error(fake, make, transport, monkeypatch):
    import google.auth
    from google.oauth2.credentials import Credentials

    token = "ya29.a0-fake-access-token-9f8e7d6c5b4a"  # minted at run time: not in the environment
    key = "AIzaSyFAKE-0123456789abcdefghijkl"
    monkeypatch.setenv("GOOGLE_API_KEY", key)
    monkeypatch.setattr(google.auth, "default", lambda **kw: (Credentials(token=token), None))
    backend = make(fake, transport, credentials="default")  # ADC, through a local channel for gRPC

    assert backend.translate_batch(["hi"], "en", "hi", timeout=5).translations == [T("hi", "hi")]
    assert fake.requests[-1].headers["authorization"] == f"Bearer {token}"

    echo = f"Request with authorization={{authorization}} (Authorization: {{authorization}}) and key {key} denied"
    fake.script(Failure("PERMISSION_DENIED", echo, reason="ACCESS_DENIED"))
    with pytest.raises(Exception) as caught:
        backend.translate_batch(["a"], "en", "hi", timeout=5)
    exc = caught.value
    assert exc.__context__ is None and exc.__cause__ is None and getattr(exc, "response", None) is None
    for text in (str(exc), repr(exc)):
        assert token not in text and key not in text and "denied" in text

    fake.script(Failure("PERMISSION_DENIED", echo))
    out, sleeps, _ = run(backend, ["a"])
    assert out[0].translation is None and sleeps == []
    assert re.match(r"(PermissionDenied|Forbidden): 403", out[0].error) and "denied" in out[0].error
    assert token not in out[0].error and key not in out[0].error and "ya29" not in out[0].error


# --- quota and latency (what the benchmark relies on) -----------------------------------------

@pytest.mark.parametrize("transport", TRANSPORTS)
def test_quota_mode_throttles_and_the_runner_recovers(make, transport):
    rate, burst_s, tick = 40.0, 0.25, 0.01
    with FakeGoogleTranslate(requests_per_s=rate, burst_s=burst_s) as server:
        # the quota's clock moves 10 ms at each request it sees, however fast they come: 0.4 of a
        # token back per request, so requests beyond the 10 the bucket holds are throttled for sure
        # (on the wall clock, a loaded machine could send too slowly to be throttled at all)
        server.quota.use_clock(ManualClock(step=tick))
        backend = make(server, transport)
        backend.limits = lambda: BatchLimits(max_items=1, max_units=MAX_CODEPOINTS)  # one request per text
        texts = [f"text {i}" for i in range(30)]
        policy = RetryPolicy(max_attempts=30, backoff_s=0.005, max_backoff_s=0.02, timeout_s=5)
        out, _, _ = run(backend, texts, policy=policy, concurrency=6, sleep=time.sleep)
        assert [r.translation for r in out] == [T(t, "hi") for t in texts]
        assert server.count_where(status="RESOURCE_EXHAUSTED") > 0 and server.count_where(status="OK") == len(texts)
        stats = server.stats()
        assert stats["OK"] == len(texts) and stats["codepoints_ok"] == sum(map(len, texts))
        # admitted requests never outrun the bucket: what it held, plus what the ticks put back
        assert stats["OK"] <= rate * burst_s + rate * tick * len(server.requests)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_chars_per_minute_quota_asks_for_the_right_delay(make, transport):
    from google.api_core import exceptions

    with FakeGoogleTranslate(chars_per_min=600) as server:  # 10 code points/s, 10 at once
        server.quota.use_clock(clock := ManualClock())  # the quota's time moves only when the test says
        backend = make(server, transport)
        backend.translate_batch(["0123456789"], "en", "hi", timeout=5)
        with pytest.raises(exceptions.TooManyRequests) as caught:
            backend.translate_batch(["01234"], "en", "hi", timeout=5)
        verdict = backend.classify(caught.value)
        # 5 code points short at 10 a second: 0.5 s
        assert isinstance(verdict, Retry) and verdict.after == pytest.approx(0.5)
        clock.advance(verdict.after + 0.001)  # and coming back then is enough (a millisecond over: floating point)
        assert backend.translate_batch(["01234"], "en", "hi", timeout=5).translations


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_latency_is_added_and_requests_run_concurrently(make, transport, caplog):
    with FakeGoogleTranslate(latency_s=0.2) as server:
        backend = make(server, transport)
        backend.limits = lambda: BatchLimits(max_items=1, max_units=MAX_CODEPOINTS)
        out, _, _ = run(backend, [str(i) for i in range(16)], concurrency=16)
        assert all(r.translation is not None for r in out)
        spans = [(r.at, r.done) for r in server.requests]
        assert len(spans) == 16 and all(done - at >= 0.2 for at, done in spans)  # each waited
        most = max(sum(a <= at < d for a, d in spans) for at, _ in spans)
        assert most >= 4  # and not one after the other: at least four at a time
        assert "Connection pool is full" not in caplog.text  # more than requests' 10 connections


# --- classify, without a server ---------------------------------------------------------------

def test_classify_verdicts():
    import google.auth.exceptions as auth
    import requests
    from google.api_core import exceptions as ex

    backend = GoogleTranslator("g", GoogleTranslator.Options(project="p", credentials="anonymous", transport="rest"))
    try:
        transient = [ex.TooManyRequests("x"), ex.ResourceExhausted("x"), ex.ServiceUnavailable("x"),
                     ex.InternalServerError("x"), ex.BadGateway("x"), ex.GatewayTimeout("x"),
                     ex.DeadlineExceeded("x"), ex.PermissionDenied("User Rate Limit Exceeded"),
                     requests.exceptions.ConnectTimeout("x"), requests.exceptions.ReadTimeout("x"),
                     requests.exceptions.ConnectionError("x"), auth.TransportError("x"),
                     TimeoutError("x"), ConnectionResetError("x")]
        permanent = [ex.InvalidArgument("x"), ex.PermissionDenied("Permission denied"),
                     ex.PermissionDenied("Daily Limit Exceeded"), ex.Unauthenticated("x"), ex.NotFound("x"),
                     ex.FailedPrecondition("x"), auth.RefreshError("x"), ValueError("x")]
        assert all(backend.classify(e) == Retry(None) for e in transient)
        assert all(backend.classify(e) is None for e in permanent)

        class Response:
            def __init__(self, value):
                self.headers = {"Retry-After": value}

        assert backend.classify(ex.TooManyRequests("x", response=Response("12"))) == Retry(12.0)
        later = email.utils.formatdate(time.time() + 30, usegmt=True)  # whole seconds: up to 1 s less
        # timing: microseconds pass between the two lines; 4 s of slack is for a machine that stalls
        assert 25 < backend.classify(ex.ServiceUnavailable("x", response=Response(later))).after <= 30
        json_detail = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.250s"}
        assert backend.classify(ex.TooManyRequests("x", details=[json_detail])) == Retry(1.25)
    finally:
        backend.close()
