"""The Chat Completions client: the request it writes and the streams it reads, over a
real loopback server, and a whole session turn through it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_magics import Session, SessionConfig
from agent_magics.events import Event, TextDelta
from agent_magics.models.base import (
    Completed,
    ItemAdded,
    ItemDone,
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    StreamFailed,
    ToolInputDelta,
)
from agent_magics.models.chat import ChatClient, chat_body
from agent_magics.models.chat_convert import chat_messages, chat_tool_choice, chat_tools
from agent_magics.protocol.approval import approve_all
from agent_magics.testing import custom_tool_call, function_call, message
from tests.helpers.chat_fault_server import (
    chat_chunks,
    chat_fault_server,
    chunk,
    delta,
    encode_chat,
)
from tests.helpers.fault_server import Answer, FaultServer, ok

KEY = "sk-chat-secret-5550123"
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"
FUNCTION_TOOL = {
    "type": "function",
    "name": "list_dir",
    "description": "List a folder.",
    "strict": False,
    "parameters": {"type": "object", "properties": {"dir_path": {"type": "string"}}},
}
FREEFORM_TOOL = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files.",
    "format": {"type": "grammar", "syntax": "lark", "definition": "start: 'x'"},
}


@pytest.fixture
def server() -> Iterator[FaultServer]:
    srv = chat_fault_server([])
    yield srv
    srv.close()


def request(**extra: Any) -> ModelRequest:
    fields: dict[str, Any] = {
        "model": "m",
        "instructions": "be brief",
        "input": [{"type": "message", "role": "user", "content": "hi"}],
        "tools": [FUNCTION_TOOL, FREEFORM_TOOL],
    } | extra
    return ModelRequest(**fields)


async def collect(server: FaultServer, raw: bytes, **extra: Any) -> list[ModelEvent]:
    server.answers = [Answer(raw=raw)]
    client = ChatClient(server.base_url, KEY)
    try:
        return [e async for e in client.stream(request(**extra))]
    finally:
        await client.aclose()


def done_items(events: list[ModelEvent]) -> list[dict[str, Any]]:
    return [e.item for e in events if isinstance(e, ItemDone)]


# -- the request -------------------------------------------------------------------------


def test_history_becomes_messages() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "d"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "u"}]},
        {"type": "reasoning", "summary": [], "encrypted_content": "zzz"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
        {"type": "function_call", "call_id": "c1", "name": "list_dir", "arguments": '{"x":1}'},
        {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": PATCH},
        {"type": "function_call_output", "call_id": "c1", "output": "listing"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": [image]},
        {"type": "web_search_call", "id": "ws_1"},
        {"role": "user", "content": "next"},
    ]
    assert chat_messages("sys", items) == [
        {"role": "system", "content": "sys"},
        {"role": "system", "content": "d"},
        {"role": "user", "content": "u"},
        {
            "role": "assistant",
            "content": "a",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "list_dir", "arguments": '{"x":1}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "apply_patch", "arguments": json.dumps({"input": PATCH})},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "listing"},
        {"role": "tool", "tool_call_id": "c2", "content": ""},
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": image["image_url"]}}],
        },
        {"role": "user", "content": "next"},
    ]


def test_calls_without_text_get_an_empty_content() -> None:
    items = [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": ""}]
    [assistant] = chat_messages("", items)
    assert assistant["content"] == ""
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"


def test_tools_freeform_becomes_one_string_parameter() -> None:
    builtin = {"type": "web_search"}
    tools, freeform = chat_tools([FUNCTION_TOOL, FREEFORM_TOOL, builtin])
    assert freeform == {"apply_patch"}
    assert tools[0] == {
        "type": "function",
        "function": {
            "name": "list_dir",
            "description": "List a folder.",
            "parameters": FUNCTION_TOOL["parameters"],
        },
    }
    patch = tools[1]["function"]
    assert patch["parameters"]["required"] == ["input"]
    assert patch["parameters"]["properties"]["input"]["type"] == "string"
    assert patch["description"].startswith("Edit files.\n\n")
    assert "start: 'x'" in patch["description"]
    assert len(tools) == 2


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        pytest.param("auto", "auto", id="auto"),
        pytest.param("none", "none", id="none"),
        pytest.param(
            {"type": "function", "name": "list_dir"},
            {"type": "function", "function": {"name": "list_dir"}},
            id="responses-function",
        ),
        pytest.param(
            {"type": "custom", "name": "apply_patch"},
            {"type": "function", "function": {"name": "apply_patch"}},
            id="responses-custom",
        ),
        pytest.param(
            {"type": "function", "function": {"name": "f"}},
            {"type": "function", "function": {"name": "f"}},
            id="already-chat",
        ),
    ],
)
def test_tool_choice(choice: Any, expected: Any) -> None:
    assert chat_tool_choice(choice) == expected


def test_body_fields() -> None:
    body = chat_body(request(reasoning={"effort": "low", "summary": "auto"}))
    assert list(body) == [
        "model",
        "messages",
        "stream",
        "stream_options",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning_effort",
    ]
    assert body["stream_options"] == {"include_usage": True}
    no_tools = chat_body(request(tools=[]))
    assert "tools" not in no_tools and "tool_choice" not in no_tools


async def test_request_goes_to_chat_completions_with_the_key(server: FaultServer) -> None:
    events = await collect(server, encode_chat(chat_chunks([message("hey")])))
    assert server.paths == ["/v1/chat/completions"]
    assert server.auth == [f"Bearer {KEY}"]
    assert KEY not in json.dumps(server.requests)
    assert done_items(events) == [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "hey"}],
        }
    ]


# -- the stream --------------------------------------------------------------------------


async def test_text_reasoning_and_usage(server: FaultServer) -> None:
    raw = encode_chat(chat_chunks([message("a" * 40)], reasoning="thinking"))
    events = await collect(server, raw)
    assert [e.delta for e in events if isinstance(e, ReasoningDelta)] == ["thinking"]
    assert done_items(events)[0] == {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "thinking"}],
    }
    done = events[-1]
    assert isinstance(done, Completed)
    assert done.response_id == "chatcmpl-1"
    assert (done.usage.input_tokens, done.usage.cached_input_tokens) == (11, 3)
    assert (done.usage.output_tokens, done.usage.reasoning_output_tokens) == (7, 2)
    assert done.usage.total_tokens == 18


async def test_reasoning_field_named_reasoning(server: FaultServer) -> None:
    raw = encode_chat([delta({"reasoning": "r1"}), delta({"content": "x"}, "stop")])
    events = await collect(server, raw)
    assert [e.delta for e in events if isinstance(e, ReasoningDelta)] == ["r1"]


@pytest.mark.parametrize(
    "whole", [pytest.param(False, id="fragments"), pytest.param(True, id="whole")]
)
async def test_calls_gathered_and_freeform_converted_back(server: FaultServer, whole: bool) -> None:
    items = [
        message("Let me look."),
        function_call("list_dir", {"dir_path": "/x"}, "c1"),
        custom_tool_call("apply_patch", PATCH, "c2"),
    ]
    events = await collect(server, encode_chat(chat_chunks(items, size=7, whole_calls=whole)))
    assert done_items(events)[1:] == [
        {
            "type": "function_call",
            "name": "list_dir",
            "arguments": '{"dir_path": "/x"}',
            "call_id": "c1",
        },
        {"type": "custom_tool_call", "name": "apply_patch", "input": PATCH, "call_id": "c2"},
    ]
    added = [e.item["type"] for e in events if isinstance(e, ItemAdded)]
    assert added == ["message", "function_call", "custom_tool_call"]
    assert any(isinstance(e, ToolInputDelta) for e in events)


async def test_interleaved_parallel_fragments_by_index(server: FaultServer) -> None:
    raw = encode_chat(
        [
            delta(
                {
                    "tool_calls": [
                        {"index": 1, "id": "b", "function": {"name": "g", "arguments": ""}}
                    ]
                }
            ),
            delta(
                {
                    "tool_calls": [
                        {"index": 0, "id": "a", "function": {"name": "f", "arguments": "{"}}
                    ]
                }
            ),
            delta({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
            delta({"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}, "tool_calls"),
        ]
    )
    items = done_items(await collect(server, raw))
    assert [(i["call_id"], i["name"], i["arguments"]) for i in items] == [
        ("b", "g", "{}"),
        ("a", "f", "{}"),
    ]


async def test_calls_without_index_are_told_apart_by_id(server: FaultServer) -> None:
    raw = encode_chat(
        [
            delta({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": '{"n":1}'}}]}),
            delta({"tool_calls": [{"id": "b", "function": {"name": "f", "arguments": '{"n":2}'}}]}),
            delta({}, "stop"),
        ]
    )
    items = done_items(await collect(server, raw))
    assert [(i["call_id"], i["arguments"]) for i in items] == [("a", '{"n":1}'), ("b", '{"n":2}')]


async def test_legacy_function_call_duplicate_is_ignored(server: FaultServer) -> None:
    fragment = {"name": "f", "arguments": "{}"}
    raw = encode_chat(
        [
            delta(
                {
                    "function_call": fragment,
                    "tool_calls": [
                        {"index": 0, "id": "a", "type": "function", "function": fragment}
                    ],
                }
            ),
            delta({"function_call": None, "tool_calls": None}, "tool_calls"),
        ]
    )
    items = done_items(await collect(server, raw))
    assert [(i["call_id"], i["arguments"]) for i in items] == [("a", "{}")]


async def test_missing_ids_are_made_up_and_unique(server: FaultServer) -> None:
    raw = encode_chat(
        [
            delta({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]}),
            delta({"tool_calls": [{"index": 1, "function": {"name": "f", "arguments": "{}"}}]}),
            delta({}, "tool_calls"),
        ]
    )
    ids = [i["call_id"] for i in done_items(await collect(server, raw))]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)


async def test_keepalive_comments_and_missing_done_are_tolerated(server: FaultServer) -> None:
    raw = encode_chat(
        [": OPENROUTER PROCESSING\n\n", delta({"content": "ok"}), delta({}, "stop")], done=False
    )
    assert done_items(await collect(server, raw))[0]["content"][0]["text"] == "ok"


async def test_done_without_finish_reason_is_tolerated(server: FaultServer) -> None:
    raw = encode_chat([delta({"content": "ok"})], done=True)
    assert done_items(await collect(server, raw))[0]["content"][0]["text"] == "ok"


@pytest.mark.parametrize(
    ("raw", "message_text", "retryable"),
    [
        pytest.param(
            encode_chat([delta({"content": "par"})], done=False),
            "stream closed before the answer finished",
            True,
            id="eof-without-finish",
        ),
        pytest.param(
            encode_chat(
                [delta({"content": "x"}), {"error": {"message": "upstream died", "code": 502}}]
            ),
            "upstream died",
            True,
            id="openrouter-error-chunk",
        ),
        pytest.param(
            encode_chat([{"object": "error", "message": "bad state", "type": "BadRequestError"}]),
            "bad state",
            True,
            id="vllm-error-object",
        ),
        pytest.param(
            encode_chat([delta({"content": "x"}, "error")]),
            "the model server ended the answer with an error",
            True,
            id="finish-reason-error",
        ),
        pytest.param(
            encode_chat(
                [chunk([], error={"code": "context_length_exceeded", "message": "too long"})]
            ),
            "too long (context_length_exceeded)",
            False,
            id="context-length",
        ),
    ],
)
async def test_stream_failures(
    server: FaultServer, raw: bytes, message_text: str, retryable: bool
) -> None:
    with pytest.raises(StreamFailed) as info:
        await collect(server, raw)
    assert info.value.message == message_text
    assert info.value.retryable is retryable


async def test_error_text_with_the_key_is_redacted(server: FaultServer) -> None:
    raw = encode_chat([{"error": {"message": f"bad key {KEY}"}}])
    with pytest.raises(StreamFailed) as info:
        await collect(server, raw)
    assert info.value.message == "bad key [redacted]"


# -- a whole turn ------------------------------------------------------------------------


async def test_session_turn_over_chat_applies_a_freeform_patch(tmp_path: Path) -> None:
    server = chat_fault_server(
        [Answer(items=[custom_tool_call("apply_patch", PATCH, "c1")]), ok("patched")]
    )
    events: list[Event] = []
    try:
        config = SessionConfig(
            model="m",
            provider="chat",
            base_url=server.base_url,
            api_key=KEY,
            cwd=tmp_path,
            shell_type="disabled",
            approval_policy="never",
        )
        session = Session(config, approver=approve_all)
        session.subscribe(events.append)
        result = await session.run_turn("make hello.txt")
        await session.aclose()
    finally:
        server.close()
    assert result.final_text == "patched"
    assert (tmp_path / "hello.txt").read_text() == "hi\n"
    assert result.usage.total_tokens == 36 and session.usage.total_tokens == 36
    second = server.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"] == {
        "name": "apply_patch",
        "arguments": json.dumps({"input": PATCH}),
    }
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "c1"
    assert second[-1]["content"].startswith("Exit code: 0\nWall time: ")
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "patched"
    assert [i.type for i in session.history][-3:] == [
        "custom_tool_call",
        "custom_tool_call_output",
        "message",
    ]
