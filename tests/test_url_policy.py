"""One rule for every URL biaseval sends to (``biaseval.urls.check_url``): https, or http to this host
(loopback) only unless ``allow_insecure_http``; no credentials in the URL, nothing a client library
could read another way. Checked when the config is validated, naming the exact field (issue 23,
finding 7: the openai backend named its options block, not ``base_url``); proven on generated
strings, each read by the HTTP libraries biaseval's clients use, which must see the same host."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import pytest
import yaml
from click.testing import CliRunner
from fakes.local_http import POLL_S
from hypothesis import example, given
from hypothesis import strategies as st

from biaseval.cli import main
from biaseval.urls import check_url, origin

ELSEWHERE = "http://10.0.0.7:8000"


def _config(tmp_path, system: dict, **extra) -> str:
    config = {"name": "u", "suites": ["otsc-en"], "targets": {"otsc-en": ["es"]},
              "systems": {"s": {"version": "t", **system}}, **extra}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return str(path)


def _validate(path: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["validate", "--no-data", "--config", path])
    return result.exit_code, result.output + str(result.exception or "")


FIELDS = [  # (system, the option holding the URL)
    ({"backend": "openai", "options": {"model": "m", "base_url": f"{ELSEWHERE}/v1"}}, "base_url"),
    ({"backend": "openai", "options": {"model": "m", "api": "azure", "api_version": "2024-10-21",
                                       "azure_endpoint": ELSEWHERE}}, "azure_endpoint"),
    ({"backend": "azure", "options": {"endpoint": ELSEWHERE}}, "endpoint"),
    ({"backend": "deepl", "options": {"server_url": ELSEWHERE}}, "server_url"),
    ({"backend": "aws", "options": {"region": "us-east-1", "endpoint": ELSEWHERE}}, "endpoint"),
    ({"backend": "google", "options": {"project": "p", "transport": "rest", "endpoint": ELSEWHERE}}, "endpoint"),
]


@pytest.mark.parametrize("system, field", FIELDS, ids=[f"{s['backend']}.{f}" for s, f in FIELDS])
def test_clear_text_to_another_host_is_refused_naming_the_exact_field(tmp_path, system, field):
    code, output = _validate(_config(tmp_path, system))
    assert code == 2, output
    assert f"systems.s.options.{field}:" in output and "10.0.0.7" in output and "allow_insecure_http" in output


@pytest.mark.parametrize("system, field", FIELDS, ids=[f"{s['backend']}.{f}" for s, f in FIELDS])
def test_credentials_in_the_url_are_refused_naming_the_field(tmp_path, system, field):
    system = {**system, "options": {**system["options"], field: "https://user:hunter2-pass@api.example.com"}}
    code, output = _validate(_config(tmp_path, system))
    assert code == 2 and f"systems.s.options.{field}:" in output, output
    assert "hunter2-pass" not in output


@pytest.mark.parametrize("system, field", FIELDS, ids=[f"{s['backend']}.{f}" for s, f in FIELDS])
def test_allowed_on_a_trusted_network(tmp_path, system, field):
    system = {**system, "options": {**system["options"], "allow_insecure_http": True}}
    code, output = _validate(_config(tmp_path, system))
    assert code == 0, output


def test_the_openai_base_url_from_the_environment_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{ELSEWHERE}/v1")
    from biaseval.config import load_config
    from biaseval.errors import ConfigError
    from biaseval.run.plan import prepare

    config = load_config(_config(tmp_path, {"backend": "openai", "options": {"model": "m"}}))
    with pytest.raises(ConfigError, match=r"systems\.s\.options\.base_url \(\$OPENAI_BASE_URL\).*10\.0\.0\.7"):
        prepare(config, tmp_path)


def test_the_object_store_endpoint_is_held_to_the_rule(tmp_path):
    system = {"backend": "identity"}
    code, output = _validate(_config(tmp_path, system, output={"endpoint": "http://10.0.0.7:9000"}))
    assert code == 2 and "output.endpoint:" in output and "10.0.0.7" in output, output
    code, output = _validate(_config(tmp_path, system, output={"endpoint": "http://10.0.0.7:9000",
                                                                "allow_insecure_http": True}))
    assert code == 0, output


def test_a_dataset_mirror_is_held_to_the_rule(tmp_path, monkeypatch):
    """Checked before anything is sent (the address is reserved for documentation: never reached)."""
    from biaseval.data.datasets import fetch, registry
    from biaseval.errors import DataError

    monkeypatch.setenv("BIASEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BIASEVAL_ARCHIVE_MIRROR", "http://203.0.113.10/mirror")
    spec = registry().get(sorted(registry())[0])
    with pytest.raises(DataError, match=r"BIASEVAL_ARCHIVE_MIRROR: http:// to '203\.0\.113\.10'"):
        fetch(spec)


def test_a_download_redirected_to_clear_text_elsewhere_is_refused(tmp_path, monkeypatch):
    """A mirror on this host that redirects to http:// on another host: not followed."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from biaseval.data.datasets import fetch, registry
    from biaseval.errors import DataError

    class Redirect(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(302)
            self.send_header("Location", "http://203.0.113.10/elsewhere.tar.gz")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("BIASEVAL_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.setenv("BIASEVAL_ARCHIVE_MIRROR", f"http://127.0.0.1:{server.server_address[1]}")
        spec = registry().get(sorted(registry())[0])
        with pytest.raises(DataError, match=r"redirect to http://203\.0\.113\.10, refused"):
            fetch(spec)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# -- the rule itself, on generated strings ----------------------------------------------------------

def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _hosts_seen(url: str) -> set[tuple[str, str]]:
    """(scheme, host) as each HTTP library biaseval's clients use would read ``url``."""
    import httpx2
    import requests
    import urllib3

    seen = set()
    parts = urlsplit(url)
    seen.add((parts.scheme.lower(), (parts.hostname or "").lower()))
    parsed = urllib3.util.parse_url(url)
    seen.add(((parsed.scheme or "").lower(), (parsed.host or "").strip("[]").lower()))
    prepared = requests.Request("POST", url).prepare()
    seen.add((urlsplit(prepared.url).scheme.lower(), (urlsplit(prepared.url).hostname or "").lower()))
    x = httpx2.URL(url)
    seen.add((x.scheme.lower(), x.host.strip("[]").lower()))
    return seen


def _often(common: list[str], rare: list[str]) -> st.SearchStrategy[str]:
    """``common`` four times as likely as ``rare``."""
    return st.one_of(*[st.sampled_from(common)] * 4, st.sampled_from(rare))


GOOD_HOSTS = ["127.0.0.1", "localhost", "[::1]", "10.0.0.7", "example.com", "127.9.8.7", "api-1.example.com",
              "LOCALHOST", "[2001:db8::1]"]
ODD_HOSTS = ["127.0.0.1.evil.test", "localhost.evil.test", "[::ffff:127.0.0.1]", "0x7f.1", "127.1", "2130706433",
             "127.0.0.1\\@evil.test", "evil.test#@127.0.0.1", "[::1", "é.test", "localhost.", "127.0.0.1%2f", "",
             " 127.0.0.1", "127.0.0.1\t", "[fe80::1%25eth0]", "-a.test", "a..test"]
PATH_CHARS = st.characters(min_codepoint=0x21, max_codepoint=0x7e, exclude_characters="\\")
# URL-shaped strings, most of them worth accepting, with the spellings parsers disagree on mixed in
URLISH = st.builds(
    lambda scheme, sep, userinfo, host, port, path: f"{scheme}{sep}{userinfo}{host}{port}{path}",
    _often(["http", "https", "HTTP", "Https"], ["ftp", "file", "", "http:", "javascript", "httpx"]),
    _often(["://"], [":", ":/", "//", ":///", ":\\\\", ":/\\"]),
    _often([""], ["u@", "u:p@", "127.0.0.1@", "@", "a%40b@", ":@"]),
    st.one_of(*[_often(GOOD_HOSTS, ODD_HOSTS)] * 4, st.from_regex(r"[a-z0-9.\-]{1,12}", fullmatch=True),
              st.text(max_size=12)),
    st.one_of(*[st.just("")] * 2, st.integers(-5, 70000).map(lambda p: f":{p}"), st.sampled_from([":", ":0x50", ": 80"])),
    st.one_of(st.just(""), *[st.text(PATH_CHARS, max_size=12).map(lambda t: "/" + t)] * 3, st.text(max_size=8),
              st.sampled_from(["?a=b", "#f", "/\n", "?x=1#@evil.test"])),
)

# well-formed URLs: to this host or another, by name or address, over http or https, any port and path
WELL_FORMED = st.builds(
    lambda scheme, host, port, path: f"{scheme}://{host}{port}{path}",
    st.sampled_from(["http", "https", "HTTP"]),
    st.one_of(st.sampled_from(GOOD_HOSTS), st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?(\.[a-z]{2,5}){0,2}",
                                                        fullmatch=True),
              st.ip_addresses().map(lambda a: f"[{a}]" if a.version == 6 else str(a))),
    st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}")),
    st.one_of(st.just(""), st.text(PATH_CHARS, max_size=16).map(lambda t: "/" + t)),
)


@pytest.mark.property
@given(st.one_of(WELL_FORMED, URLISH, st.text(max_size=40)), st.booleans())
@example("http://127.0.0.1\\@evil.test/", False)
@example("http://evil.test#@127.0.0.1/", False)
@example("http://0x7f.1/", False)
@example("https://example.com:99999/", False)
def test_any_url_is_refused_or_sent_only_where_the_rule_allows(url, allow):
    try:
        checked = check_url(url, allow_insecure_http=allow)
    except ValueError as exc:
        assert str(exc)  # a reason; the field is named by the caller
        return
    seen = _hosts_seen(checked)
    assert len(seen) == 1, f"libraries read {checked!r} differently: {seen}"
    [(scheme, host)] = seen
    assert host and scheme in ("https", "http")
    assert scheme == "https" or allow or _loopback(host)
    assert urlsplit(checked).username is None and urlsplit(checked).password is None
    assert origin(checked) == f"{scheme}://{urlsplit(checked).netloc.lower()}"
