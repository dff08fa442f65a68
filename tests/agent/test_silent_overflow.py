"""A server that says nothing when a request overflows: llama-cpp-python's, asked to
stream a prompt longer than its window, answers 200 with an event stream and closes it
empty (no code, no words). A session that knows the window takes a second such close of
a request at least half the window long as an overflow: it compacts and sends again, and
the turn goes on. A close of a short request stays a dropped connection, retried.

Against a loopback Chat Completions server that counts a request's tokens as its
messages' bytes / 2 (a tokenizer denser than the session's guess of three bytes a
token, so the session's own count runs behind and the overflow is the server's to
find), reports no usage, and drops the stream of a request over its window."""

from __future__ import annotations

import http.server
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_magics import Session, SessionConfig
from agent_magics.events import ContextCompacted, Event, RetryScheduled
from agent_magics.models.chat import ChatClient
from agent_magics.testing import message
from tests.helpers.chat_fault_server import chat_chunks, encode_chat
from tests.helpers.loopback import LoopbackServer, read_body

WINDOW = 2000


class SilentWindowServer(LoopbackServer):
    """Answers each turn in a sentence and a summarising request (no tools) with a
    summary; drops the stream of a request over ``window`` tokens. ``drop_first``: the
    first request's stream is dropped whatever its size (a connection that failed)."""

    def __init__(self, window: int, drop_first: bool = False) -> None:
        self.window, self.drop_first = window, drop_first
        self.sizes: list[int] = []
        self.dropped = 0
        super().__init__()

    def answer(self, request: http.server.BaseHTTPRequestHandler, method: str) -> None:
        body = json.loads(read_body(request))
        size = len(json.dumps(body["messages"])) // 2
        self.sizes.append(size)
        request.send_response(200)
        request.send_header("content-type", "text/event-stream")
        request.send_header("connection", "close")
        request.end_headers()
        request.close_connection = True
        if size > self.window or (len(self.sizes) == 1 and self.drop_first):
            self.dropped += 1
            return  # an empty stream: what llama-cpp-python sends on an overflow
        text = "Noted." if body.get("tools") else "SUMMARY: the person gave notes."
        request.wfile.write(encode_chat(chat_chunks([message(text)], usage=None)))


@pytest.fixture
def server() -> Iterator[SilentWindowServer]:
    found = SilentWindowServer(WINDOW)
    try:
        yield found
    finally:
        found.close()


def session_for(base_url: str, cwd: Path) -> Session:
    config = SessionConfig(
        model="local-model",
        provider="chat",
        base_url=base_url,
        cwd=cwd,
        instructions="Answer briefly.",
        shell_type="disabled",
        apply_patch_tool_type=None,
        supports_images=False,
        web_search="disabled",
        model_context_window=WINDOW,
        stream_max_retries=2,
        sessions_dir=False,
    )
    return Session(config, client=ChatClient(base_url, None))


def notes(n: int) -> str:
    return f"Notes on part {n}: " + " ".join(f"row {k} holds {k * n}." for k in range(40))


async def test_a_silent_overflow_compacts_and_the_turn_goes_on(
    server: SilentWindowServer, tmp_path: Path
) -> None:
    session = session_for(server.base_url, tmp_path)
    seen: list[Event] = []
    session.subscribe(seen.append)
    try:
        for n in range(8):
            result = await session.run_turn(notes(n))
            assert result.final_text == "Noted."
    finally:
        await session.aclose()
    assert server.dropped >= 2, f"no request overflowed, the test proves nothing: {server.sizes}"
    overflows = [e for e in seen if isinstance(e, ContextCompacted) and e.phase == "overflow"]
    assert overflows, [type(e).__name__ for e in seen]
    # each silent close was tried once more before it was taken as an overflow
    assert sum(isinstance(e, RetryScheduled) for e in seen) == len(overflows)


async def test_a_dropped_stream_of_a_short_request_is_retried(tmp_path: Path) -> None:
    server = SilentWindowServer(WINDOW, drop_first=True)
    session = session_for(server.base_url, tmp_path)
    seen: list[Event] = []
    session.subscribe(seen.append)
    try:
        result = await session.run_turn("hello")
    finally:
        await session.aclose()
        server.close()
    assert result.final_text == "Noted."
    assert server.dropped == 1 and len(server.sizes) == 2
    assert not [e for e in seen if isinstance(e, ContextCompacted)]
