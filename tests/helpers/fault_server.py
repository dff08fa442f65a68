"""A loopback HTTP server whose every answer is scripted, faults included."""

from __future__ import annotations

import http.server
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_magics.testing import encode_sse, message, response_events
from tests.helpers.loopback import LoopbackServer


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


class FaultServer(LoopbackServer):
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
        super().__init__()

    def answer(self, request: http.server.BaseHTTPRequestHandler, method: str) -> None:
        if method != "POST":
            request.send_error(404)
            return
        body = request.rfile.read(int(request.headers.get("content-length") or 0))
        self.requests.append(json.loads(body or b"{}"))
        self.auth.append(request.headers.get("authorization"))
        self.paths.append(request.path)
        answer = self.answers.pop(0) if self.answers else ok()
        if answer.hang_up:
            request.close_connection = True
            return
        if answer.items is None and answer.raw is None:
            request.send_response(answer.status)
            for k, v in answer.headers.items():
                request.send_header(k.replace("_", "-"), v)
            request.send_header("content-type", "application/json")
            request.send_header("content-length", str(len(answer.body)))
            request.end_headers()
            request.wfile.write(answer.body)
            return
        payload = answer.raw if answer.raw is not None else self.encode(answer.items or [])
        if answer.cut_after_bytes is not None:
            payload = payload[: answer.cut_after_bytes]
        request.send_response(200)
        request.send_header("content-type", "text/event-stream")
        request.send_header("connection", "close")
        request.end_headers()
        if answer.stall_s:
            request.wfile.write(payload[:40])
            request.wfile.flush()
            time.sleep(answer.stall_s)
            return
        request.wfile.write(payload)
        request.close_connection = True
