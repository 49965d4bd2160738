"""A suite's own LLM prompts (MiTTenS's ``inputs``): items carry the passage and the prompt, an LLM system
with ``prompt: dataset`` sends the prompt alone (no system message), every other system the passage,
and the translation store keys exactly what is sent, so the two never share a stored translation."""

from __future__ import annotations

import os

import numpy as np
import pytest
import yaml
from pydantic import ValidationError

from biaseval.config import load_config
from biaseval.errors import ConfigError
from biaseval.run.estimate import estimate
from biaseval.run.keys import key_hash
from biaseval.run.plan import cache_for, plan_live, prepare, sent_items
from biaseval.translate.backends.llm_prompts import messages_tokens, prompt_hash
from biaseval.translate.backends.openai import OpenAIOptions, OpenAITranslator
from fakes.openai_server import FakeOpenAI, translate

KEY = "sk-fake-openai-key-0123456789"
PROMPT = "Translate the following text from English to Spanish.\n\nEnglish: She is a doctor.\nSpanish:"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, ",".join(filter(None, [os.environ.get(name), "127.0.0.1", "localhost"])))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_the_dataset_prompt_goes_alone_as_the_user_message():
    with FakeOpenAI(key=KEY, models=("gpt-test",), target="es") as fake:
        backend = OpenAITranslator("llm", OpenAIOptions(model="gpt-test", base_url=fake.base_url, prompt="dataset"))
        out = backend.translate_batch([PROMPT], "en", "es", timeout=5)
        assert out.translations == [translate(PROMPT, "es")]
        assert fake.requests[0].body["messages"] == [{"role": "user", "content": PROMPT}]
        assert out.details[0].prompt_hash == prompt_hash("", "{text}")
        backend.close()


def test_the_switch_is_part_of_the_identity_and_takes_one_text_per_request():
    template, dataset = OpenAIOptions(model="m"), OpenAIOptions(model="m", prompt="dataset")
    assert OpenAITranslator.identity_options(template) != OpenAITranslator.identity_options(dataset)
    assert (OpenAITranslator.sends(template), OpenAITranslator.sends(dataset)) == ("source", "prompt")
    # the templates are not sent, so changing them changes nothing
    assert OpenAITranslator.identity_options(dataset) == OpenAITranslator.identity_options(
        dataset.model_copy(update={"system_prompt": "Other words for {tgt_lang}."}))
    with pytest.raises(ValidationError, match="texts_per_request must be 1"):
        OpenAIOptions(model="m", prompt="dataset", texts_per_request=4)


def _config(tmp_path, suites, targets, systems) -> object:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"name": "prompts", "suites": suites, "targets": targets, "systems": systems,
                                    "cache": {"path": str(tmp_path / "store")}}), encoding="utf-8")
    return path


LLM = {"backend": "openai", "version": "fake 2026-01", "options": {"model": "gpt-test", "prompt": "dataset",
                                                                     "base_url": "http://127.0.0.1:9/v1"}}
MT = {"backend": "apertium", "version": "apertium-eng-spa", "options": {"pair": "eng-spa"}}


def test_what_is_sent_is_what_is_keyed(tmp_path, data_dir):
    path = _config(tmp_path, ["mittens-2xx"], {"mittens-2xx": ["es"]}, {"llm": LLM, "mt": MT})
    config = load_config(path)
    prepared = prepare(config, path.parent)
    plans = plan_live(prepared, cache_for(config, path.parent))
    items = prepared.suites["mittens-2xx"].slice(0, prepared.suites["mittens-2xx"].size)
    prompts = [key_hash("en", "es", p) for p in items["prompt"]]
    passages = [key_hash("en", "es", s) for s in items["source"]]
    llm_keys = np.concatenate(list(plans["llm"].keys.values()))
    mt_keys = np.concatenate(list(plans["mt"].keys.values()))
    assert llm_keys.tolist() == prompts and mt_keys.tolist() == passages
    assert not set(prompts) & set(passages)  # never one stored translation for both
    sent = sent_items(items, config.systems["llm"])
    assert sent["source"].to_list() == items["prompt"].to_list() and sent["item_id"].equals(items["item_id"])
    assert sent_items(items, config.systems["mt"]) is items
    # the cost plan counts the prompt as the one message it is
    [llm, _] = estimate(prepare(config, path.parent))
    assert llm.tokens.input == sum(messages_tokens([p]) for p in items["prompt"])


def test_a_suite_without_prompts_is_refused_before_anything_runs(tmp_path, data_dir):
    path = _config(tmp_path, ["otsc-en", "mittens-2xx"], {"mittens-2xx": ["es"]}, {"llm": LLM})
    with pytest.raises(ConfigError, match=r"systems\.llm\.options\.prompt: dataset, but suite otsc-en has no prompts"):
        prepare(load_config(path), path.parent)
    ok = _config(tmp_path, ["otsc-en", "mittens-2xx"], {"mittens-2xx": ["es"]},
                 {"llm": {**LLM, "suites": ["mittens-2xx"]}})
    prepare(load_config(ok), ok.parent)
