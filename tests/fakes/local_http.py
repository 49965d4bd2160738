"""A small HTTP server on a loopback address for a test's hand-written handler: started on a free
port, served by a thread, stopped and joined afterwards.

``serve_forever`` looks for a shutdown request every ``poll_interval`` seconds, and ``shutdown()`` waits
for that look: at the standard library's default of 0.5 s every server a test stops costs it up to
half a second. Here it polls every 10 ms."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

POLL_S = 0.01


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that writes no access log to stderr."""

    def log_message(self, *args) -> None:
        pass


class LocalServer:
    """``ThreadingHTTPServer`` on ``host`` (a loopback address), port chosen by the system; ``url`` is
    its origin. ``start()``/``stop()``, or use it in a ``with``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1"):
        self.server = ThreadingHTTPServer((host, 0), handler)
        self.url = f"http://{host}:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": POLL_S},
                                        daemon=True)

    def start(self) -> LocalServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1") -> Iterator[LocalServer]:
    with LocalServer(handler, host) as server:
        yield server


def recording_server(answer, host: str = "127.0.0.1", body: bytes = b"") -> tuple[LocalServer, list]:
    """A started server that answers every GET, POST and PUT with ``answer()`` (a status and headers)
    and ``body``, and the list it records each request in: (method, path, headers)."""
    seen: list[tuple[str, str, dict]] = []

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def _any(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append((self.command, self.path, dict(self.headers.items())))
            status, headers = answer()
            self.send_response(status)
            for key, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(key, value)
            if body:
                self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = _any

    return LocalServer(Handler, host).start(), seen
