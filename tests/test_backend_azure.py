"""The azure backend, driven through RequestRunner against a wire-level fake of the Translator API."""

from __future__ import annotations

import json
import os
import pickle
import sys
import threading
import time
import urllib.error
import urllib.request
from email.utils import format_datetime
from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from biaseval.config import SystemConfig
from biaseval.errors import ConfigError
from biaseval.translate.runner import RequestRunner, RetryPolicy
from biaseval.translate.packing import pack
from biaseval.translate import TRANSLATORS, Retry
from biaseval.errors import MissingExtra
from biaseval.translate.backends.azure import (
    MAX_CHARS,
    MAX_ELEMENTS,
    AzureTranslator,
    AzureTranslatorError,
    retry_after_seconds,
)
from fakes.azure_server import FakeAzureTranslator, expected
from fakes.base import ManualClock
from runners import recording_runner as runner

KEY = "fake-azure-key-0123456789abcdef"
REGION = "westeurope"


@pytest.fixture(autouse=True)
def _no_proxy_for_the_fake(monkeypatch):
    """Requests to the fake on 127.0.0.1 never go through a proxy the environment may name."""
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, ",".join(filter(None, [os.environ.get(name), "127.0.0.1", "localhost"])))


@pytest.fixture
def azure_env(monkeypatch):
    monkeypatch.setenv("AZURE_TRANSLATOR_KEY", KEY)
    monkeypatch.setenv("AZURE_TRANSLATOR_REGION", REGION)


@pytest.fixture
def make_fake():
    started = []

    def make(**kwargs):
        kwargs.setdefault("key", KEY)
        kwargs.setdefault("region", REGION)
        fake = FakeAzureTranslator(**kwargs).start()
        started.append(fake)
        return fake

    yield make
    for fake in started:
        fake.stop()
        assert fake.threads == []


@pytest.fixture
def fake(make_fake):
    return make_fake()


@pytest.fixture
def make_backend(azure_env):
    built = []

    def make(fake, **options):
        backend = AzureTranslator("azure-test", AzureTranslator.Options(endpoint=fake.endpoint, **options))
        built.append(backend)
        return backend

    yield make
    for backend in built:
        backend.close()


@pytest.fixture
def backend(make_backend, fake):
    return make_backend(fake)


# -- configuration ------------------------------------------------------------------------------------


def test_registered_with_options_that_forbid_unknown_keys():
    assert TRANSLATORS.get("azure") is AzureTranslator
    assert AzureTranslator.provider == "Azure AI Translator"
    options = AzureTranslator.Options()
    assert options.endpoint is None and options.key_env == "AZURE_TRANSLATOR_KEY"
    assert options.region_env == "AZURE_TRANSLATOR_REGION" and options.text_type == "plain"
    with pytest.raises(ValidationError):
        AzureTranslator.Options(key="abc")  # the key itself never goes into config
    with pytest.raises(ValidationError):
        AzureTranslator.Options(endpoint="api.cognitive.microsofttranslator.com")
    with pytest.raises(ValidationError):
        options.category = "x"  # frozen
    system = SystemConfig(backend="azure", version="azure 2026-06-06", options={"category": "abc-123"},
                          limits={"chars_per_min": 600_000}, retry={"max_attempts": 5, "timeout_s": 30})
    assert AzureTranslator.Options.model_validate(system.options).category == "abc-123"
    assert AzureTranslator.limits_for(options).max_items == MAX_ELEMENTS == 1000
    assert AzureTranslator.limits_for(options).max_units == MAX_CHARS == 50_000


def test_missing_key_is_a_config_error_naming_the_variable(monkeypatch, fake):
    monkeypatch.delenv("AZURE_TRANSLATOR_KEY", raising=False)
    with pytest.raises(ConfigError, match="AZURE_TRANSLATOR_KEY"):
        AzureTranslator("az", AzureTranslator.Options(endpoint=fake.endpoint))
    monkeypatch.setenv("MY_AZ_KEY", "")
    with pytest.raises(ConfigError, match="MY_AZ_KEY"):
        AzureTranslator("az", AzureTranslator.Options(endpoint=fake.endpoint, key_env="MY_AZ_KEY"))


def test_missing_client_library_names_the_extra(monkeypatch, azure_env):
    monkeypatch.setitem(sys.modules, "azure.ai.translation.text", None)  # import fails
    with pytest.raises(MissingExtra, match=r"azure-ai-translation-text.*biaseval\[azure\]"):
        AzureTranslator("az", AzureTranslator.Options())


# -- the wire -----------------------------------------------------------------------------------------


def test_one_request_per_batch_with_key_region_and_pair(make_backend, fake):
    backend = make_backend(fake, category="my-custom-model")
    out = backend.translate_batch(["a nurse", "the doctor"], "en", "hi", timeout=5)
    assert out.translations == expected(["a nurse", "the doctor"], "hi") == ["hi:A NURSE", "hi:THE DOCTOR"]
    assert out.model == "deployment=my-custom-model;system=Team"  # as asked, and the service's X-MT-System
    [req] = fake.requests
    assert req.method == "POST" and req.path == "/translate" and req.status == 200
    assert req.headers["Ocp-Apim-Subscription-Key"] == KEY
    assert req.headers["Ocp-Apim-Subscription-Region"] == REGION
    assert (req.texts, req.source, req.targets, req.category) == (["a nurse", "the doctor"], "en", ["hi"],
                                                                   "my-custom-model")
    target = req.body["inputs"][0]["targets"][0]
    assert target["allowFallback"] is False  # a custom model's results never silently come from another
    assert req.body["inputs"][0]["textType"] == "Plain"
    fake.mt_system = "Custom"
    assert backend.translate_batch(["x"], "en", "hi", timeout=5).model == "deployment=my-custom-model;system=Custom"


def test_general_model_sends_no_category(backend, fake):
    assert backend.translate_batch(["x"], "en", "fr", timeout=5).model == "system=Team"
    assert fake.requests[0].body["inputs"][0]["targets"] == [{"language": "fr"}]


def test_billed_characters_are_the_services_source_characters(backend, fake):
    """Each text records the sourceCharacters the service reports (code points: "né" is 2), and a
    text retried after a 503 is billed once (the failed request billed nothing)."""
    fake.fail_times(1, 503)
    results = runner(backend).translate(["a nurse", "né", ""], "en", "fr")
    assert [r.details.billed_chars for r in results] == [7, 2, 0]
    assert [r.attempts for r in results] == [2, 2, 2]
    assert fake.requests[-1].headers.get("Ocp-Apim-Subscription-Key") == KEY


def test_batching_respects_the_service_limits(backend, fake):
    short = [f"sentence {i}" for i in range(2_500)]
    long = ["x" * 4_000 + str(i) for i in range(30)]  # 120,000 characters in all
    too_long = "y" * (MAX_CHARS + 1)
    texts = short + long + [too_long]
    results = runner(backend).translate(texts, "en", "hi")
    assert [r.translation for r in results[:-1]] == expected(texts[:-1], "hi")
    assert results[-1].translation is None and "per-request limit of 50000" in results[-1].error
    assert all(r.status == 200 for r in fake.requests)  # the fake would have said 400 otherwise
    assert all(len(r.texts) <= 1_000 and sum(map(len, r.texts)) <= 50_000 for r in fake.requests)
    sendable = [b for b in pack(texts, backend.limits()) if not b.too_long]
    assert fake.count == len(sendable) == 5  # 1,000 texts and 50,000 characters at most per request
    assert sum(len(r.texts) for r in fake.requests) == len(texts) - 1


def test_the_fake_refuses_what_the_service_refuses(backend, fake):
    """The limits are real checks: a client that packed more would fail."""
    with pytest.raises(AzureTranslatorError) as too_many:
        backend.translate_batch(["a"] * 1_001, "en", "hi", timeout=5)
    with pytest.raises(AzureTranslatorError) as too_big:
        backend.translate_batch(["a" * 25_000, "b" * 25_001], "en", "hi", timeout=5)
    with pytest.raises(AzureTranslatorError) as too_long:
        backend.translate_batch(["a" * 50_001], "en", "hi", timeout=5)
    assert [e.value.code for e in (too_many, too_big, too_long)] == ["400072", "400077", "400050"]
    assert all(e.value.status == 400 and backend.classify(e.value) is None for e in (too_many, too_big, too_long))
    assert backend.translate_batch(["a" * 25_000, "b" * 25_000], "en", "hi", timeout=5).translations[0][:4] == "hi:A"


def test_the_fake_speaks_v3_too(fake):
    def post(path, body, headers):
        req = urllib.request.Request(f"{fake.endpoint}{path}", json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    auth = {"Ocp-Apim-Subscription-Key": KEY, "Ocp-Apim-Subscription-Region": REGION}
    status, body = post("/translate?api-version=3.0&from=en&to=hi&to=fr", [{"Text": "she"}], auth)
    assert status == 200
    assert body == [{"translations": [{"text": "hi:SHE", "to": "hi"}, {"text": "fr:SHE", "to": "fr"}]}]
    assert post("/translate?api-version=3.0&to=hi", [{"Text": "a"}], {})[1]["error"]["code"] == 401000
    status, body = post("/translate?api-version=3.0&to=hi", [{"Text": "a"}] * 1_001, auth)
    assert (status, body["error"]["code"]) == (400, 400072)
    status, body = post("/translate?api-version=3.0&to=hi&to=fr", [{"Text": "a" * 25_001}], auth)
    assert (status, body["error"]["code"]) == (400, 400077)  # characters count once per target language
    assert post("/translate?api-version=2.0&to=hi", [{"Text": "a"}], auth)[1]["error"]["code"] == 400021


# -- retries through RequestRunner -----------------------------------------------------------------------


def test_429_retry_after_is_honoured(backend, fake):
    fake.throttle(retry_after=7)
    sleeps = []
    out = runner(backend, sleeps).translate(["he", "she"], "en", "hi")
    assert [r.translation for r in out] == ["hi:HE", "hi:SHE"] and [r.attempts for r in out] == [2, 2]
    assert sleeps == [7.0]  # backoff 0, so the pause is exactly what the server asked
    assert [r.status for r in fake.requests] == [429, 200]


def test_429_retry_after_really_waited(make_backend, make_fake):
    fake = make_fake(integer_retry_after=False)
    fake.fail(429, code=429001, retry_after=0.3)
    out = RequestRunner(make_backend(fake), RetryPolicy(backoff_s=0.0, timeout_s=5)).translate(["x"], "en", "hi")
    assert out[0].translation == "hi:X" and out[0].attempts == 2 and fake.count == 2
    assert fake.requests[1].at - fake.requests[0].done >= 0.3  # measured from the 429's answer


def test_5xx_are_retried(backend, fake):
    fake.fail(500)
    fake.fail(503)
    fake.fail(502)
    runner_ = runner(backend)
    out = runner_.translate(["a", "b"], "en", "hi")
    assert [r.translation for r in out] == ["hi:A", "hi:B"] and [r.attempts for r in out] == [4, 4]
    assert runner_.requests == fake.count == 4  # the SDK retried nothing on its own


def test_timeout_is_retried(backend, fake):
    fake.slow(10.0)
    # timing: the retry's answer comes in milliseconds; 1 s is for a loaded machine, and the slow one still times out
    out = runner(backend, timeout_s=1.0).translate(["a"], "en", "hi")
    assert out[0].translation == "hi:A" and out[0].attempts == 2 and out[0].error is None
    first, second = fake.requests
    assert first.done is None or second.at < first.done  # the client gave up before the slow answer


def test_fail_twice_then_succeed_gives_one_result_per_text(backend, fake):
    fake.fail_times(2, status=503)
    texts = [f"the engineer {i}" for i in range(5)]
    runner_ = runner(backend)
    out = runner_.translate(texts, "en", "hi")
    assert len(out) == len(texts)
    assert [r.translation for r in out] == expected(texts, "hi")
    assert {r.attempts for r in out} == {3} and all(r.error is None for r in out)
    assert runner_.requests == fake.count == 3


def test_giving_up_records_the_last_error(backend, fake):
    fake.fail(503, times=3)
    out = runner(backend, max_attempts=3).translate(["a"], "en", "hi")
    assert out[0].translation is None and out[0].attempts == 3
    assert "gave up after 3 attempts" in out[0].error and "HTTP 503 (503000)" in out[0].error
    assert fake.count == 3


def test_permanent_400_is_recorded_without_retry(backend, fake):
    fake.fail(400, code=400036)
    runner_ = runner(backend)
    out = runner_.translate(["a"], "en", "hi")
    assert out[0].translation is None and out[0].attempts == 1
    assert out[0].error.startswith("AzureTranslatorError: HTTP 400 (400036): The target language is not valid")
    assert "[X-RequestId fake-1]" in out[0].error  # what support asks for
    assert runner_.requests == fake.count == 1


def test_permanent_failure_of_a_batch_is_bisected_not_retried(backend, fake):
    out = runner(backend).translate(["a", "b", "c"], "en", "not a language")
    assert all(r.translation is None and "400036" in r.error for r in out)
    sent = [tuple(r.texts) for r in fake.requests]
    assert [r.attempts for r in out] == [sum(t in s for s in sent) for t in ("a", "b", "c")]  # every request
    assert sent[0] == ("a", "b", "c") and len(sent) == len(set(sent))  # split to isolate, never resent
    assert all(r.status == 400 for r in fake.requests)


def test_wrong_region_is_a_permanent_401(make_backend, make_fake):
    fake = make_fake(region="eastus")
    out = runner(make_backend(fake)).translate(["a"], "en", "hi")
    assert out[0].translation is None and "HTTP 401 (401000)" in out[0].error and out[0].attempts == 1


# -- secrets ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key_env", ["AZURE_TRANSLATOR_KEY", "AZ_TRANSLATOR_SUBSCRIPTION"])
def test_the_key_never_reaches_a_recorded_error(make_fake, monkeypatch, key_env):
    """Even when the server echoes the key, and even under a variable name redact() does not know."""
    monkeypatch.setenv(key_env, KEY)
    monkeypatch.setenv("AZURE_TRANSLATOR_REGION", REGION)
    fake = make_fake(echo_key_in_errors=True)
    backend = AzureTranslator("az", AzureTranslator.Options(endpoint=fake.endpoint, key_env=key_env))
    try:
        fake.fail(400, code=400036)
        fake.fail(429, code=429001, retry_after=1, times=2)
        out = runner(backend, max_attempts=2).translate(["a"], "en", "hi")
        out += runner(backend, max_attempts=2).translate(["b"], "en", "hi")
        assert [r.translation for r in out] == [None, None]
        assert all("received ***" in r.error for r in out)  # the echo arrived, scrubbed
        assert not any(KEY in r.error or KEY[-12:] in r.error for r in out)

        fake.fail(500)
        with pytest.raises(AzureTranslatorError) as raised:
            backend.translate_batch(["c"], "en", "hi", timeout=5)
        exc = raised.value
        for text in (str(exc), repr(exc), repr(backend), repr(backend.options)):
            assert KEY not in text
        assert exc.__context__ is None and exc.__cause__ is None  # the SDK's exception (and request) is gone
        assert KEY.encode() not in pickle.dumps(exc)
        assert pickle.loads(pickle.dumps(exc)).status == 500

        # the raw SDK exception would have leaked it: the fake really echoes the key
        from azure.ai.translation.text import TextTranslationClient
        from azure.core.credentials import AzureKeyCredential
        from azure.core.exceptions import HttpResponseError

        fake.fail(400)
        with TextTranslationClient(endpoint=fake.endpoint, credential=AzureKeyCredential(KEY), region=REGION,
                                   retry_total=0) as client:
            with pytest.raises(HttpResponseError) as raw:
                client.translate(["d"], to_language=["hi"])
        assert KEY in str(raw.value)
    finally:
        backend.close()


# -- classification -----------------------------------------------------------------------------------


class _Response:
    def __init__(self, status, headers):
        self.status_code = status
        self.reason = "x"
        self.headers = headers

    def text(self):
        return "{}"


def test_classify_raw_sdk_errors(backend):
    from azure.core.exceptions import (HttpResponseError, ServiceRequestError, ServiceResponseError,
                                       ServiceResponseTimeoutError)

    assert backend.classify(HttpResponseError(response=_Response(429, {"Retry-After": "4"}))) == Retry(after=4.0)
    assert backend.classify(HttpResponseError(response=_Response(503, {}))) == Retry()
    assert backend.classify(HttpResponseError(response=_Response(408, {}))) == Retry()
    assert backend.classify(HttpResponseError(response=_Response(400, {"Retry-After": "4"}))) is None
    assert backend.classify(HttpResponseError(response=_Response(403, {}))) is None
    for exc in (ServiceRequestError("refused"), ServiceResponseError("reset"), ServiceResponseTimeoutError("t"),
                TimeoutError("t"), ConnectionResetError("r")):
        assert backend.classify(exc) == Retry()
    assert backend.classify(ValueError("x")) is None


def test_retry_after_header_forms():
    assert retry_after_seconds({"Retry-After": "7"}) == 7.0
    assert retry_after_seconds({"retry-after": "0.25"}) == 0.25
    when = datetime(2030, 1, 1, tzinfo=timezone.utc)
    now = (when - timedelta(seconds=30)).timestamp()
    assert retry_after_seconds({"Retry-After": format_datetime(when, usegmt=True)}, now=now) == pytest.approx(30)
    assert retry_after_seconds({"x-ms-retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({"Retry-After": "-3"}) == 0.0
    assert retry_after_seconds({}) is None


# -- throughput knobs of the fake (for benchmarks) ------------------------------------------------------


def test_concurrent_requests_share_the_backend(make_backend, make_fake):
    fake = make_fake(latency_s=1.0)
    backend = make_backend(fake)
    texts = [f"{i:02d}" + "z" * 12_498 for i in range(16)]  # 4 requests of 50,000 characters
    out = RequestRunner(backend, RetryPolicy(timeout_s=10), concurrency=4).translate(texts, "en", "hi")
    assert [r.translation for r in out] == expected(texts, "hi")
    assert fake.count == 4 and fake.max_in_flight == 4  # in parallel, not one after another
    assert len(backend._all) <= 4


def test_quota_of_requests_per_second(make_backend, make_fake):
    fake = make_fake(requests_per_s=10, burst_s=0.1, integer_retry_after=False)  # one request per 0.1 s
    # the quota's clock moves 1/32 s at each request it sees, however fast they come (a power of two:
    # the buckets' sums stay exact): 0.3125 of a request back each time, so after each admitted
    # request three are throttled
    fake.quota.use_clock(ManualClock(step=1 / 32))
    backend = make_backend(fake)
    runner_ = RequestRunner(backend, RetryPolicy(backoff_s=0.0, max_attempts=20, timeout_s=5))
    out = [runner_.translate([f"w{i}"], "en", "hi")[0] for i in range(6)]
    assert [r.translation for r in out] == [f"hi:W{i}" for i in range(6)]
    stats = fake.stats()
    assert stats.accepted_requests == 6 and stats.throttled == 5 * 3
    assert [r.status for r in fake.requests] == [200] + [429, 429, 429, 200] * 5


def test_quota_of_characters_per_minute_says_when_to_come_back(make_backend, make_fake):
    fake = make_fake(chars_per_min=600, burst_s=1.0, integer_retry_after=False)  # 10 chars/s, 10 stored
    fake.quota.use_clock(clock := ManualClock())  # the quota's time moves only when the test says
    backend = make_backend(fake)
    assert backend.translate_batch(["12345678"], "en", "hi", timeout=5).translations == ["hi:12345678"]
    with pytest.raises(AzureTranslatorError) as throttled:
        backend.translate_batch(["123456"], "en", "hi", timeout=5)
    # 4 characters short at 10 a second: 0.4 s
    assert throttled.value.status == 429 and throttled.value.retry_after == pytest.approx(0.4)
    assert backend.classify(throttled.value) == Retry(after=throttled.value.retry_after)
    clock.advance(throttled.value.retry_after - 0.01)  # not quite enough
    with pytest.raises(AzureTranslatorError):
        backend.translate_batch(["123456"], "en", "hi", timeout=5)
    clock.advance(0.011)  # and coming back then is (a millisecond over: the buckets count in floating point)
    assert backend.translate_batch(["123456"], "en", "hi", timeout=5).translations == ["hi:123456"]
    integer = make_fake(chars_per_min=600)
    with pytest.raises(AzureTranslatorError) as rounded:
        b = make_backend(integer)
        b.translate_batch(["1234567890"], "en", "hi", timeout=5)
        b.translate_batch(["1234567890"], "en", "hi", timeout=5)
    assert rounded.value.retry_after == 1.0  # whole seconds by default, as HTTP has it


def test_a_request_bigger_than_the_burst_passes_once_the_bucket_is_full(make_backend, make_fake):
    fake = make_fake(chars_per_min=6_000, burst_s=0.1, integer_retry_after=False)  # 10 chars stored
    fake.quota.use_clock(clock := ManualClock())
    backend = make_backend(fake)
    out = RequestRunner(backend, RetryPolicy(backoff_s=0.0, max_attempts=10, timeout_s=5)).translate(
        ["x" * 50, "y" * 50], "en", "hi")  # one request of 100 characters: passes, then leaves a debt
    assert out[0].translation == "hi:" + "X" * 50 and fake.stats().accepted_chars == 100
    with pytest.raises(AzureTranslatorError) as throttled:
        backend.translate_batch(["z"], "en", "hi", timeout=5)
    # 90 characters of debt plus 1, at 100 characters/s: 0.91 s
    assert throttled.value.retry_after == pytest.approx(0.91)
    clock.advance(throttled.value.retry_after + 0.001)  # (a millisecond over: floating point)
    assert backend.translate_batch(["z"], "en", "hi", timeout=5).translations == ["hi:Z"]


def test_latency_is_added_to_every_admitted_request(make_backend, make_fake):
    fake = make_fake(latency_s=0.2)
    backend = make_backend(fake)
    started = time.monotonic()
    backend.translate_batch(["a"], "en", "hi", timeout=5)
    assert time.monotonic() - started >= 0.2  # timing: a lower bound, which load only makes truer


def test_stopping_the_fake_ends_its_threads(make_backend):
    fake = FakeAzureTranslator(key=KEY, region=REGION).start()
    backend = make_backend(fake)
    backend.translate_batch(["a"], "en", "hi", timeout=5)  # leaves a keep-alive connection open
    fake.slow(30)
    worker = threading.Thread(target=lambda: pytest.raises(Exception, backend.translate_batch, ["b"], "en", "hi",
                                                           timeout=10))
    worker.start()
    while fake.count < 2:
        time.sleep(0.01)  # timing: a polling interval
    started = time.monotonic()
    fake.stop()
    worker.join(5)
    # stop() cut the 30-s answer short: well before it, or the client's own 10-s timeout
    # timing: stopping takes well under a second; 9 s (and the 5-s join) still tell it from 10 and 30
    assert fake.threads == [] and not worker.is_alive() and time.monotonic() - started < 9
