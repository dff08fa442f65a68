"""A loopback HTTP server whose every answer is scripted, faults included."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_magics.testing import encode_sse, message, response_events


@dataclass
class Answer:
    """One scripted answer: a status with a body, or an SSE stream cut or stalled."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    items: list[dict[str, Any]] | None = None
    cut_after_bytes: int | None = None
    stall_s: float = 0.0
    raw: bytes | None = None  # an SSE payload sent as it is (for events no builder makes)
    hang_up: bool = False  # close the connection without answering


def ok(text: str = "done") -> Answer:
    return Answer(items=[message(text)])


def status(code: int, error: str = "boom", **headers: str) -> Answer:
    body = json.dumps({"error": {"message": error, "type": "server_error"}}).encode()
    return Answer(status=code, headers=headers, body=body)


def responses_sse(items: list[dict[str, Any]]) -> bytes:
    return encode_sse(response_events(items))


def failed_response(code: str, text: str) -> bytes:
    """A Responses stream that ends in ``response.failed`` with ``code`` and ``text``."""
    response = {
        "id": "resp_failed",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": "scripted",
        "output": [],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "status": "failed",
        "error": {"code": code, "message": text},
    }
    created = {"type": "response.created", "sequence_number": 0, "response": response}
    failed = {"type": "response.failed", "sequence_number": 1, "response": response}
    return encode_sse(iter([created, failed]))


class FaultServer:
    """``encode`` turns an answer's items into the SSE payload of the protocol served."""

    def __init__(
        self,
        answers: list[Answer],
        encode: Callable[[list[dict[str, Any]]], bytes] = responses_sse,
    ) -> None:
        self.answers = list(answers)
        self.encode = encode
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.paths: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                server.requests.append(json.loads(body or b"{}"))
                server.auth.append(self.headers.get("authorization"))
                server.paths.append(self.path)
                answer = server.answers.pop(0) if server.answers else ok()
                if answer.hang_up:
                    self.close_connection = True
                    return
                if answer.items is None and answer.raw is None:
                    self.send_response(answer.status)
                    for k, v in answer.headers.items():
                        self.send_header(k.replace("_", "-"), v)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                    return
                payload = (
                    answer.raw if answer.raw is not None else server.encode(answer.items or [])
                )
                if answer.cut_after_bytes is not None:
                    payload = payload[: answer.cut_after_bytes]
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                if answer.stall_s:
                    self.wfile.write(payload[:40])
                    self.wfile.flush()
                    time.sleep(answer.stall_s)
                    return
                self.wfile.write(payload)
                self.close_connection = True

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
