"""No backend follows a redirect: a key in a header other than ``Authorization`` (Azure's
Ocp-Apim-Subscription-Key, Azure OpenAI's api-key) would go with it to the other host, and with any
client the texts would. Each backend's real client against a server on 127.0.0.1 that answers every
request with a redirect to a second server, on 127.0.0.2: nothing may arrive there, and the texts
fail with an error instead. No traffic leaves this host."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from runners import recording_runner

KEY = "redirect-test-key-0123456789"


def _serve(host: str, answer):
    landed: list[tuple[str, str, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            landed.append((self.command, self.path, dict(self.headers.items())))
            status, headers = answer()
            self.send_response(status)
            for k, v in {**headers, "Content-Length": "2", "Content-Type": "application/json"}.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_PUT = _any

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread, landed


@pytest.fixture(params=[302, 307, 308])
def redirecting(request):
    """(the redirecting endpoint, what reached it, what reached the other host)."""
    other, other_thread, landed = _serve("127.0.0.2", lambda: (200, {}))
    target = f"http://127.0.0.2:{other.server_address[1]}/elsewhere"
    hook, hook_thread, seen = _serve("127.0.0.1", lambda: (request.param, {"Location": target}))
    yield f"http://127.0.0.1:{hook.server_address[1]}", seen, landed
    for server, thread in ((hook, hook_thread), (other, other_thread)):
        server.shutdown()
        server.server_close()
        thread.join()


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
