"""Whatever shape the model server sends, a turn ends well: a call the model made badly
is answered to it and the turn goes on; what only the server could have got wrong ends
the turn with one sentence. Each case runs a session of one or both protocols against a
loopback server that sends the exact bytes."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_magics import Session, SessionConfig
from agent_magics.errors import ModelError
from agent_magics.models._sse import EVENT_TOO_LARGE
from agent_magics.models.http import ERROR_DETAIL_CHARS
from agent_magics.testing import message
from tests.helpers.bad_streams import DEEP, deep_event, oversize_event, responses_raw
from tests.helpers.chat_fault_server import delta, encode_chat
from tests.helpers.fault_run import FaultRun
from tests.helpers.fault_server import Answer, ok

PROTOCOLS = [pytest.param("responses", id="responses"), pytest.param("chat", id="chat")]
FAILED = "The model's answer failed: "
PLAN_STRUCT = "expected struct UpdatePlanArgs"


def chat_call(name: Any, arguments: Any, call_id: str = "c1") -> bytes:
    function = {"name": name, "arguments": arguments}
    call = {"index": 0, "id": call_id, "type": "function", "function": function}
    return encode_chat([delta({"tool_calls": [call]}), delta({}, "tool_calls")])


def call_answer(protocol: str, name: Any, arguments: Any) -> Answer:
    """One function call ``c1`` with ``name`` and ``arguments`` as the server sends them."""
    if protocol == "chat":
        return Answer(raw=chat_call(name, arguments))
    item = {"type": "function_call", "call_id": "c1", "name": name, "arguments": arguments}
    return Answer(raw=responses_raw([item]))


def output_of(r: FaultRun, call_id: str = "c1") -> str:
    """What the second request told the model about ``call_id``."""
    body = r.server.requests[1]
    if r.protocol == "chat":
        found = [m["content"] for m in body["messages"] if m.get("tool_call_id") == call_id]
    else:
        found = [
            i["output"] for i in body["input"] if i.get("call_id") == call_id and "output" in i
        ]
    assert len(found) == 1
    return str(found[0])


# -- calls the model made badly are answered; the turn goes on ---------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    ("name", "arguments", "answer"),
    [
        pytest.param(None, "{}", "unsupported call: (the call names no tool)", id="null-name"),
        pytest.param(7, "{}", "unsupported call: (the call names no tool)", id="integer-name"),
        pytest.param(
            "update_plan",
            5,
            f"failed to parse function arguments: invalid type: integer `5`, {PLAN_STRUCT}"
            " at line 1 column 1",
            id="integer-arguments",
        ),
        pytest.param(
            "update_plan",
            ["a"],
            "failed to parse function arguments: missing field `plan` at line 1 column 5",
            id="list-arguments",
        ),
        pytest.param(
            "update_plan",
            "[" * DEEP,
            "failed to parse function arguments: recursion limit exceeded at line 1 column 128",
            id="deeply-nested-arguments",
        ),
    ],
)
async def test_odd_call_is_answered_and_the_turn_goes_on(
    fault_run: Callable[..., FaultRun], protocol: str, name: Any, arguments: Any, answer: str
) -> None:
    """Codex drops a call whose name or arguments are not strings (its ResponseItem does
    not parse), so the model never hears of it; here the model is told. Deeply nested
    arguments get serde_json's own words, as in Codex."""
    r = fault_run(protocol, [call_answer(protocol, name, arguments), ok("recovered")])
    assert await r.turn() == "recovered"
    assert output_of(r) == answer
    await r.session.aclose()
    assert r.calls_and_outputs_pair()


# -- what only the server could get wrong ends the turn with one sentence ----------------


@pytest.mark.parametrize(
    ("item", "sentence"),
    [
        pytest.param(
            "hello",
            "the model server sent an output item that is not a JSON object (a string).",
            id="string-item",
        ),
        pytest.param(
            {"type": "function_call", "name": "update_plan", "arguments": "{}"},
            "the model server sent a function_call without a call_id, so it cannot be answered.",
            id="missing-call-id",
        ),
        pytest.param(
            {"type": "custom_tool_call", "call_id": None, "name": "apply_patch", "input": ""},
            "the model server sent a custom_tool_call without a call_id, so it cannot be answered.",
            id="null-call-id",
        ),
        pytest.param(
            {"type": "message", "role": None, "content": []},
            "the model server sent a malformed message item (role: Input should be a valid "
            "string).",
            id="null-role",
        ),
        pytest.param(
            {"type": "weird", "value": json.loads("[" * 200 + "]" * 200)},
            "the model server sent an output item nested deeper than 128 levels.",
            id="deep-item",
        ),
    ],
)
async def test_malformed_item_ends_the_turn_with_one_sentence(
    fault_run: Callable[..., FaultRun], item: Any, sentence: str
) -> None:
    """Codex skips such an item with a debug log, and the turn goes on without it."""
    r = fault_run("responses", [Answer(raw=responses_raw([message("before"), item]))])
    error = await r.failing_turn()
    assert isinstance(error, ModelError)  # not worth a retry: exec exits 1, not 75
    assert str(error) == FAILED + sentence
    assert len(r.server.requests) == 1  # not retried: the same server would send it again
    await r.session.aclose()
    r.assert_clean()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_deeply_nested_event_ends_the_turn_with_one_sentence(
    fault_run: Callable[..., FaultRun], protocol: str
) -> None:
    r = fault_run(protocol, [Answer(raw=deep_event(protocol))])
    error = await r.failing_turn()
    assert str(error) == FAILED + "the model server sent an event nested deeper than 256 levels."
    await r.session.aclose()


def empty_answer(protocol: str) -> bytes:
    if protocol == "chat":
        return encode_chat([delta({"role": "assistant", "content": ""}), delta({}, "stop")])
    return responses_raw([])


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_answer_with_no_items_says_so(
    fault_run: Callable[..., FaultRun], protocol: str
) -> None:
    r = fault_run(protocol, [Answer(raw=empty_answer(protocol))])
    error = await r.failing_turn()
    assert str(error) == (
        FAILED + "the model server sent an answer with no message and no tool call."
    )
    await r.session.aclose()


# -- what can be read is kept ------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_message_with_invalid_utf8_is_kept(
    fault_run: Callable[..., FaultRun], protocol: str
) -> None:
    """Codex's SSE reader fails the stream on invalid UTF-8; here the bad bytes become
    replacement characters and the rest of the message is kept."""
    if protocol == "chat":
        payload = encode_chat([delta({"content": "MARK fine"}), delta({}, "stop")])
    else:
        payload = responses_raw([message("MARK fine")])
    r = fault_run(protocol, [Answer(raw=payload.replace(b"MARK", b"caf\xff\xfe"))])
    assert await r.turn() == "caf\ufffd\ufffd fine"
    await r.session.aclose()


async def test_odd_chat_shapes_are_read_as_absent_fields(
    fault_run: Callable[..., FaultRun],
) -> None:
    """Fields of the wrong type in a chunk are ignored, not a traceback."""
    chunks: list[dict[str, Any] | str] = [
        {"choices": 5},
        {"choices": [{"index": 0, "delta": "text"}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": 3, "content": "kept"}}]},
        {"choices": [], "usage": {"prompt_tokens": "many", "total_tokens": 1e400}},
        delta({}, "stop"),
    ]
    r = fault_run("chat", [Answer(raw=encode_chat(chunks))])
    assert await r.turn() == "kept"
    await r.session.aclose()


async def test_odd_responses_shapes_are_read_as_absent_fields(
    fault_run: Callable[..., FaultRun],
) -> None:
    extra = [
        {"type": ["not", "a", "string"]},
        {"type": "response.output_item.added", "item": "not an item"},
        {"type": "response.in_progress", "response": "not an object"},
    ]
    completed = {"id": "r", "usage": {"input_tokens": "many", "input_tokens_details": 3}}
    payload = responses_raw([message("kept")], extra).replace(
        b'"type": "response.completed", "response": {"id": "resp_raw", "object": "response", '
        b'"status": "completed", "output": []}',
        b'"type": "response.completed", "response": ' + json.dumps(completed).encode(),
    )
    r = fault_run("responses", [Answer(raw=payload)])
    assert await r.turn() == "kept"
    await r.session.aclose()


# -- nothing freezes or eats memory -------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_oversize_event_ends_the_stream_unretried(
    fault_run: Callable[..., FaultRun], protocol: str
) -> None:
    """Codex's SSE reader (eventsource-stream) buffers a line of any length."""
    r = fault_run(protocol, [Answer(raw=oversize_event(protocol))])
    error = await r.failing_turn()
    assert str(error) == FAILED + EVENT_TOO_LARGE + "."
    assert len(r.server.requests) == 1
    await r.session.aclose()


class HugeErrorServer:
    """Answers HTTP 400 with a body of ``size`` bytes, sent in pieces; counts how many
    bytes it got to write before the client closed the connection."""

    def __init__(self, size: int) -> None:
        self.sent = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(size))
                self.end_headers()
                piece = b'{"error": {"message": "' + b"y" * ((1 << 16) - 24)
                try:
                    while server.sent < size:
                        self.wfile.write(piece)
                        server.sent += len(piece)
                except OSError:
                    self.close_connection = True

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


async def test_huge_error_body_is_not_read_whole(tmp_path: Path) -> None:
    """Codex reads an error body whole (``resp.text()``)."""
    size = 256 << 20
    huge = HugeErrorServer(size)
    config = SessionConfig(
        model="m", provider="responses", base_url=huge.base_url, api_key="k", cwd=tmp_path,
        shell_type="disabled",
    )  # fmt: skip
    session = Session(config)
    try:
        with pytest.raises(ModelError) as info:
            await session.run_turn("go")
    finally:
        await session.aclose()
        huge.httpd.shutdown()
        huge.thread.join()
        huge.httpd.server_close()
    text = str(info.value)
    assert text.startswith('The model server rejected the request (HTTP 400): {"error": ')
    assert len(text) < 2 * ERROR_DETAIL_CHARS
    assert huge.sent < size // 4  # what the socket buffers took, not the body
