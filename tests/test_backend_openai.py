"""The openai backend, driven through RequestRunner against a wire-level fake of the chat
completions API (tests/fakes/openai_server.py): the request the SDK sends, the details every text
records, faults and retries, replies that are not translations, batching, tokens and the identity."""

from __future__ import annotations

import json
import os
import pickle
import sys

import pytest
from pydantic import ValidationError

from biaseval.errors import ConfigError, MissingExtra
from biaseval.translate import TRANSLATORS, Retry
from biaseval.translate.backends.llm_prompts import SYSTEM_PROMPT, estimate_tokens, prompt_hash
from biaseval.translate.backends.openai import LLMRequestError, OpenAIOptions, OpenAITranslator
from biaseval.translate.ratelimit import Schedule
from biaseval.translate.runner import RequestRunner, RetryPolicy
from fakes.openai_server import (
    FINGERPRINT,
    REFUSAL,
    FakeOpenAI,
    Reply,
    chatty,
    refusal,
    swapped,
    translate,
    untranslated,
    wrapped,
    wrong_count,
)
from runners import recording_runner as runner

KEY = "sk-fake-openai-key-0123456789"
SOURCE = "I've known her for a long time, my friend works as a nurse."


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, ",".join(filter(None, [os.environ.get(name), "127.0.0.1", "localhost"])))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def make_fake():
    started = []

    def make(**kwargs):
        kwargs.setdefault("key", KEY)
        fake = FakeOpenAI(**kwargs).start()
        started.append(fake)
        return fake

    yield make
    for fake in started:
        fake.stop()
        assert fake.threads == []


@pytest.fixture
def fake(make_fake):
    return make_fake(models=("gpt-test",), reported_model="gpt-test-2026-01-01")


@pytest.fixture
def make_backend():
    built = []

    def make(fake, **options):
        options.setdefault("model", "gpt-test")
        backend = OpenAITranslator("llm", OpenAIOptions(base_url=fake.base_url, **options))
        built.append(backend)
        return backend

    yield make
    for backend in built:
        backend.close()


@pytest.fixture
def backend(make_backend, fake):
    return make_backend(fake)


# -- configuration ------------------------------------------------------------------------------------


def test_registered_with_documented_defaults():
    assert TRANSLATORS.get("openai") is OpenAITranslator and OpenAITranslator.CLOUD
    options = OpenAIOptions(model="m")
    assert (options.temperature, options.seed, options.texts_per_request) == (0.0, 0, 1)
    assert options.system_prompt == SYSTEM_PROMPT and options.user_prompt == "{text}"
    with pytest.raises(ValidationError):
        OpenAIOptions(model="m", api_key="sk-...")  # a key never goes into a config
    with pytest.raises(ValidationError, match="unknown placeholder"):
        OpenAIOptions(model="m", system_prompt="Translate into {language}.")
    with pytest.raises(ValidationError, match=r"needs \{text\}"):
        OpenAIOptions(model="m", user_prompt="Translate the text.")
    with pytest.raises(ValidationError, match="api: azure needs azure_endpoint and api_version"):
        OpenAIOptions(model="m", api="azure", azure_endpoint="https://r.openai.azure.com")
    with pytest.raises(ValidationError, match="need api: azure"):
        OpenAIOptions(model="m", api_version="2024-10-21")


def test_clear_text_urls_only_to_this_host():
    with pytest.raises(ValidationError, match="not a loopback address"):
        OpenAIOptions(model="m", base_url="http://vllm.internal:8000/v1")
    assert OpenAIOptions(model="m", base_url="http://vllm.internal:8000/v1", allow_insecure_http=True)
    assert OpenAIOptions(model="m", base_url="http://127.0.0.1:8000/v1")
    with pytest.raises(ValidationError, match="not a loopback address"):
        OpenAIOptions(model="m", api="azure", azure_endpoint="http://r.example", api_version="v")


def test_a_base_url_from_the_environment_is_held_to_the_same_rule(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://llm.example.org/v1")
    options = OpenAIOptions(model="m")
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL.*not a loopback"):
        OpenAITranslator.preflight("llm", options, {}, {}, None)
    with pytest.raises(ConfigError, match="not a loopback"):
        OpenAITranslator("llm", options)


def test_missing_key_names_the_variable(monkeypatch, fake):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY.*no_key"):
        OpenAITranslator("llm", OpenAIOptions(model="gpt-test", base_url=fake.base_url))
    with pytest.raises(ConfigError, match="MY_LLM_KEY"):
        OpenAITranslator("llm", OpenAIOptions(model="gpt-test", base_url=fake.base_url, api_key_env="MY_LLM_KEY"))


def test_a_server_without_a_key(make_fake, make_backend, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    open_server = make_fake(key="no-key")  # what the backend sends with no_key
    assert make_backend(open_server, no_key=True).translate(["Hi."], "en", "es") == ["[es] .iH"]


def test_missing_client_library_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingExtra, match=r"'openai'.*biaseval\[llm\]"):
        OpenAITranslator("llm", OpenAIOptions(model="m"))


def test_language_names_are_checked_before_anything_runs():
    from types import SimpleNamespace

    suites = {"s": SimpleNamespace(suite=SimpleNamespace(src_lang="en", targets=("es", "xq")))}
    options = OpenAIOptions(model="m")
    OpenAITranslator.preflight("llm", options, suites, {"s": ("es",)}, None)
    with pytest.raises(ConfigError, match=r"systems.llm.options.language_names: no English name for 'xq'"):
        OpenAITranslator.preflight("llm", options, suites, {"s": ("es", "xq")}, None)
    named = OpenAIOptions(model="m", language_names={"xq": "Example"})
    OpenAITranslator.preflight("llm", named, suites, {"s": ("es", "xq")}, None)
    codes_only = OpenAIOptions(model="m", system_prompt="Translate from {src_code} into {tgt_code}.")
    OpenAITranslator.preflight("llm", codes_only, suites, {"s": ("es", "xq")}, None)  # no name needed


# -- the wire -----------------------------------------------------------------------------------------


def test_one_request_per_text_with_the_configured_prompt(backend, fake):
    out = backend.translate_batch([SOURCE], "en", "es", timeout=5)
    assert out.translations == [translate(SOURCE, "es")]
    assert out.model == "gpt-test-2026-01-01"  # as the server reports it
    [req] = fake.requests
    assert req.method == "POST" and req.path == "/v1/chat/completions" and req.status == 200
    assert req.headers["authorization"] == f"Bearer {KEY}"
    body = req.body
    assert body["model"] == "gpt-test" and body["temperature"] == 0 and body["seed"] == 0
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT.format(
        src_lang="English", src_code="en", tgt_lang="Spanish", tgt_code="es")}
    assert body["messages"][1] == {"role": "user", "content": SOURCE}
    assert body["max_tokens"] == 32 + 4 * estimate_tokens(SOURCE)  # bounded from the source's length
    assert "stream" not in body and "n" not in body
    assert req.headers.get("x-stainless-retry-count", "0") == "0"


def test_every_text_records_model_fingerprint_prompt_and_tokens(make_backend, fake):
    backend = make_backend(fake, texts_per_request=3)
    single = backend.translate_batch(["Hello."], "en", "fr", timeout=5).details[0]
    assert single.fingerprint == FINGERPRINT
    assert single.prompt_hash == prompt_hash(backend.options.system_prompt, backend.options.user_prompt)
    usage = fake.requests[0]
    assert single.input_tokens > 0 and single.output_tokens > 0 and usage.status == 200
    texts = ["a short one.", "a much longer text than the first one, by far.", "mid length text."]
    batch = backend.translate_batch(texts, "en", "fr", timeout=5)
    assert batch.translations == [translate(t, "fr") for t in texts]
    assert {d.prompt_hash for d in batch.details} == {
        prompt_hash(backend.options.batch_system_prompt, backend.options.batch_user_prompt)}
    inputs = [d.input_tokens for d in batch.details]
    assert inputs[1] > inputs[2] > inputs[0]  # the request's tokens shared by length
    assert sum(d.output_tokens for d in batch.details) == sum(d.output_tokens for d in batch.details if d.output_tokens)


def test_options_not_sent_when_null(make_backend, fake):
    backend = make_backend(fake, temperature=None, seed=None, max_tokens_field="max_completion_tokens",
                           system_prompt="", extra_body={"top_k": 1})
    backend.translate_batch(["Hi."], "en", "de", timeout=5)
    body = fake.requests[0].body
    assert "temperature" not in body and "seed" not in body and "max_tokens" not in body
    assert body["max_completion_tokens"] > 0 and body["top_k"] == 1
    assert [m["role"] for m in body["messages"]] == ["user"]  # an empty system prompt is not sent


def test_azure_openai(make_fake, monkeypatch):
    fake = make_fake(key="azure-key-0123456789abcdef")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key-0123456789abcdef")
    backend = OpenAITranslator("az", OpenAIOptions(model="gpt-4o", api="azure", azure_endpoint=fake.url,
                                                   azure_deployment="mt-gpt4o", api_version="2024-10-21"))
    assert backend.translate(["Hi."], "en", "it") == ["[it] .iH"]
    [req] = fake.requests
    assert req.path == "/openai/deployments/mt-gpt4o/chat/completions" and req.query["api-version"] == ["2024-10-21"]
    assert req.headers["api-key"] == "azure-key-0123456789abcdef" and "authorization" not in req.headers
    assert backend.provider == "Azure OpenAI"
    backend.close()


# -- faults -------------------------------------------------------------------------------------------


def test_throttling_is_retried_after_the_servers_retry_after(backend, fake):
    fake.throttle(retry_after=3, times=2)
    sleeps = []
    [result] = runner(backend, sleeps).translate(["Hi."], "en", "es")
    assert result.translation == "[es] .iH" and result.attempts == 3 and result.error is None
    assert fake.count == 3  # the SDK's own retries are off: one attempt, one request
    assert sleeps == [3.0, 3.0]


@pytest.mark.parametrize("status", [500, 502, 503, 408, 409])
def test_server_errors_are_transient(backend, fake, status):
    fake.fail(status)
    [result] = runner(backend).translate(["Hi."], "en", "es")
    assert result.translation == "[es] .iH" and result.attempts == 2 and fake.count == 2


def test_timeouts_are_transient(backend, fake):
    fake.slow(10.0)
    # timing: the retry's answer comes in milliseconds; 1 s is for a loaded machine, the slow one still times out
    [result] = runner(backend, timeout_s=1.0).translate(["Hi."], "en", "es")
    assert result.translation == "[es] .iH" and result.attempts == 2


def test_permanent_errors_are_not_retried(backend, fake):
    fake.fail(400, code="invalid_value", message="Invalid value for messages.")
    [result] = runner(backend).translate(["Hi."], "en", "es")
    assert result.translation is None and result.attempts == 1 and not result.final
    assert result.error == ("LLMRequestError: HTTP 400 (invalid_value): Invalid value for messages. "
                            "[x-request-id req_fake_1]")


def test_a_spent_quota_or_a_refused_key_stops_the_system(make_backend, fake, monkeypatch):
    """No request of the system could pass: nothing is retried, no text is marked failed."""
    from biaseval.translate.base import SystemStopped

    fake.fail(429, code="insufficient_quota", message="You exceeded your current quota.")
    with pytest.raises(SystemStopped, match="quota or credit is spent.*insufficient_quota") as spent:
        runner(make_backend(fake)).translate(["Hi.", "Hello."], "en", "es")
    assert spent.value.results == [None, None] and fake.count == 1  # billing: retrying cannot help
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-0123456789")
    with pytest.raises(SystemStopped, match=r"refused the key \(HTTP 401 \(invalid_api_key\)"):
        runner(make_backend(fake)).translate(["Hi."], "en", "es")
    assert fake.count == 2


def test_errors_are_classified_and_pickle_without_the_request(backend, fake):
    fake.throttle(retry_after=2)
    with pytest.raises(LLMRequestError) as throttled:
        backend.translate_batch(["x"], "en", "es", timeout=5)
    assert backend.classify(throttled.value) == Retry(after=2.0)
    again = pickle.loads(pickle.dumps(throttled.value))
    assert (again.status, again.retry_after, again.transient) == (429, 2.0, True)
    assert throttled.value.__context__ is None and throttled.value.__cause__ is None


def test_a_wrong_model_is_permanent(make_backend, fake):
    [wrong] = runner(make_backend(fake, model="gpt-none")).translate(["Hi."], "en", "es")
    assert wrong.attempts == 1 and "HTTP 404 (model_not_found)" in wrong.error


def test_the_key_never_reaches_an_error(make_fake, make_backend, monkeypatch):
    """The server echoes the key in its error; the variable's name does not look like a secret's, so
    the backend's own scrubbing is all that keeps it out."""
    secret = "plain-value-0123456789abcdef"
    monkeypatch.setenv("LLM_ACCESS", secret)
    fake = make_fake(key=secret, echo_key_in_errors=True)
    fake.fail(400)
    [result] = runner(make_backend(fake, api_key_env="LLM_ACCESS")).translate(["Hi."], "en", "es")
    assert "received Bearer ***" in result.error and secret not in result.error


# -- replies that are not translations ----------------------------------------------------------------


@pytest.mark.parametrize("content, kind", [(refusal, "refusal"), (chatty, "explanation"), ("", "empty"),
                                           (untranslated, "wrong-language")])
def test_replies_that_are_not_translations_are_final(backend, fake, content, kind):
    fake.answer(content)
    [result] = runner(backend).translate([SOURCE], "en", "es")
    assert result.translation is None and result.final and result.attempts == 1
    assert result.error == f"not a translation ({kind})"
    assert result.details.rejected == kind
    assert result.details.raw == (content([SOURCE], "es") if callable(content) else content)
    assert result.details.fingerprint == FINGERPRINT and result.details.output_tokens is not None


def test_the_apis_own_refusal_and_content_filter(backend, fake):
    fake.answer(None, refusal="I can't help with that.")
    fake.answer("", finish_reason="content_filter")
    first, second = runner(backend).translate(["Hi.", "Hello."], "en", "es")
    assert (first.details.rejected, first.details.raw) == ("refusal", "I can't help with that.")
    assert second.details.rejected == "refusal"


def test_wrappers_are_stripped_on_the_wire(backend, fake):
    fake.answer(wrapped)
    assert backend.translate(["Hi there."], "en", "es") == ["[es] .ereht iH"]


def test_a_reply_cut_at_max_tokens_is_an_error_sent_again(make_backend, fake):
    backend = make_backend(fake, max_tokens_ratio=0.01, max_tokens_base=1)
    [result] = runner(backend).translate(["A sentence long enough to need more than one token."], "en", "es")
    assert result.translation is None and not result.final
    assert "cut at max_tokens=2 (finish_reason length)" in result.error and result.attempts == 1


# -- batches ------------------------------------------------------------------------------------------


def test_batches_of_texts_per_request(make_backend, fake):
    backend = make_backend(fake, texts_per_request=4)
    texts = [f"Sentence number {i}." for i in range(10)]
    results = runner(backend).translate(texts, "en", "de")
    assert [r.translation for r in results] == [translate(t, "de") for t in texts]
    assert [len(r.texts) for r in fake.requests] == [4, 4, 2]
    first = json.loads(fake.requests[0].body["messages"][1]["content"])
    assert first == [{"id": i + 1, "text": t} for i, t in enumerate(texts[:4])]
    assert "4 numbered texts" in fake.requests[0].body["messages"][0]["content"]


@pytest.mark.parametrize("fault", [wrong_count, swapped, "not json at all", REFUSAL])
def test_a_batch_reply_that_does_not_match_is_sent_again_in_smaller_requests(make_backend, fake, fault):
    backend = make_backend(fake, texts_per_request=4)
    fake.answer(fault)
    texts = ["one.", "two.", "three.", "four."]
    results = runner(backend).translate(texts, "en", "it")
    assert [r.translation for r in results] == [translate(t, "it") for t in texts]  # never misplaced
    assert [len(r.texts) for r in fake.requests] == [4, 2, 2]  # halves: each answered in order
    assert all(r.error is None for r in results) and [r.attempts for r in results] == [2, 2, 2, 2]


def test_a_reply_split_and_sent_again_is_billed_on_its_texts(make_backend, fake):
    """The answered batch whose reply did not match was billed: its prompt tokens are shared over its
    texts and added to theirs, so the rows sum to every request the server answered."""
    from fakes.openai_server import tokens

    backend = make_backend(fake, texts_per_request=4)
    fake.answer(wrong_count)
    texts = ["one.", "two.", "three.", "four."]
    results = runner(backend).translate(texts, "en", "it")
    prompts = [sum(tokens(m["content"]) + 4 for m in r.body["messages"]) + 3 for r in fake.requests]
    assert len(prompts) == 3 and all(r.translation for r in results)
    assert sum(r.details.input_tokens for r in results) == sum(prompts)  # the halves alone: prompts[1] + prompts[2]
    halves = [sum(r.details.input_tokens for r in results[:2]), sum(r.details.input_tokens for r in results[2:])]
    assert halves[0] > prompts[1] and halves[1] > prompts[2]


def test_a_batch_falls_back_to_one_text_per_request(make_backend, make_fake):
    fake = make_fake(batch_fault=wrong_count)  # every batch comes back a text short
    backend = make_backend(fake, texts_per_request=4)
    texts = ["one.", "two.", "three.", "four."]
    results = runner(backend).translate(texts, "en", "it")
    assert [r.translation for r in results] == [translate(t, "it") for t in texts]
    assert [(len(r.texts), r.batched) for r in fake.requests] == [(4, True), (2, True), (1, False), (1, False),
                                                                  (2, True), (1, False), (1, False)]


def test_a_rejected_text_in_a_batch_is_final_and_the_others_translated(make_backend, make_fake):
    fake = make_fake(rules=[(lambda text: "nurse" in text, Reply(refusal))])
    backend = make_backend(fake, texts_per_request=3)
    texts = ["The doctor.", "The nurse.", "The cook."]
    results = runner(backend).translate(texts, "en", "es")
    assert [r.translation for r in results] == [translate("The doctor.", "es"), None, translate("The cook.", "es")]
    assert results[1].details.rejected == "refusal" and results[1].details.raw == REFUSAL and fake.count == 1


# -- tokens: estimates, the limiter, identity ---------------------------------------------------------


def test_a_tokens_per_minute_limit_holds_in_every_window(backend):
    texts = ["A sentence of some length, for the estimate."]
    cost = backend.tokens_for(texts, "en", "es")
    estimate = OpenAITranslator.tokens_per_batch(backend.options, texts, "en", "es")
    assert cost == estimate.input + estimate.limit > 0
    schedule = Schedule(tokens_per_min=2.5 * cost, margin_s=0.0)
    starts, now = [], 0.0
    while len(starts) < 6:
        wait = schedule.start(now, 1, 0, cost)
        if wait == 0:
            starts.append(now)
        now += wait or 0.5
    for start in starts:  # never more than 2.5 requests' worth of tokens in any 60 s
        assert sum(1 for s in starts if start <= s < start + 60) * cost <= 2.5 * cost
    assert starts[-1] >= 60  # and so the later ones waited


def test_identity_is_where_texts_go_and_what_shapes_the_output(monkeypatch):
    base = OpenAIOptions(model="gpt-test", base_url="https://llm.example.org/v1")
    identity = OpenAITranslator.identity_options(base)
    assert identity["base_url"] == "https://llm.example.org/v1" and identity["model"] == "gpt-test"
    assert (identity["temperature"], identity["seed"]) == (0.0, 0)
    assert identity["prompt_hash"] == prompt_hash(base.system_prompt, base.user_prompt)
    assert "system_prompt" not in identity and "api_key_env" not in identity and "max_tokens_ratio" not in identity

    def changed(**update):
        return OpenAITranslator.identity_options(base.model_copy(update=update)) != identity

    assert changed(model="other") and changed(temperature=0.5) and changed(seed=1)
    assert changed(system_prompt="Translate into {tgt_lang}.") and changed(base_url="https://other.example/v1")
    assert changed(texts_per_request=8)  # the batch prompts, and texts sharing a request
    assert not changed(api_key_env="OTHER_KEY") and not changed(max_tokens_ratio=8.0)
    assert not changed(batch_system_prompt="Not used while texts go one by one: {texts}")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://proxy.example/v1")
    assert OpenAITranslator.identity_options(OpenAIOptions(model="m"))["base_url"] == "https://proxy.example/v1"


# -- the shipped config and the cost plan -------------------------------------------------------------


def test_the_shipped_config_validates_and_plans_without_network_or_key(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from biaseval.cli import main
    from biaseval.config import load_config
    from biaseval.run.estimate import estimate
    from biaseval.run.plan import prepare
    from biaseval.translate.backends.llm_prompts import messages_tokens, render
    from conftest import REPO

    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("BIASEVAL_CACHE_DIR", str(tmp_path / "cache"))  # an empty store
    path = REPO / "conf" / "openai.yaml"
    for command in ("validate", "plan"):
        result = CliRunner().invoke(main, [command, "--config", str(path)])
        assert result.exit_code == 0, result.output
    assert "openai: tokens " in result.output and "UTF-8 bytes / 3" in result.output

    config = load_config(path)
    [plan] = estimate(prepare(config, path.parent))
    cfg = config.systems["openai"]
    options = OpenAIOptions.model_validate(cfg.options)
    data = prepare(config, path.parent).suites["otsc-en"]
    pairs = {(row["source"], row["tgt_lang"]) for row in data.slice(0, data.size).iter_rows(named=True)}
    assert plan.requests == len(pairs) == 320
    expected_input = sum(messages_tokens([render(options.system_prompt, "en", tgt), source]) for source, tgt in pairs)
    expected_output = sum(estimate_tokens(source) for source, _ in pairs)
    assert (plan.tokens.input, plan.tokens.output) == (expected_input, expected_output)
    assert plan.cost == pytest.approx(expected_input / 1e6 * 0.40 + expected_output / 1e6 * 1.60)
    # the tokens/min limit counts prompt + max_tokens; set low enough, it is what binds
    tight = config.model_copy(update={"systems": {"openai": cfg.model_copy(update={
        "limits": cfg.limits.model_copy(update={"tokens_per_min": 10_000})})}})
    [bound] = estimate(prepare(tight, path.parent))
    assert bound.bound_by == "tokens/min"
    assert bound.quota_s == pytest.approx((plan.tokens.input + plan.tokens.limit) / 10_000 * 60)


def test_the_sdks_own_exceptions_are_classified(backend):
    import httpx2
    import openai

    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")

    def status(code, headers=None, body=None):
        response = httpx2.Response(code, headers=headers or {}, request=request)
        return openai.APIStatusError("error", response=response, body=body)

    assert backend.classify(openai.RateLimitError("slow down", response=httpx2.Response(
        429, headers={"retry-after-ms": "1500"}, request=request), body=None)) == Retry(after=1.5)
    assert backend.classify(status(503)) == Retry() and backend.classify(status(400)) is None
    assert backend.classify(openai.APITimeoutError(request)) == Retry()
    assert backend.classify(openai.APIConnectionError(request=request)) == Retry()
    assert "quota" in backend.classify(status(429, body={"code": "insufficient_quota", "message": "spent"})).reason


def test_openai_keys_and_api_key_headers_are_redacted():
    from biaseval.credentials import redact

    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    assert redact(f"Incorrect API key provided: {key}.") == "Incorrect API key provided: ***."
    assert redact("headers {'api-key': 'abc123def456ghi'}") == "headers {'api-key': '***'}"


def test_the_runner_charges_each_request_its_tokens(backend, fake):
    """Wired end to end: RequestRunner asks the limiter for each request's estimated tokens."""
    from biaseval.translate.ratelimit import Limiter

    texts = ["First sentence here.", "Second sentence here.", "Third sentence here.", "Fourth sentence here."]
    cost = max(backend.tokens_for([t], "en", "es") for t in texts)
    now = [0.0]
    limiter = Limiter(tokens_per_min=2 * cost, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s),
                      margin_s=0.0)
    results = RequestRunner(backend, RetryPolicy(backoff_s=0, timeout_s=5), acquire=limiter.acquire).translate(
        texts, "en", "es")
    assert all(r.translation for r in results) and fake.count == 4
    assert now[0] >= 60.0  # two requests' tokens fit in a minute: the third waited for the window
