"""Credentials never go in clear text to another host: a live system's ``http://`` endpoint must be
a loopback address unless its options say ``allow_insecure_http: true``. Checked when the config is
validated (``biaseval validate``, and ``sweep`` before it connects anywhere); nothing here sends a
byte anywhere but 127.0.0.1 — a guard fails the test on any other connection or name lookup."""

from __future__ import annotations

import ipaddress
import socket

import pytest
import yaml
from click.testing import CliRunner

from biaseval.cli import main
from biaseval.config import SystemConfig
from biaseval.errors import ConfigError
from biaseval.pipeline import sweep
from biaseval.run.plan import identity_of

ELSEWHERE = "http://translate.example.invalid:8080"  # a reserved name: never a real host

SYSTEMS = {
    "g": {"backend": "google", "version": "v3", "options": {"project": "p", "transport": "rest"}},
    "az": {"backend": "azure", "version": "2026-06-06", "options": {}},
    "amz": {"backend": "aws", "version": "2026-12", "options": {"region": "us-east-1"}},
}


def _loopback(host) -> bool:
    if host in (None, "", "localhost"):
        return True
    try:
        return ipaddress.ip_address(str(host).strip("[]")).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def no_traffic_elsewhere(monkeypatch):
    """Any connection or name lookup for a host other than this one fails the test."""
    tried = []
    real_connect, real_connect_ex, real_getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def check(address):
        host = address[0] if isinstance(address, tuple) else None
        if isinstance(address, tuple) and not _loopback(host):
            tried.append(address)
            raise AssertionError(f"connection to {address} attempted")

    def connect(self, address):
        check(address)
        return real_connect(self, address)

    def connect_ex(self, address):
        check(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if not _loopback(host):
            tried.append(host)
            raise AssertionError(f"name lookup of {host!r} attempted")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield
    assert tried == []


def write_config(tmp_path, name: str, options: dict):
    system = {**SYSTEMS[name], "version": "t"}
    system["options"] = {**system["options"], **options}
    config = {"name": "tls", "suites": ["winomt-hi"], "systems": {name: system},
              "cache": {"path": str(tmp_path / "store")}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(SYSTEMS))
def test_validate_refuses_clear_text_to_another_host(tmp_path, name):
    path = write_config(tmp_path, name, {"endpoint": ELSEWHERE})
    result = CliRunner().invoke(main, ["validate", "--no-data", "--config", str(path)])
    assert result.exit_code != 0
    message = result.output + str(result.exception or "")
    assert f"systems.{name}.options.endpoint" in message  # the field, with the file and line
    assert f"{path}:" in message
    assert "translate.example.invalid" in message and "clear text" in message and "allow_insecure_http" in message


@pytest.mark.parametrize("name", sorted(SYSTEMS))
def test_allow_insecure_http_lets_it_through(tmp_path, name):
    path = write_config(tmp_path, name, {"endpoint": ELSEWHERE, "allow_insecure_http": True})
    result = CliRunner().invoke(main, ["validate", "--no-data", "--config", str(path)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:8080", "http://127.3.2.1:9", "http://[::1]:8080",
                                      "http://localhost:5000", "https://translate.example.invalid"])
@pytest.mark.parametrize("name", sorted(SYSTEMS))
def test_loopback_and_https_need_no_permission(tmp_path, name, endpoint):
    path = write_config(tmp_path, name, {"endpoint": endpoint})
    result = CliRunner().invoke(main, ["validate", "--no-data", "--config", str(path)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("endpoint", ["http://10.0.0.7:80", "http://127.0.0.1.example.invalid", "http://[::2]:80",
                                      "http://localhost.example.invalid", "HTTP://translate.example.invalid"])
def test_what_only_looks_local_is_refused(tmp_path, endpoint):
    path = write_config(tmp_path, "az", {"endpoint": endpoint})
    result = CliRunner().invoke(main, ["validate", "--no-data", "--config", str(path)])
    assert result.exit_code != 0 and "systems.az.options.endpoint" in result.output + str(result.exception or "")


def test_sweep_refuses_before_connecting_anywhere(tmp_path, monkeypatch):
    import ray

    def no_ray(*args, **kwargs):  # workers are beyond this process's guard: none may start
        raise AssertionError("Ray was started for a config that sends the key in clear text")

    monkeypatch.setattr(ray, "init", no_ray)
    monkeypatch.setenv("AZURE_TRANSLATOR_KEY", "a-key-that-must-stay-home")
    path = write_config(tmp_path, "az", {"endpoint": ELSEWHERE})
    with pytest.raises(ConfigError, match=r"systems\.az\.options\.endpoint.*clear text"):
        sweep(path, tmp_path / "run")
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").rglob("*.parquet"))


def test_allow_insecure_http_is_operational():
    """It says where requests may go, not what comes back: cached translations stay shared."""
    for name, system in SYSTEMS.items():
        base = {**system["options"], "endpoint": "https://translate.example.invalid"}
        plain = SystemConfig(backend=system["backend"], version="t", options=base)
        allowed = SystemConfig(backend=system["backend"], version="t",
                               options={**base, "allow_insecure_http": True})
        assert identity_of(plain) == identity_of(allowed), name


def test_aws_endpoint_from_the_environment_is_held_to_the_same_rule(monkeypatch):
    """boto3 also takes its endpoint from AWS_ENDPOINT_URL(_TRANSLATE): refused when the backend is
    built (on the worker, before any request)."""
    from biaseval.translate.backends.aws import AwsOptions, AwsTranslator

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEKEYID0000001")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "fake-session-token")
    monkeypatch.setenv("AWS_ENDPOINT_URL_TRANSLATE", ELSEWHERE)
    with pytest.raises(ConfigError, match="translate.example.invalid.*allow_insecure_http"):
        AwsTranslator("amz", AwsOptions(region="us-east-1"))
    AwsTranslator("amz", AwsOptions(region="us-east-1", allow_insecure_http=True))  # built, nothing sent
    monkeypatch.setenv("AWS_ENDPOINT_URL_TRANSLATE", "http://127.0.0.1:9")
    AwsTranslator("amz", AwsOptions(region="us-east-1"))
