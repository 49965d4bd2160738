"""The notification's delivery against a local HTTP server (no monitor run): the auth header comes
from the environment, transient answers are retried with backoff (or the receiver's Retry-After), a
4xx is not, a delivery that fails for good is reported without the secret or the webhook's path;
the events' rules (a model change, not a fingerprint; a recovery after a streak of outages); and the
run's cost, counted from rows built by hand."""

from __future__ import annotations

import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import polars as pl
import pytest
from fakes.local_http import POLL_S

from biaseval.config import load_config
from biaseval.config.monitor import NotifyConfig
from biaseval.errors import ConfigError
from biaseval.monitor import notify
from biaseval.run.cost import billed_from_rows, cost_lines

SECRET = "Token abcdef-0123456789-secret"


@pytest.fixture
def receiver():
    """A webhook receiver answering the scripted statuses (then 204), recording headers and bodies."""
    seen: list[tuple[str, dict, bytes]] = []
    script: list[tuple[int, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            seen.append((self.path, dict(self.headers.items()), self.rfile.read(int(self.headers["Content-Length"]))))
            status, headers = script.pop(0) if script else (204, {})
            self.send_response(status)
            for k, v in {**headers, "Content-Length": "0"}.items():
                self.send_header(k, v)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/services/T000/B000/xoxb-path-secret", seen, script
    server.shutdown()
    server.server_close()
    thread.join()


def config(url: str, **fields) -> NotifyConfig:
    return NotifyConfig(webhook=url, webhook_auth_env="HOOK_AUTH", backoff_s=0.5, **fields)


def test_the_auth_header_comes_from_the_environment(receiver, monkeypatch):
    url, seen, _ = receiver
    monkeypatch.setenv("HOOK_AUTH", SECRET)
    stream = io.StringIO()
    assert notify.deliver(config(url, webhook_auth_header="X-Hook-Auth"), {"text": "hi"}, stream) == []
    [(path, headers, body)] = seen
    assert headers["X-Hook-Auth"] == SECRET and headers["Content-Type"] == "application/json"
    assert body == b'{"text": "hi"}' and path.endswith("xoxb-path-secret")
    assert stream.getvalue() == f"monitor: notified webhook {url[:url.index('/services')]}\n"


def test_transient_answers_are_retried_with_backoff_and_retry_after(receiver, monkeypatch):
    url, seen, script = receiver
    monkeypatch.setenv("HOOK_AUTH", SECRET)
    script += [(503, {}), (429, {"Retry-After": "7"}), (500, {})]
    waits: list[float] = []
    assert notify.deliver(config(url), {"a": 1}, io.StringIO(), sleep=waits.append) == []
    assert len(seen) == 4 and all(h["Authorization"] == SECRET for _, h, _ in seen)
    assert waits == [0.5, 7.0, 2.0]  # 0.5 doubled per try; the 429's Retry-After (7 s) over the 1 s due


def test_a_failed_delivery_is_reported_without_secrets(receiver, monkeypatch):
    url, seen, script = receiver
    monkeypatch.setenv("HOOK_AUTH", SECRET)
    script += [(502, {})] * 3
    stream, waits = io.StringIO(), []
    failures = notify.deliver(config(url, attempts=3), {"a": 1}, stream, sleep=waits.append)
    host = url[:url.index("/services")]
    assert failures == [f"webhook {host}: HTTP 502 Bad Gateway (after 3 tries)"] and len(seen) == 3
    assert waits == [0.5, 1.0]
    log = stream.getvalue()
    assert "NOT delivered" in log and SECRET not in log and "xoxb-path-secret" not in log


def test_a_client_error_is_not_retried(receiver, monkeypatch):
    url, seen, script = receiver
    monkeypatch.setenv("HOOK_AUTH", SECRET)
    script.append((403, {}))
    failures = notify.deliver(config(url), {"a": 1}, io.StringIO(), sleep=lambda s: None)
    assert len(seen) == 1 and failures[0].endswith("HTTP 403 Forbidden (after 1 try)")


def test_a_receiver_that_is_not_there_and_a_failing_command(monkeypatch):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens
    monkeypatch.setenv("HOOK_AUTH", SECRET)
    cfg = NotifyConfig(webhook=f"http://127.0.0.1:{port}/x", webhook_auth_env="HOOK_AUTH", attempts=2,
                       backoff_s=0, command="echo broken >&2; exit 3")
    failures = notify.deliver(cfg, {"a": 1}, io.StringIO(), sleep=lambda s: None)
    assert failures[0] == "command: exited 3: broken (after 2 tries)"
    assert failures[1].startswith(f"webhook http://127.0.0.1:{port}: URLError: ") and "after 2 tries" in failures[1]


def test_an_unset_auth_variable_stops_the_monitor_before_it_runs(monkeypatch):
    monkeypatch.delenv("HOOK_AUTH", raising=False)
    with pytest.raises(ConfigError, match="environment variable HOOK_AUTH .*Authorization.* is not set"):
        notify.check(config("https://hooks.example/x"))
    with pytest.raises(ValueError, match="webhook_auth_env"):  # a name, never the value itself
        NotifyConfig(webhook="https://hooks.example/x", webhook_auth_env="Bearer abc")


# -- the run's cost from its rows -------------------------------------------------------------------

def _config(tmp_path):
    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "c", "suites": ["otsc-en"], "systems": {
        "mt": {"backend": "identity", "version": "1", "price_per_million_chars": 20.0},
        "llm": {"backend": "identity", "version": "1", "price_per_million_input_tokens": 2.5,
                "price_per_million_output_tokens": 10.0}}}), encoding="utf-8")
    return load_config(path)


def test_billed_cost_counts_each_sent_text_once_at_the_configured_prices(tmp_path):
    rows = pl.DataFrame({
        "system": ["mt", "mt", "mt", "mt", "mt", "llm", "llm"],
        "src_lang": ["en"] * 7,
        "tgt_lang": ["es", "es", "fr", "fr", "de", "es", "es"],
        "source": ["abcd", "abcd", "héllo", "xyz", "qq", "one", "two"],  # "abcd"/es twice: two items, one text
        "translation": ["t", "t", "t", None, "t", "t", None],
        "rejected": [None, None, None, None, None, None, "refusal"],
        "cached": [False, False, False, False, True, False, False],  # qq came from the store: not billed now
        "attempts": [3, 3, 1, 2, 0, 2, 1],
        "billed_chars": [4, 4, None, None, None, None, None],  # héllo: a backend that reports none
        "input_tokens": [None, None, None, None, None, 1200, 800],
        "output_tokens": [None, None, None, None, None, 300, 20],
    })
    cost = billed_from_rows(rows, _config(tmp_path))
    mt, llm = cost["systems"]["mt"], cost["systems"]["llm"]
    # mt: abcd (4, reported) + héllo (5 code points, answered) + xyz (failed: 0)
    assert mt == {"texts": 3, "billed_chars": 9, "input_tokens": 0, "output_tokens": 0,
                  "sent_chars": 3 * 4 + 5 + 2 * 3, "resent_texts": 2, "cost": pytest.approx(9 / 1e6 * 20.0)}
    assert llm["input_tokens"] == 2000 and llm["output_tokens"] == 320 and llm["billed_chars"] == 0
    assert llm["cost"] == pytest.approx(2000 / 1e6 * 2.5 + 320 / 1e6 * 10.0)
    assert cost["total"] == pytest.approx(9 / 1e6 * 20.0 + 2000 / 1e6 * 2.5 + 320 / 1e6 * 10.0)
    lines = cost_lines({"billed": cost, "planned": {"systems": {"mt": {"cost": 0.5}}, "total": 0.5}})
    assert lines[-1] == ("total", "", f"{cost['total']:,.4f}", "0.5000")
    assert lines[0] == ("llm", "2,000 input + 320 output tokens; 1 texts sent more than once",
                        f"{llm['cost']:,.4f}", "—")


# -- events: what counts as a model change, and a recovery --------------------------------------------

def test_a_model_change_is_the_set_of_models_not_the_fingerprint():
    from biaseval.monitor.events import model_change

    before = {"model": ["gpt-x-2026-01-01"], "fingerprint": ["fp_a"]}
    assert model_change({"model": ["gpt-x-2026-01-01"], "fingerprint": ["fp_b"]}, before) is None  # serving config only
    change = model_change({"model": ["gpt-x-2026-03-01"], "fingerprint": ["fp_c"]}, before)
    assert change == {"before": ["gpt-x-2026-01-01"], "after": ["gpt-x-2026-03-01"],
                      "fingerprint_before": ["fp_a"], "fingerprint_after": ["fp_c"]}
    mixed = model_change({"model": ["deployment=d;system=Custom", "deployment=d;system=Team"], "fingerprint": []},
                         {"model": ["deployment=d;system=Custom"], "fingerprint": []})
    assert mixed["after"] == ["deployment=d;system=Custom", "deployment=d;system=Team"]  # some texts fell back
    assert model_change({"model": ["general/nmt"], "fingerprint": []}, {"model": [], "fingerprint": []}) is None


def test_a_recovery_follows_a_streak_of_outages():
    from datetime import datetime, timedelta, timezone

    from biaseval.monitor.events import recovery

    t0 = datetime(2026, 12, 1, tzinfo=timezone.utc)
    status = pl.DataFrame({"run_id": ["r1", "r2", "r3", "r1", "r2", "r3"],
                           "system": ["a", "a", "a", "b", "b", "b"],
                           "status": ["ok", "unavailable", "unavailable", "unavailable", "ok", "ok"],
                           "message": ["", "down: 503", "down: 401", "down", "", ""],
                           "created_at": [t0, t0 + timedelta(days=7), t0 + timedelta(days=14)] * 2})
    assert recovery(status, "a") == {"since": "r2", "runs": 2, "error": "down: 401"}  # the latest error
    assert recovery(status, "b") is None and recovery(status, "c") is None and recovery(None, "a") is None
