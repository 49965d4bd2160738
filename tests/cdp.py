"""Headless Chromium driven over the Chrome DevTools Protocol, with a WebSocket client of our own on the
standard library (no playwright or websockets offline): open a page, run JavaScript in it, collect what
its console and network saw, take a screenshot.

Chromium is started with the flags that keep it off the network (test_html_report.CHROMIUM_FLAGS), in a
session of its own, with a fresh profile and HOME; its DevTools endpoint listens on loopback only (a
port it picks, read from DevToolsActivePort). Everything it started is killed on leaving.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

from procs import kill_sessions, sessions_matching

PORT_WAIT_S = 60  # timing: chromium writes its port within a second or two; this bounds a hang only
CALL_WAIT_S = 60  # timing: one DevTools answer, normally milliseconds; a bound on a hang only


class WebSocket:
    """A client WebSocket (RFC 6455) over a plain TCP socket: text frames out (masked), frames in."""

    def __init__(self, url: str):
        assert url.startswith("ws://127.0.0.1:"), url
        host_port, path = url[len("ws://"):].split("/", 1)
        host, port = host_port.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=CALL_WAIT_S)
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode("ascii"))
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("the DevTools endpoint closed the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"no WebSocket upgrade: {head[:200]!r}")

    def _exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the DevTools endpoint closed the connection")
            data += chunk
        return data

    def send(self, text: str) -> None:
        payload = text.encode("utf-8")
        n = len(payload)
        header = bytes([0x81])  # FIN, text
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def receive(self) -> str:
        """The next whole text message (fragments joined; pings answered)."""
        parts = b""
        while True:
            first, second = self._exact(2)
            opcode, length = first & 0x0F, second & 0x7F
            if length == 126:
                length = struct.unpack(">H", self._exact(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self._exact(8))[0]
            mask = self._exact(4) if second & 0x80 else None
            data = self._exact(length)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            if opcode == 0x9:  # ping: pong with the same data
                self.sock.sendall(bytes([0x8A, 0x80 | len(data)]) + b"\0\0\0\0" + data)
                continue
            if opcode == 0x8:
                raise ConnectionError("the DevTools endpoint closed the connection")
            parts += data
            if first & 0x80:
                return parts.decode("utf-8")

    def close(self) -> None:
        self.sock.close()


class Browser:
    """One headless Chromium with one page, driven over DevTools. ``events`` holds every event it sent
    (method, params), console messages, exceptions and network requests among them."""

    def __init__(self, chromium: str, flags: list[str], workdir: Path):
        self.marker = workdir / f"chromium-cdp-{uuid.uuid4().hex[:8]}"
        home = self.marker / "home"
        home.mkdir(parents=True)
        self.profile = self.marker / "profile"
        env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
               "XDG_CACHE_HOME": str(home / ".cache")}
        command = [chromium, *flags, f"--user-data-dir={self.profile}", "--remote-debugging-address=127.0.0.1",
                   "--remote-debugging-port=0", "about:blank"]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                                     start_new_session=True)
        self.events: list[tuple[str, dict]] = []
        self._id = 0
        self.ws: WebSocket | None = None

    def __enter__(self) -> Browser:
        try:
            port = self._port()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=CALL_WAIT_S) as answer:
                targets = json.loads(answer.read())
            page = next(t for t in targets if t.get("type") == "page")
            self.ws = WebSocket(page["webSocketDebuggerUrl"])
            for domain in ("Runtime", "Log", "Page", "Network"):
                self.call(f"{domain}.enable")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _port(self) -> int:
        found = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + PORT_WAIT_S  # timing: polled until a generous bound (see PORT_WAIT_S)
        while time.monotonic() < deadline:
            if found.exists() and found.read_text().strip():
                return int(found.read_text().split()[0])
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited: {self.proc.stderr.read().decode(errors='replace')[-2000:]}")
            time.sleep(0.05)  # timing: a polling interval; only how often we look
        raise TimeoutError("chromium wrote no DevToolsActivePort")

    def __exit__(self, *exc) -> None:
        if self.ws is not None:
            self.ws.close()
        sessions = ({self.proc.pid} | sessions_matching(str(self.marker))) - {os.getsid(0)}
        survivors = kill_sessions(sessions, timeout=10)
        self.proc.wait(timeout=CALL_WAIT_S)
        self.proc.stderr.close()
        assert survivors == [] and sessions_matching(str(self.marker)) == set(), "chromium processes survived"

    def call(self, method: str, **params) -> dict:
        """A DevTools command; its result (events that come first are kept in ``events``)."""
        self._id += 1
        mine = self._id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.receive())
            if message.get("id") == mine:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append((message["method"], message.get("params", {})))

    def wait_for(self, method: str) -> dict:
        """The next event ``method`` (or one already received)."""
        for name, params in self.events:
            if name == method:
                return params
        while True:
            message = json.loads(self.ws.receive())
            if "method" in message:
                self.events.append((message["method"], message.get("params", {})))
                if message["method"] == method:
                    return message.get("params", {})

    def open(self, url: str) -> None:
        """Load ``url`` and wait for its load event."""
        self.events = [e for e in self.events if e[0] != "Page.loadEventFired"]
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def js(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-serialisable values)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:200]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, width: int = 1400, height: int = 6000) -> bytes:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        path.write_bytes(data)
        return data

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and log entries at error level (a blocked script or load
        among them) the page produced."""
        found = []
        for method, params in self.events:
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(json.dumps(params.get("args", []))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(params["entry"].get("text", "")[:500])
        return found

    def requests(self) -> list[str]:
        """Every URL the page asked for."""
        return [params["request"]["url"] for method, params in self.events if method == "Network.requestWillBeSent"]
