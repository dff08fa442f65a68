"""The one HTTP server the test helpers build on: HTTP/1.1 on 127.0.0.1, a thread per
connection, TCP_NODELAY on each (without it a small answer waits on Nagle's algorithm
and timings turn bimodal), no access log. A subclass answers in :meth:`answer`."""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
from typing import Any, Self


class LoopbackServer:
    """Serving from construction until :meth:`close` (or the ``with`` block's end)."""

    def __init__(self) -> None:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:
                pass

            def handle(self) -> None:
                with contextlib.suppress(ConnectionError):  # a client that stopped reading
                    super().handle()

            def do_GET(self) -> None:
                server.answer(self, "GET")

            def do_POST(self) -> None:
                server.answer(self, "POST")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def answer(self, request: http.server.BaseHTTPRequestHandler, method: str) -> None:
        request.send_error(405)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_body(request: http.server.BaseHTTPRequestHandler) -> bytes:
    return request.rfile.read(int(request.headers.get("content-length") or 0))
