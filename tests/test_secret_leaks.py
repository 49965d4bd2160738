"""No secret in anything a run leaves behind (issue 23, finding 1): keys as people export them (with a
trailing newline, from ``$(cat key.txt)`` or ``echo``), a webhook whose path is its token and whose
auth header comes from the environment — and providers that fail, so that every error path writes.

A monitoring run, as a scheduler starts it (``biaseval monitor`` in its own process, its own Ray),
with an Azure and an AWS system whose endpoints refuse connections, a notification command and a
loopback webhook. Then every file of the store, the translation store and the run directory (shards,
labels, metrics, report.md, report.html, run.json, drift.json, drift.md, history, status), the
notification body and the process's stdout and stderr are searched for every form of every secret.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from fakes.local_http import POLL_S
from leaks import file_text, in_base64, leaked_forms, leaks_in_folder
from procs import kill_sessions

pytestmark = pytest.mark.slow  # a monitoring run in a process of its own, with its own Ray

AZURE_KEY = "k3y-SECRET\n"
AWS_SECRET_KEY = "aws-secret-ACCESS-value\n"
AWS_TOKEN = "sess-TOKEN-value-0123456789\n"
HOOK_AUTH = "Bearer hook-AUTH-secret-987\n"
HOOK_PATH = "/services/T000/B000/xoxb-WEBHOOK-path-token"
SECRETS = [AZURE_KEY, AWS_SECRET_KEY, AWS_TOKEN, HOOK_AUTH, HOOK_PATH]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


@pytest.fixture
def webhook():
    """A loopback webhook receiver recording each request's path, headers and body."""
    seen: list[tuple[str, dict, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.path, dict(self.headers.items()), body))
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}{HOOK_PATH}", seen
    server.shutdown()
    server.server_close()
    thread.join()


def _monitor(folder: Path, config: Path, env: dict) -> subprocess.CompletedProcess:
    proc = subprocess.Popen([sys.executable, "-m", "biaseval.cli", "monitor", "--config", str(config)], cwd=folder,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env=env)
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        survivors = kill_sessions({proc.pid})
        proc.wait()
    assert survivors == []
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_keys_with_a_newline_leak_nowhere_in_a_monitoring_run(tmp_path, webhook):
    url, seen = webhook
    retry = {"max_attempts": 2, "backoff_s": 0.01, "timeout_s": 2}
    systems = {
        "az": {"backend": "azure", "version": "t", "retry": retry,
               "options": {"endpoint": f"http://127.0.0.1:{_closed_port()}"}},
        "amz": {"backend": "aws", "version": "t", "retry": retry,
                "options": {"region": "us-east-1", "endpoint": f"http://127.0.0.1:{_closed_port()}"}},
    }
    config = {"name": "leak", "suites": ["otsc-en"], "targets": {"otsc-en": ["es"]}, "systems": systems,
              "metrics": {"bootstrap": 50}, "cache": {"path": str(tmp_path / "cache")},
              "monitor": {"store": str(tmp_path / "store"),
                          "notify": {"command": f"cat > {tmp_path / 'notified.json'}", "webhook": url,
                                     "webhook_auth_env": "HOOK_AUTH", "attempts": 1}}}
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "AZURE_TRANSLATOR_KEY": AZURE_KEY,
           "AWS_ACCESS_KEY_ID": "AKIAFAKEKEYID0000001", "AWS_SECRET_ACCESS_KEY": AWS_SECRET_KEY,
           "AWS_SESSION_TOKEN": AWS_TOKEN, "HOOK_AUTH": HOOK_AUTH,
           "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials")}
    done = _monitor(tmp_path, path, env)

    # the run happened, every error path wrote, and both channels were notified
    assert done.returncode != 0 and "az: unavailable" in done.stdout and "amz: unavailable" in done.stdout, \
        done.stdout + done.stderr
    [run] = list((tmp_path / "store" / "runs").iterdir())
    for name in ("run.json", "report.md", "report.html", "drift.json", "drift.md", "labels.parquet"):
        assert (run / name).is_file(), name
    assert list((tmp_path / "store" / "status").glob("*.parquet"))
    assert list((tmp_path / "cache").rglob("*.parquet"))
    assert "first error" in (run / "drift.md").read_text(encoding="utf-8")
    [(hook_path, headers, body)] = seen
    assert hook_path == HOOK_PATH and headers["Authorization"] == HOOK_AUTH.strip()
    notified = (tmp_path / "notified.json").read_text(encoding="utf-8")
    assert json.loads(notified)["verdict"] == "unavailable"

    # ... and no secret, in any form, anywhere
    (tmp_path / "monitor.yaml").unlink()  # the config itself names the webhook
    assert leaks_in_folder(tmp_path, SECRETS) == {}
    for name, text in (("stdout", done.stdout), ("stderr", done.stderr), ("webhook body", body.decode())):
        assert [f for s in SECRETS for f in leaked_forms(s, text)] == [], name
        assert not any(in_base64(s.strip(), text) for s in SECRETS), name
    # run.json keeps where the webhook is, not its path (a chat webhook's path is its token)
    recorded = json.loads((run / "run.json").read_text(encoding="utf-8"))["config"]["monitor"]["notify"]
    assert recorded["webhook"] == url[:url.index(HOOK_PATH)]
    assert HOOK_PATH not in file_text(run / "run.json")
