"""No backend follows a redirect: a key in a header other than ``Authorization`` (Azure's
Ocp-Apim-Subscription-Key, Azure OpenAI's api-key) would go with it to the other host, and with any
client the texts would. Each backend's real client against a server on 127.0.0.1 that answers every
request with a redirect to a second server, on 127.0.0.2: nothing may arrive there, and the texts
fail with an error instead. No traffic leaves this host."""

from __future__ import annotations

import pytest
from fakes.local_http import recording_server
from runners import recording_runner

KEY = "redirect-test-key-0123456789"


@pytest.fixture(params=[302, 307, 308])
def redirecting(request):
    """(the redirecting endpoint, what reached it, what reached the other host)."""
    other, landed = recording_server(lambda: (200, {}), "127.0.0.2", body=b"{}")
    hook, seen = recording_server(lambda: (request.param, {"Location": f"{other.url}/elsewhere"}), body=b"{}")
    yield hook.url, seen, landed
    hook.stop()
    other.stop()


def _azure(endpoint, monkeypatch):
    from biaseval.translate.backends.azure import AzureTranslator

    monkeypatch.setenv("AZURE_TRANSLATOR_KEY", KEY)
    return AzureTranslator("az", AzureTranslator.Options(endpoint=endpoint))


def _deepl(endpoint, monkeypatch):
    from biaseval.translate.backends.deepl import DeepLTranslator

    monkeypatch.setenv("DEEPL_AUTH_KEY", KEY)
    return DeepLTranslator("dl", DeepLTranslator.Options(server_url=endpoint))


def _openai(endpoint, monkeypatch):
    from biaseval.translate.backends.openai import OpenAIOptions, OpenAITranslator

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return OpenAITranslator("gpt", OpenAIOptions(model="m", base_url=f"{endpoint}/v1"))


def _azure_openai(endpoint, monkeypatch):
    from biaseval.translate.backends.openai import OpenAIOptions, OpenAITranslator

    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    return OpenAITranslator("aoai", OpenAIOptions(model="m", api="azure", azure_endpoint=endpoint,
                                                  api_version="2024-10-21"))


def _google(endpoint, monkeypatch):
    from biaseval.translate.backends.google import GoogleOptions, GoogleTranslator

    return GoogleTranslator("g", GoogleOptions(project="p", transport="rest", credentials="anonymous",
                                               endpoint=endpoint))


def _aws(endpoint, monkeypatch):
    from biaseval.translate.backends.aws import AwsOptions, AwsTranslator

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEKEYID0000001")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", KEY)
    return AwsTranslator("amz", AwsOptions(region="us-east-1", endpoint=endpoint))


BACKENDS = {"azure": _azure, "deepl": _deepl, "openai": _openai, "azure-openai": _azure_openai, "google": _google,
            "aws": _aws}


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_no_backend_follows_a_redirect(redirecting, monkeypatch, name):
    endpoint, seen, landed = redirecting
    backend = BACKENDS[name](endpoint, monkeypatch)
    try:
        [result] = recording_runner(backend, max_attempts=1).translate(["The doctor came."], "en", "es")
    finally:
        getattr(backend, "close", lambda: None)()
    assert seen, "the backend never reached its endpoint"
    assert landed == [], f"{name} followed the redirect: {landed}"
    assert result.translation is None and result.error
