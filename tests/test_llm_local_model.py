"""A tiny causal LM, built and trained here (tests/tiny_llm.py), behind a local OpenAI-compatible
server that calls ``generate``: the openai backend translates through it with no network, and every
text records the served model, the fingerprint, the prompt hash and the token counts. The model is
checked to give every reply exactly before it is served, on whatever processor trains it."""

from __future__ import annotations

import pytest

from biaseval.translate.backends.llm_prompts import prompt_hash
from biaseval.translate.backends.openai import OpenAIOptions, OpenAITranslator
from biaseval.translate.runner import RequestRunner, RetryPolicy
from tiny_llm import PAIRS, build_tiny_chat_lm, serve

pytestmark = pytest.mark.slow  # trains a model


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """Trained on the very prompts the backend sends (its default templates, English to Spanish)."""
    options = OpenAIOptions(model="tiny-chat", no_key=True)
    prompts = [OpenAITranslator.messages_for(options, [source], "en", "es")[0] for source, _ in PAIRS]
    return build_tiny_chat_lm(tmp_path_factory.mktemp("tiny-llm"), prompts, [target for _, target in PAIRS])


def test_a_local_causal_lm_through_the_openai_backend(model, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with serve(model, served_name="tiny-chat") as base_url:
        backend = OpenAITranslator("tiny", OpenAIOptions(model="tiny-chat", base_url=base_url, no_key=True))
        sources = [source for source, _ in PAIRS]
        results = RequestRunner(backend, RetryPolicy(max_attempts=1, timeout_s=120)).translate(sources, "en", "es")
        assert [r.translation for r in results] == [target for _, target in PAIRS]
        assert all(r.error is None and r.attempts == 1 and r.model == "tiny-chat" for r in results)
        details = [r.details for r in results]
        assert {d.fingerprint for d in details} == {f"tiny-{d.fingerprint[5:]}" for d in details} and \
            len({d.fingerprint for d in details}) == 1
        assert {d.prompt_hash for d in details} == {prompt_hash(backend.options.system_prompt,
                                                                backend.options.user_prompt)}
        assert all(d.input_tokens > 40 and 10 <= d.output_tokens <= 20 for d in details)
        assert backend.provider == "OpenAI-compatible API at 127.0.0.1"

        # asked for Italian, the model (which learnt only Spanish) answers in Spanish: not a translation
        [italian] = RequestRunner(backend, RetryPolicy(max_attempts=1, timeout_s=120)).translate(sources[:1], "en", "it")
        assert italian.translation is None and italian.final and italian.details.rejected == "wrong-language"
        assert italian.details.raw == PAIRS[0][1]
        backend.close()


def test_a_model_that_did_not_learn_its_replies_is_never_served(tmp_path):
    """The fixture's check is real: with no training the model answers wrongly, and building it fails
    naming the replies it does not give (so a CPU on which training falls short fails loudly here,
    not as a wrong translation in the test above)."""
    options = OpenAIOptions(model="tiny-chat", no_key=True)
    prompts = [OpenAITranslator.messages_for(options, [source], "en", "es")[0] for source, _ in PAIRS[:2]]
    with pytest.raises(RuntimeError, match=r"did not learn its replies in 0 steps") as failed:
        build_tiny_chat_lm(tmp_path, prompts, [target for _, target in PAIRS[:2]], max_steps=0)
    assert str(failed.value).count("wanted ") == 2 and PAIRS[1][1] in str(failed.value)
