"""Test helpers that ship with the package: SSE builders and a scripted Responses server.

The server listens on 127.0.0.1 only and speaks the real protocol (``POST /v1/responses``
answered with a ``text/event-stream``), so tests, benchmarks and demos drive the real
client. Each request takes the next scripted turn: a list of output items, or a callable
``(request_body) -> list`` for answers that depend on what was sent.
"""

from __future__ import annotations

import http.server
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Self


class HttpFailure:
    """A turn answered with an HTTP error instead of a stream (``body``: JSON text)."""

    def __init__(self, status: int, body: str) -> None:
        self.status, self.body = status, body.encode()


class StreamCut:
    """A turn whose stream starts (``response.created``) and then ends, the connection
    closed, before ``response.completed``."""


Items = list[dict[str, Any]]
Answer = Items | HttpFailure | StreamCut
Turn = Answer | Callable[[dict[str, Any]], Answer]


def message(text: str, item_id: str | None = None) -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id or f"msg_{uuid.uuid4().hex[:8]}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call(
    name: str, arguments: dict[str, Any] | str, call_id: str | None = None
) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "type": "function_call",
        "id": f"fc_{uuid.uuid4().hex[:8]}",
        "call_id": call_id or f"call_{uuid.uuid4().hex[:8]}",
        "name": name,
        "arguments": args,
        "status": "completed",
    }


def custom_tool_call(name: str, input_text: str, call_id: str | None = None) -> dict[str, Any]:
    return {
        "type": "custom_tool_call",
        "id": f"ctc_{uuid.uuid4().hex[:8]}",
        "call_id": call_id or f"call_{uuid.uuid4().hex[:8]}",
        "name": name,
        "input": input_text,
        "status": "completed",
    }


def local_shell_call(
    command: list[str],
    call_id: str | None = None,
    working_directory: str | None = None,
    timeout_ms: int | None = None,
) -> dict[str, Any]:
    """A ``local_shell_call`` item, as models with a built-in local shell send one."""
    return {
        "type": "local_shell_call",
        "id": f"lsh_{uuid.uuid4().hex[:8]}",
        "call_id": call_id or f"call_{uuid.uuid4().hex[:8]}",
        "status": "completed",
        "action": {
            "type": "exec",
            "command": command,
            "timeout_ms": timeout_ms,
            "working_directory": working_directory,
            "env": None,
            "user": None,
        },
    }


POLL_S = 0.05
"""How often a scripted server's loop looks for a shutdown (the default 0.5 s made each
stop wait up to half a second)."""

USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


def response_events(
    items: list[dict[str, Any]], response_id: str = "resp_1", chunk: int = 16
) -> Iterator[dict[str, Any]]:
    """The event sequence of one response, shaped as the Responses API streams it."""
    seq = iter(range(1_000_000))
    base = {
        "id": response_id,
        "object": "response",
        "created_at": 1_700_000_000,
        "model": "scripted",
        "output": [],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
    }
    yield {
        "type": "response.created",
        "sequence_number": next(seq),
        "response": {**base, "status": "in_progress"},
    }
    for index, item in enumerate(items):
        kind = item.get("type")
        added = dict(item)
        if kind == "message":
            added["content"], added["status"] = [], "in_progress"
        elif kind == "function_call":
            added["arguments"], added["status"] = "", "in_progress"
        elif kind == "custom_tool_call":
            added["input"] = ""
        yield {
            "type": "response.output_item.added",
            "sequence_number": next(seq),
            "output_index": index,
            "item": added,
        }
        item_id = item.get("id", "")
        if kind == "message":
            text = "".join(p.get("text", "") for p in item.get("content", []))
            for start in range(0, len(text), chunk):
                yield {
                    "type": "response.output_text.delta",
                    "sequence_number": next(seq),
                    "item_id": item_id,
                    "output_index": index,
                    "content_index": 0,
                    "delta": text[start : start + chunk],
                    "logprobs": [],
                }
            yield {
                "type": "response.output_text.done",
                "sequence_number": next(seq),
                "item_id": item_id,
                "output_index": index,
                "content_index": 0,
                "text": text,
                "logprobs": [],
            }
        elif kind == "function_call":
            yield {
                "type": "response.function_call_arguments.delta",
                "sequence_number": next(seq),
                "item_id": item_id,
                "output_index": index,
                "delta": item.get("arguments", ""),
            }
            yield {
                "type": "response.function_call_arguments.done",
                "sequence_number": next(seq),
                "item_id": item_id,
                "output_index": index,
                "arguments": item.get("arguments", ""),
                "name": item.get("name", ""),
            }
        yield {
            "type": "response.output_item.done",
            "sequence_number": next(seq),
            "output_index": index,
            "item": item,
        }
    yield {
        "type": "response.completed",
        "sequence_number": next(seq),
        "response": {**base, "status": "completed", "output": items, "usage": USAGE},
    }


def encode_sse(events: Iterator[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


class ScriptedResponsesServer:
    """A loopback Responses API server that answers requests from a script.

    ``requests`` keeps every request body. After the script runs out, every request is
    answered with the assistant message ``done``.
    """

    def __init__(self, turns: list[Turn] | None = None, final_text: str = "done") -> None:
        self.turns: list[Turn] = list(turns or [])
        self.final_text = final_text
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def _next_items(self, body: dict[str, Any]) -> Answer:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            turn = self.turns[index] if index < len(self.turns) else None
        if turn is None:
            return [message(self.final_text)]
        return turn(body) if callable(turn) else turn

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/responses"):
                    self.send_error(404)
                    return
                server.headers.append(dict(self.headers))
                items = server._next_items(body)
                if isinstance(items, HttpFailure):
                    self.send_response(items.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(items.body)))
                    self.end_headers()
                    self.wfile.write(items.body)
                    return
                if isinstance(items, StreamCut):
                    created = {"type": "response.created", "response": {"id": "resp_cut"}}
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()  # no length: the body ends where the connection does
                    self.wfile.write(encode_sse(iter([created])))
                    self.close_connection = True
                    return
                payload = encode_sse(response_events(items, f"resp_{len(server.requests)}"))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler

    def start(self) -> Self:
        # shutdown() waits for the loop's next look (0.5 s by default): look often
        serve = self._httpd.serve_forever
        self._thread = threading.Thread(target=serve, args=(POLL_S,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def outputs(self, request_index: int = -1) -> dict[str, Any]:
        """``call_id -> output`` of the tool outputs sent in one request (one with no
        call id, such as the ``goal_objective`` output after create_goal, is left out)."""
        body = self.requests[request_index]
        return {
            i["call_id"]: i["output"]
            for i in body.get("input", [])
            if i.get("type") in ("function_call_output", "custom_tool_call_output")
            and "call_id" in i
        }


class PayloadServer:
    """Serves one fixed SSE body to every POST on 127.0.0.1 and counts the connections
    it accepted; the server's own cost stays near nothing (for benchmarks)."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.connections = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                owner.connections += 1

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(owner.payload)))
                self.end_headers()
                self.wfile.write(owner.payload)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, args=(POLL_S,), daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> PayloadServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ConversationsServer(ScriptedResponsesServer):
    """A scripted server for several conversations at once (a parent and its sub-agents,
    whose requests interleave): each conversation has its own turns, picked by its own
    task, the last user message of a request that is a key of ``scripts``. A request of
    no known conversation, or past its script, is answered with ``final_text``.
    ``by_conversation`` keeps every request body under its key."""

    def __init__(self, scripts: dict[str, list[Turn]], final_text: str = "done") -> None:
        super().__init__(None, final_text)
        self.scripts = {key: list(turns) for key, turns in scripts.items()}
        self.by_conversation: dict[str, list[dict[str, Any]]] = {k: [] for k in scripts}

    def _next_items(self, body: dict[str, Any]) -> Answer:
        with self._lock:
            self.requests.append(body)
            key = conversation_of(body, list(self.scripts))
            if key is None:
                return [message(self.final_text)]
            seen = self.by_conversation[key]
            seen.append(body)
            turns = self.scripts[key]
            turn = turns[len(seen) - 1] if len(seen) <= len(turns) else None
        if turn is None:
            return [message(self.final_text)]
        return turn(body) if callable(turn) else turn


def user_texts(body: dict[str, Any]) -> list[str]:
    """The texts of a request's user messages, in order."""
    texts = []
    for item in body.get("input", []):
        if item.get("type") == "message" and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                texts.append(content)
            else:
                texts.append("".join(c.get("text", "") for c in content or []))
    return texts


def conversation_of(body: dict[str, Any], keys: list[str]) -> str | None:
    """The conversation a request belongs to: its last user message that is a key (a
    forked child carries its parent's messages first, then its own task)."""
    return next((text for text in reversed(user_texts(body)) if text in keys), None)
