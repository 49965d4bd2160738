"""The monitor's webhook carries a credential (its auth header, often its path): it goes over https,
or over http only to this host (issue 23, finding 2), it never follows a redirect with the header
on, and run.json keeps where it goes (scheme, host, port), never its path. Nothing here reaches a
host other than this one: the redirect target is a second loopback address (127.0.0.2)."""

from __future__ import annotations

import io

import pytest
import yaml
from click.testing import CliRunner
from fakes.local_http import recording_server

from biaseval.cli import main
from biaseval.config import load_config
from biaseval.config.monitor import NotifyConfig
from biaseval.monitor import notify

AUTH = "Token hook-secret-0123456789"
PATH_TOKEN = "/hooks/T000/xoxb-path-token-42"


def _config(tmp_path, **notify_fields):
    config = {"name": "hook", "suites": ["otsc-en"], "targets": {"otsc-en": ["es"]},
              "systems": {"id": {"backend": "identity", "version": "1"}},
              "monitor": {"store": str(tmp_path / "store"), "notify": notify_fields}}
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _validate(path):
    result = CliRunner().invoke(main, ["validate", "--no-data", "--config", str(path)])
    return result.exit_code, result.output + str(result.exception or "")


def test_a_clear_text_webhook_to_another_host_is_refused_naming_the_field(tmp_path, monkeypatch):
    monkeypatch.setenv("HOOK_AUTH", AUTH)
    path = _config(tmp_path, webhook=f"http://203.0.113.10:8080{PATH_TOKEN}", webhook_auth_env="HOOK_AUTH")
    code, output = _validate(path)
    assert code == 2, output
    assert "monitor.notify.webhook" in output and "203.0.113.10" in output and "allow_insecure_http" in output
    assert PATH_TOKEN not in output and "xoxb" not in output  # the error names the host, not the token


def test_allow_insecure_http_lets_a_trusted_network_through(tmp_path):
    path = _config(tmp_path, webhook=f"http://203.0.113.10:8080{PATH_TOKEN}", allow_insecure_http=True)
    assert _validate(path)[0] == 0


@pytest.mark.parametrize("url", ["https://hooks.example.com/x", "http://127.0.0.1:9/x", "http://localhost/x",
                                 "http://[::1]:8/x"])
def test_https_and_loopback_need_no_permission(tmp_path, url):
    assert _validate(_config(tmp_path, webhook=url))[0] == 0


@pytest.mark.parametrize("field, url", [
    ("webhook", "ftp://hooks.example.com/x"),
    ("webhook", "https://user:pass@hooks.example.com/x"),  # credentials belong in webhook_auth_env
    ("webhook", "https://hooks.example.com\n/x"),
    ("report_url", "http://reports.example.com/{run_id}"),
    ("report_url", "https://reports.example.com/{run}/"),  # only {run_id} is filled in
])
def test_other_bad_urls_are_refused_naming_the_field(tmp_path, field, url):
    code, output = _validate(_config(tmp_path, **{field: url}))
    assert code == 2 and f"monitor.notify.{field}" in output, output


@pytest.fixture
def redirected():
    """A webhook on 127.0.0.1 answering a redirect to a receiver on another address, 127.0.0.2."""
    other, landed = recording_server(lambda: (204, {}), "127.0.0.2")
    status = [302]
    hook, seen = recording_server(lambda: (status[0], {"Location": f"{other.url}/landing"}))
    yield f"{hook.url}{PATH_TOKEN}", status, seen, landed
    hook.stop()
    other.stop()


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_with_the_auth_header(redirected, monkeypatch, code):
    url, status, seen, landed = redirected
    status[0] = code
    monkeypatch.setenv("HOOK_AUTH", AUTH)
    stream = io.StringIO()
    failures = notify.deliver(NotifyConfig(webhook=url, webhook_auth_env="HOOK_AUTH", attempts=1), {"a": 1},
                              stream, sleep=lambda s: None)
    assert len(seen) == 1 and seen[0][2]["Authorization"] == AUTH  # the configured webhook got it ...
    assert landed == []  # ... and nothing went where it pointed
    assert len(failures) == 1 and "redirect" in failures[0] and str(code) in failures[0]
    assert PATH_TOKEN not in stream.getvalue() + failures[0] and AUTH not in stream.getvalue()


def test_run_json_keeps_the_webhooks_host_not_its_path(tmp_path):
    config = load_config(_config(tmp_path, webhook=f"https://hooks.example.com:8443{PATH_TOKEN}?token=abcdef123456",
                                 report_url="https://reports.example.com/{run_id}/report.html"))
    dumped = config.model_dump(mode="json")["monitor"]["notify"]  # what run.json records
    assert dumped["webhook"] == "https://hooks.example.com:8443"
    assert dumped["report_url"] == "https://reports.example.com/{run_id}/report.html"  # a link people open
    assert config.monitor.notify.webhook.endswith("?token=abcdef123456")  # the config in memory is whole
