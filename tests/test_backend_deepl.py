"""The deepl backend, through the official SDK and RequestRunner, against a wire-level fake of the
DeepL API (tests/fakes/deepl_server.py). No Ray here: the sweep is in test_deepl_sweep.py."""

from __future__ import annotations

import os
import pickle
import sys

import polars as pl
import pytest
from pydantic import ValidationError

from biaseval.errors import ConfigError, MissingExtra
from biaseval.translate import TRANSLATORS, Retry, Stop, SystemStopped
from biaseval.translate.backends.deepl import (
    FREE_URL,
    MAX_BODY_BYTES,
    MAX_TEXTS,
    PRO_URL,
    DeepLError,
    DeepLTranslator,
    source_code,
    target_code,
)
from biaseval.translate.runner import RequestRunner, RetryPolicy
from fakes.deepl_server import FakeDeepL, Failure, expected
from runners import recording_runner as runner

KEY = "fake-deepl-key-0123456789abcdef:fx"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    """The key where the backend looks; requests to the fake never go through a proxy."""
    monkeypatch.setenv("DEEPL_AUTH_KEY", KEY)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, ",".join(filter(None, [os.environ.get(name), "127.0.0.1", "localhost"])))


@pytest.fixture
def fake():
    with FakeDeepL(key=KEY) as server:
        yield server
    assert server.threads == []


@pytest.fixture
def make_backend():
    built = []

    def make(fake, **options):
        backend = DeepLTranslator("deepl-test", DeepLTranslator.Options(server_url=fake.url, **options))
        built.append(backend)
        return backend

    yield make
    for backend in built:
        backend.close()


# -- configuration ------------------------------------------------------------------------------------


def test_registered_with_options_that_forbid_unknown_keys():
    assert TRANSLATORS.get("deepl") is DeepLTranslator and DeepLTranslator.CLOUD
    options = DeepLTranslator.Options()
    assert options.server_url is None and options.key_env == "DEEPL_AUTH_KEY"
    with pytest.raises(ValidationError):
        DeepLTranslator.Options(auth_key="abc")  # the key itself never goes into a config
    with pytest.raises(ValidationError):
        DeepLTranslator.Options(server_url="api.deepl.com")
    with pytest.raises(ValidationError):
        DeepLTranslator.Options(model_type="fast")
    with pytest.raises(ValidationError):
        DeepLTranslator.Options(language_codes={"en": "English"})
    assert DeepLTranslator.Options(split_sentences=0).split_sentences == "0"  # YAML's 0
    assert DeepLTranslator.Options(language_codes={"en": "en-gb"}).language_codes == {"en": "EN-GB"}
    limits = DeepLTranslator.limits_for(options)
    assert (limits.max_items, limits.unit) == (MAX_TEXTS, "json_bytes") == (50, "json_bytes")
    assert MAX_BODY_BYTES - 2048 < limits.max_units < MAX_BODY_BYTES
    assert DeepLTranslator.limits_for(DeepLTranslator.Options(context="x" * 1000)).max_units == limits.max_units - 1002


def test_language_codes():
    assert [target_code(c, {}) for c in ("de", "en", "pt", "zh", "no", "pt-PT", "en-GB", "zh-Hant")] == \
        ["DE", "EN-US", "PT-BR", "ZH-HANS", "NB", "PT-PT", "EN-GB", "ZH-HANT"]
    assert target_code("en", {"en": "EN-GB"}) == "EN-GB"
    assert [source_code(c) for c in ("en", "en-GB", "pt-BR", "zh-Hant", "no")] == ["EN", "EN", "PT", "ZH", "NB"]


def test_identity_has_the_server_and_every_option_that_changes_the_output():
    identity = DeepLTranslator.identity_options
    base = identity(DeepLTranslator.Options())
    assert "key_env" not in base and "allow_insecure_http" not in base
    assert base["server_url"] is None
    # Free and Pro are one service, picked by the key; any other server is another system
    assert identity(DeepLTranslator.Options(server_url=PRO_URL + "/")) == base
    assert identity(DeepLTranslator.Options(server_url=FREE_URL)) == base
    assert identity(DeepLTranslator.Options(server_url="http://127.0.0.1:9"))["server_url"] == "http://127.0.0.1:9"
    assert identity(DeepLTranslator.Options(key_env="OTHER")) == base
    for change in ({"formality": "more"}, {"model_type": "quality_optimized"}, {"glossary_id": "g"},
                   {"context": "she"}, {"split_sentences": "0"}, {"preserve_formatting": True},
                   {"language_codes": {"en": "EN-GB"}}):
        assert identity(DeepLTranslator.Options(**change)) != base, change


def test_clear_text_to_another_host_is_refused():
    with pytest.raises(ValidationError, match="allow_insecure_http"):
        DeepLTranslator.Options(server_url="http://deepl-proxy.example.invalid:8080")
    assert DeepLTranslator.Options(server_url="http://deepl-proxy.example.invalid:8080", allow_insecure_http=True)
    assert DeepLTranslator.Options(server_url="http://localhost:8080")


def test_missing_key_or_sdk(monkeypatch):
    monkeypatch.delenv("DEEPL_AUTH_KEY")
    with pytest.raises(ConfigError, match="DEEPL_AUTH_KEY"):
        DeepLTranslator("d", DeepLTranslator.Options())
    monkeypatch.setenv("DEEPL_AUTH_KEY", KEY)
    monkeypatch.setitem(sys.modules, "deepl", None)  # import fails
    with pytest.raises(MissingExtra, match=r"biaseval\[deepl\]"):
        DeepLTranslator("d", DeepLTranslator.Options())


def test_the_key_picks_free_or_pro(monkeypatch):
    assert DeepLTranslator("d", DeepLTranslator.Options()).server_url == FREE_URL  # ends with ":fx"
    monkeypatch.setenv("DEEPL_AUTH_KEY", "pro-key-0123456789")
    assert DeepLTranslator("d", DeepLTranslator.Options()).server_url == PRO_URL
    assert DeepLTranslator("d", DeepLTranslator.Options(server_url="https://x.test")).server_url == "https://x.test"


# -- the wire -----------------------------------------------------------------------------------------


def test_one_json_request_per_batch_with_the_sdks_shape(make_backend, fake):
    backend = make_backend(fake, formality="prefer_less", model_type="prefer_quality_optimized", glossary_id="g-1",
                           context="A story about a woman.", split_sentences="nonewlines", preserve_formatting=True)
    out = backend.translate_batch(["a nurse", "the doctor"], "en", "de", timeout=5)
    assert out.translations == expected(["a nurse", "the doctor"], "DE") == ["DE:A NURSE", "DE:THE DOCTOR"]
    assert out.model == "quality_optimized"  # the model type DeepL says it used
    assert [d.billed_chars for d in out.details] == [7, 10]
    [req] = fake.requests
    assert (req.method, req.path, req.content_type) == ("POST", "/v2/translate", "application/json")
    assert req.headers["Authorization"] == f"DeepL-Auth-Key {KEY}"
    assert (req.texts, req.source_lang, req.target_lang) == (["a nurse", "the doctor"], "EN", "DE")
    assert req.fields == {"show_billed_characters": True, "formality": "prefer_less",
                          "model_type": "prefer_quality_optimized", "glossary_id": "g-1",
                          "context": "A story about a woman.", "split_sentences": "nonewlines",
                          "preserve_formatting": True}
    assert fake.character_count == 17  # the context is not billed


def test_options_left_unset_are_not_sent_and_no_model_is_claimed(make_backend, fake):
    out = make_backend(fake).translate_batch(["hello"], "en", "pt", timeout=5)
    assert out.translations == ["PT-BR:HELLO"] and out.model is None
    assert fake.requests[0].fields == {"show_billed_characters": True}
    make_backend(fake, language_codes={"pt": "PT-PT", "en": "EN-GB"}).translate_batch(["olá"], "pt", "en", timeout=5)
    assert (fake.requests[1].source_lang, fake.requests[1].target_lang) == ("PT", "EN-GB")


def test_packing_within_50_texts_and_128_kib(make_backend, fake):
    backend = make_backend(fake)
    texts = [f"text {i}" for i in range(120)]
    results = runner(backend).translate(texts, "en", "es")
    assert [r.translation for r in results] == expected(texts, "ES")
    assert [len(r.texts) for r in fake.requests] == [50, 50, 20]
    # Devanagari travels as \\uXXXX escapes (6 bytes a character): 2 texts of 10,000 fill most of a body
    fake.reset()
    big = ["न" * 10_000] * 2 + ["न" * 5_000] * 2
    results = runner(backend).translate(big, "en", "de")
    assert all(r.translation for r in results)
    sizes = [r.size for r in fake.requests]
    assert len(sizes) == 2 and max(sizes) <= MAX_BODY_BYTES and sizes[0] > 0.9 * MAX_BODY_BYTES
    fake.reset()
    [too_long] = runner(backend).translate(["न" * 22_000], "en", "de")
    assert too_long.translation is None and "over the provider's per-request limit" in too_long.error
    assert fake.count == 0  # never sent


def test_plan_counts_the_requests_sent(make_backend, fake):
    backend = make_backend(fake)
    rows = [("en", "es", f"short {i}") for i in range(70)] + [("en", "de", "x" * 70_000)] * 3 + \
           [("en", "es", "y" * 20)] * 2
    texts = pl.DataFrame(rows, schema=["src_lang", "tgt_lang", "source"], orient="row")
    planned = DeepLTranslator.requests_for_task(backend.options, texts)
    run = runner(backend)
    for (src, tgt), group in texts.group_by(["src_lang", "tgt_lang"], maintain_order=True):
        run.translate(group["source"].to_list(), src, tgt)
    assert planned == fake.count == run.requests == 2 + 3  # 72 Spanish texts in 2; each German one alone


# -- failures -----------------------------------------------------------------------------------------


def test_429_is_retried_after_retry_after_and_the_sdk_does_not_retry_on_its_own(make_backend, fake):
    backend = make_backend(fake)
    fake.throttle(retry_after=3)
    sleeps = []
    [result] = runner(backend, sleeps).translate(["hello"], "en", "fr")
    assert result.translation == "FR:HELLO" and result.attempts == 2
    assert [r.status for r in fake.requests] == [429, 200]  # one request per attempt
    assert sleeps and sleeps[0] >= 3  # the server's Retry-After, not the SDK's backoff


@pytest.mark.parametrize("failure", [Failure(status=500), Failure(status=503), Failure(status=502),
                                     Failure(hang_s=10.0)])
def test_5xx_and_timeouts_are_retried(make_backend, fake, failure):
    backend = make_backend(fake)
    fake.script(failure)
    # timing: the retry's answer comes in milliseconds; 1 s is for a loaded machine, the 10-s hang still times out
    [result] = runner(backend, timeout_s=1.0).translate(["hello"], "en", "it")
    assert result.translation == "IT:HELLO" and result.attempts == 2
    assert fake.count == 2


def test_classify():
    backend = DeepLTranslator("d", DeepLTranslator.Options())
    assert backend.classify(DeepLError("x", status=429, retry_after=2.0, transient=True)) == Retry(after=2.0)
    assert backend.classify(DeepLError("x", status=400)) is None
    assert isinstance(backend.classify(DeepLError("x", status=456)), Stop)
    assert isinstance(backend.classify(DeepLError("x", status=403)), Stop)
    assert backend.classify(TimeoutError()) == Retry()


def test_a_permanent_failure_is_recorded_not_retried(make_backend, fake):
    backend = make_backend(fake, formality="more")  # Korean has no formal register: DeepL answers 400
    [result] = runner(backend).translate(["hello"], "en", "ko")
    assert result.translation is None and "HTTP 400" in result.error and "formality" in result.error
    assert fake.count == 1


def test_456_stops_the_system_without_retries(make_backend, fake):
    backend = make_backend(fake)
    fake.set_limit(60)  # 50 texts of one character, then nothing more
    run = RequestRunner(backend, RetryPolicy(backoff_s=0.0, timeout_s=5.0), concurrency=1)
    texts = [chr(ord("a") + i % 26) for i in range(150)]
    with pytest.raises(SystemStopped, match=r"DeepL quota exceeded \(HTTP 456.*Rerun the same command") as stopped:
        run.translate(texts, "en", "es")
    assert [r.status for r in fake.requests] == [200, 456]  # nothing after the 456, and no retry of it
    done = stopped.value.results
    assert [r.translation for r in done[:50]] == expected(texts[:50], "ES") and done[50:] == [None] * 100
    with pytest.raises(SystemStopped):  # a stopped runner sends nothing more
        run.translate(["z"], "en", "es")
    assert fake.count == 2
    fake.set_limit(None)  # the quota restored: a new runner goes on
    assert runner(backend).translate(["z"], "en", "es")[0].translation == "ES:Z"


def test_456_with_requests_in_flight_sends_nothing_more(make_backend, fake):
    backend = make_backend(fake)
    fake.set_limit(0)
    run = RequestRunner(backend, RetryPolicy(backoff_s=0.0, timeout_s=5.0), concurrency=4)
    with pytest.raises(SystemStopped):
        run.translate([f"t{i}" for i in range(400)], "en", "es")  # 8 requests, 4 threads
    assert 1 <= fake.count <= 4 and fake.count_status(456) == fake.count


def test_456_while_a_batch_is_being_split_keeps_the_half_that_was_translated(make_backend, fake):
    backend = make_backend(fake)
    fake.script(Failure(status=400), None, Failure(status=456))  # the batch fails, its halves: ok, quota
    with pytest.raises(SystemStopped) as stopped:
        runner(backend).translate(["a", "b", "c", "d"], "en", "es")
    assert [r.translation if r else None for r in stopped.value.results] == ["ES:A", "ES:B", None, None]


def test_a_refused_key_stops_the_system_and_never_leaks(monkeypatch, fake):
    monkeypatch.setenv("MY_DEEPL_AUTH", "wrong-key-abcdefgh:fx")  # a variable name redact() does not know
    fake.echo_key_in_errors = True
    backend = DeepLTranslator("d", DeepLTranslator.Options(server_url=fake.url, key_env="MY_DEEPL_AUTH"))
    with pytest.raises(SystemStopped) as stopped:
        runner(backend).translate(["hello"], "en", "es")
    assert "403" in stopped.value.reason and "MY_DEEPL_AUTH" in stopped.value.reason
    assert "wrong-key-abcdefgh" not in stopped.value.reason and fake.count == 1


def test_errors_never_hold_the_key(monkeypatch, fake):
    monkeypatch.setenv("MY_DEEPL_AUTH", KEY)
    fake.echo_key_in_errors = True  # a careless server repeats the key in its error text
    backend = DeepLTranslator("d", DeepLTranslator.Options(server_url=fake.url, key_env="MY_DEEPL_AUTH"))
    fake.fail(500)
    with pytest.raises(DeepLError) as caught:
        backend.translate_batch(["hello"], "en", "es", timeout=5)
    error = caught.value
    assert "received DeepL-Auth-Key ***" in str(error) and KEY not in str(error)
    assert error.__cause__ is None and error.__context__ is None  # no SDK exception (or request) behind it
    assert KEY.encode() not in pickle.dumps(error)
    assert pickle.loads(pickle.dumps(error)).transient
    fake.fail(400)
    [result] = runner(backend).translate(["hello"], "en", "es")
    assert "***" in result.error and KEY not in result.error


# -- the shipped config -------------------------------------------------------------------------------


def test_shipped_config_validates_and_plans_without_a_key_or_network(monkeypatch):
    from click.testing import CliRunner

    from biaseval.cli import main
    from conftest import REPO

    monkeypatch.delenv("DEEPL_AUTH_KEY")
    config = str(REPO / "conf" / "deepl.yaml")
    checked = CliRunner().invoke(main, ["validate", "--config", config])
    assert checked.exit_code == 0 and "1 system," in checked.output, checked.output
    planned = CliRunner().invoke(main, ["plan", "--config", config])
    assert planned.exit_code == 0, planned.output
    line = next(line for line in planned.output.splitlines() if line.startswith("deepl")).split()
    # system, backend, items, distinct texts, in store, to send, requests: 80 texts per language, 50 a request
    assert line[:7] == ["deepl", "deepl", "320", "320", "0", "320", "≥8"]


def test_the_fake_answers_the_sdks_usage_and_languages_calls(fake):
    import deepl

    fake.set_limit(1000)
    client = deepl.Translator(KEY, server_url=fake.url)
    client.translate_text(["abc", "de"], source_lang="EN", target_lang="FR")
    usage = client.get_usage()
    assert (usage.character.count, usage.character.limit) == (5, 1000)
    targets = {lang.code: lang.supports_formality for lang in client.get_target_languages()}
    assert targets["EN-US"] is False and targets["DE"] is True and "EN" not in targets
    assert "EN" in {lang.code for lang in client.get_source_languages()}
    with pytest.raises(deepl.AuthorizationException):
        deepl.Translator("wrong-key", server_url=fake.url).get_usage()
