"""A loopback Responses server whose answers a function picks from the request: what
the compaction recordings were made against, so a scenario replays request by request.

``reply(index, body)`` returns ``{"items": [...], "usage": {...}}`` for a response,
``{"failed": {"code": ..., "message": ...}}`` for a ``response.failed`` stream.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

from agent_magics.testing import encode_sse, response_events
from tests.helpers.loopback import LoopbackServer, read_body

Reply = Callable[[int, dict[str, Any]], dict[str, Any]]


def usage(total: int, output: int = 5) -> dict[str, Any]:
    return {
        "input_tokens": total - output,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": total,
    }


def _events(answer: dict[str, Any], index: int) -> Iterator[dict[str, Any]]:
    if "failed" in answer:
        response = {"id": f"resp_{index}", "status": "failed", "error": answer["failed"]}
        yield {"type": "response.created", "response": {"id": f"resp_{index}"}}
        yield {"type": "response.failed", "response": response}
        return
    for event in response_events(answer.get("items", []), f"resp_{index}"):
        if event["type"] == "response.completed":
            event["response"]["usage"] = answer.get("usage", usage(15))
        yield event


class ScenarioServer(LoopbackServer):
    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        super().__init__()

    def answer(self, request: http.server.BaseHTTPRequestHandler, method: str) -> None:
        if method != "POST":  # (a question about the window: this server has no answer)
            request.send_error(404)
            return
        body = json.loads(read_body(request) or b"{}")
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
        payload = encode_sse(_events(self.reply(index, body), index))
        request.send_response(200)
        request.send_header("content-type", "text/event-stream")
        request.send_header("content-length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)


class WindowServer(ScenarioServer):
    """A model with a small window: each request counts its tokens (four bytes each, of
    its instructions and input) and reports them as usage; a request over ``window``
    fails with ``context_length_exceeded``, as OpenAI's API says it. It answers each
    turn with ``answer_chars`` characters; a summarising request (no tools) with a
    short summary."""

    def __init__(self, window: int, answer_chars: int = 800) -> None:
        self.window = window
        self.sizes: list[int] = []
        self.summaries = 0

        def reply(index: int, body: dict[str, Any]) -> dict[str, Any]:
            size = len(json.dumps([body.get("instructions"), body.get("input")])) // 4
            self.sizes.append(size)
            if size > window:
                message = f"This request has {size} tokens; the window is {window}."
                return {"failed": {"code": "context_length_exceeded", "message": message}}
            if not body.get("tools"):
                self.summaries += 1
                text = f"Summary {self.summaries}: the person ran numbered steps."
            else:
                text = f"Step done ({index}). " + "y" * answer_chars
            item = {"type": "message", "role": "assistant", "id": f"msg_{index}"}
            item["content"] = [{"type": "output_text", "text": text}]
            return {"items": [item], "usage": usage(size + len(text) // 4)}

        super().__init__(reply)
