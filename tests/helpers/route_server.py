"""A loopback HTTP server that answers GET and POST by path with scripted JSON (or raw
bytes), as local model servers answer their own endpoints; every other path is a 404.
It keeps what each request was: method, path, authorization header and body."""

from __future__ import annotations

import http.server
import json
import time
from dataclasses import dataclass, field
from typing import Any

from tests.helpers.loopback import LoopbackServer, read_body


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    authorization: str | None
    body: bytes


@dataclass(frozen=True)
class Reply:
    """``body`` is sent as JSON unless it is bytes; ``delay_s`` is waited first."""

    body: Any
    status: int = 200
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


class RouteServer(LoopbackServer):
    def __init__(self, routes: dict[tuple[str, str], Any]) -> None:
        self.routes = {k: v if isinstance(v, Reply) else Reply(v) for k, v in routes.items()}
        self.seen: list[Seen] = []
        super().__init__()

    def answer(self, request: http.server.BaseHTTPRequestHandler, method: str) -> None:
        body = read_body(request)
        auth = request.headers.get("authorization")
        self.seen.append(Seen(method, request.path, auth, body))
        reply = self.routes.get((method, request.path), Reply(b"404 page not found", 404))
        time.sleep(reply.delay_s)
        payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body)
        data = payload if isinstance(payload, bytes) else payload.encode()
        request.send_response(reply.status)
        request.send_header("content-type", "application/json")
        request.send_header("content-length", str(len(data)))
        for name, value in reply.headers.items():
            request.send_header(name, value)
        request.end_headers()
        request.wfile.write(data)

    def paths(self) -> list[str]:
        return [f"{s.method} {s.path}" for s in self.seen]
