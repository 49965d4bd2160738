"""The redactor (``biaseval.credentials.redact``) against generated secrets and wrappings: whatever a
secret holds (printable or control characters, quotes, backslashes, non-ASCII), however a message
spells it — raw, stripped, escaped by ``repr`` of a str or of bytes, JSON, URL-encoded, base64 of
``user:secret`` as basic auth sends it, inside the text of a real header-validation failure of
http.client, requests or h11 (httpx's wire layer) — and whatever surrounds it, no form of it is left.

A secret shorter than ``MIN_SECRET_LENGTH`` (8) characters, once stripped, is not looked for: it
would match ordinary text. Reading one is refused instead (``read_secret``)."""

from __future__ import annotations

import base64
import http.client
import json
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from leaks import in_base64, leaked_forms

from biaseval import credentials
from biaseval.credentials import MIN_SECRET_LENGTH, Secret, read_secret, redact, remember
from biaseval.errors import ConfigError


def _http_client(secret: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", 9)  # never connects: headers are checked as they are put
    conn.putrequest("POST", "/")
    try:
        conn.putheader("Authorization", secret)
    except (ValueError, UnicodeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return f"sent {secret}"


def _requests(secret: str) -> str:
    import requests

    try:
        requests.Request("POST", "http://127.0.0.1:9/", headers={"Ocp-Apim-Subscription-Key": secret}).prepare()
    except (ValueError, requests.exceptions.RequestException) as exc:
        return f"{type(exc).__name__}: {exc}"
    return f"sent {secret}"


def _h11(secret: str) -> str:
    import h11

    try:
        # httpx hands h11 the header's bytes (UTF-8 where it is not ASCII)
        h11.Request(method="POST", target="/", headers=[("Host", "x"), ("api-key", secret.encode("utf-8"))])
    except h11.LocalProtocolError as exc:
        return f"LocalProtocolError: {exc}"
    return f"sent {secret}"


def _basic(secret: str) -> str:
    token = base64.b64encode(f"user:{secret}".encode("utf-8", "surrogatepass")).decode()
    return f"Authorization: Basic {token}"


WRAPPINGS = {
    "raw": lambda s: s,
    "repr": repr,
    "bytes repr": lambda s: repr(s.encode("utf-8", "surrogatepass")),
    "json": json.dumps,
    "json unicode": lambda s: json.dumps(s, ensure_ascii=False),
    "quote": lambda s: quote(s, safe=""),
    "quote path": quote,
    "quote_plus": quote_plus,
    "basic auth": _basic,
    "base64url": lambda s: base64.urlsafe_b64encode(s.encode("utf-8", "surrogatepass")).decode(),
    "http.client": _http_client,
    "requests": _requests,
    "h11": _h11,
    "a dict's repr": lambda s: repr({"headers": {"api-key": s}}),
}

SECRETS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40) \
    .filter(lambda s: len(s.strip()) >= MIN_SECRET_LENGTH)
ENV_SECRETS = SECRETS.filter(lambda s: "\x00" not in s)  # an environment variable cannot hold NUL
AROUND = st.text(max_size=30)


@pytest.fixture(autouse=True)
def forget():
    credentials.forget()
    yield
    credentials.forget()


def _check(secret: str, text: str) -> None:
    out = redact(text)
    assert leaked_forms(secret, out) == [], out
    assert not in_base64(secret.strip(), out), out


@pytest.mark.property
@given(SECRETS, st.sampled_from(sorted(WRAPPINGS)), AROUND, AROUND)
@example("k3y-SECRET\n", "requests", "error: ", "")
@example("sess-TOKEN-value\n", "http.client", "", "")
@example("***12345", "raw", "", "12345")  # a secret the redaction's own marker could complete
@example("abcdefgh\\", "repr", "", "")
def test_no_form_of_a_remembered_secret_survives(secret, wrapping, before, after):
    credentials.forget()
    remember(secret)
    _check(secret, f"{before}{WRAPPINGS[wrapping](secret)}{after}")


@pytest.mark.property
@given(SECRETS, st.lists(st.sampled_from(sorted(WRAPPINGS)), min_size=2, max_size=2))
def test_wrappings_of_wrappings(secret, wrappings):
    credentials.forget()
    remember(secret)
    text = secret
    for name in wrappings:
        text = WRAPPINGS[name](text)
    out = redact(text)
    assert secret.strip() not in out and repr(secret.strip())[1:-1] not in out


@pytest.mark.property
@given(ENV_SECRETS, st.sampled_from(sorted(WRAPPINGS)))
def test_a_secret_read_from_the_environment_is_known_to_the_redactor(monkeypatch_module, secret, wrapping):
    credentials.forget()
    monkeypatch_module.setenv("SOME_VARIABLE", secret)  # a name that says nothing about a secret
    try:
        value = read_secret("SOME_VARIABLE", "the test key")
    except ConfigError as exc:  # a control character inside the value: refused, without the value
        assert leaked_forms(secret, str(exc)) == []
        return
    finally:
        monkeypatch_module.delenv("SOME_VARIABLE")
    assert value.reveal() == secret.strip()
    _check(secret, WRAPPINGS[wrapping](secret))
    _check(secret, WRAPPINGS[wrapping](value.reveal()))


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.mark.property
@given(ENV_SECRETS, st.sampled_from(["AZURE_TRANSLATOR_KEY", "OPENAI_API_KEY", "AWS_SESSION_TOKEN", "DB_PASSWORD"]))
def test_variables_named_like_secrets_are_known_without_being_read(monkeypatch_module, secret, name):
    credentials.forget()
    monkeypatch_module.setenv(name, secret)
    try:
        _check(secret, _requests(secret))
    finally:
        monkeypatch_module.delenv(name)


def test_short_values_are_not_looked_for():
    remember("abc")
    assert redact("abc abcabc") == "abc abcabc"


def test_a_secret_never_prints_itself():
    secret = Secret("hunter2-hunter2", "HOOK_AUTH")
    for shown in (repr(secret), str(secret), f"{secret}", f"{secret!r}", repr([secret]), json.dumps(str(secret))):
        assert "hunter2" not in shown and "HOOK_AUTH" in shown
    assert secret.reveal() == "hunter2-hunter2"


@pytest.mark.parametrize("value, reason", [("", "not set"), (" \n", "not set"), ("abcd\nefghij", "control character"),
                                           ("abcd\x7fefghij", "control character")])
def test_what_read_secret_refuses(monkeypatch, value, reason):
    monkeypatch.setenv("K", value)
    with pytest.raises(ConfigError, match=reason) as caught:
        read_secret("K", "the key")
    assert "K" in str(caught.value) and (not value.strip() or value.strip() not in str(caught.value))


def test_a_short_key_is_read_but_not_looked_for(monkeypatch):
    monkeypatch.setenv("K", "abc\n")
    assert read_secret("K", "the key").reveal() == "abc"
    assert redact("abc") == "abc"


def test_describe_is_redacted_and_cut_after():
    remember("k3y-SECRET\n")
    error = ValueError("Invalid header value b'k3y-SECRET\\n'" + "x" * 5000)
    text = credentials.describe(error, limit=200)
    assert text.startswith("ValueError: Invalid header value b'***'") and len(text) <= 200


def test_a_webhooks_path_and_query_are_secrets_its_host_is_not():
    credentials.remember_url("https://hooks.example.com:8443/services/T000/B000/xoxb-path-token?token=abcdef123456")
    text = redact("POST https://hooks.example.com:8443/services/T000/B000/xoxb-path-token?token=abcdef123456 "
                  "failed; path %2Fservices%2FT000%2FB000%2Fxoxb-path-token")
    assert "hooks.example.com:8443" in text and "xoxb" not in text and "abcdef123456" not in text
