"""Our fake servers and recordings checked against the ``openai`` package's own types.

Every SSE payload the loopback servers emit (read back over HTTP, as a client sees it)
must validate: Responses events against the SDK's stream-event union, made a real
discriminated union on ``type``; Chat Completions chunks against
``ChatCompletionChunk``. The request bodies our session sends are checked against the
SDK's request types too, skipping the two Codex-style shapes the SDK knowingly rejects
(assistant history without ids, reasoning items without ids). A few deliberately
non-OpenAI shapes (error chunks of other servers) are listed and left out. The SDK is a
test-only dependency; nothing at runtime imports it.
"""

from __future__ import annotations

import asyncio
import json
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Union

import httpx
import pytest
from pydantic import Field, TypeAdapter, ValidationError

from agent_magics import Session, SessionConfig
from agent_magics.models._sse import SseParser
from agent_magics.protocol.approval import approve_all
from agent_magics.testing import (
    ScriptedResponsesServer,
    custom_tool_call,
    function_call,
    message,
    response_events,
)
from tests.helpers.chat_fault_server import chat_chunks, chat_fault_server, delta
from tests.helpers.fault_server import Answer, FaultServer, failed_response, ok
from tests.helpers.paths import ROOT

openai_types = pytest.importorskip("openai.types", reason="the openai package (test extra)")
from openai.types.chat import ChatCompletionChunk  # noqa: E402
from openai.types.chat.completion_create_params import (  # noqa: E402
    CompletionCreateParamsStreaming,
)
from openai.types.responses import ResponseInputItemParam, ResponseStreamEvent  # noqa: E402
from openai.types.responses.tool_param import ToolParam  # noqa: E402

RECORDINGS = ROOT / "agent_magics" / "recordings"
PATCH = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"
REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "thinking"}],
    "encrypted_content": "opaque",
}
OUTPUT_SETS = [
    pytest.param([message("hello " * 20)], id="message"),
    pytest.param([REASONING, message("ok")], id="reasoning"),
    pytest.param([function_call("update_plan", {"plan": []})], id="function-call"),
    pytest.param([custom_tool_call("apply_patch", PATCH)], id="custom-tool-call"),
    pytest.param([message("two"), function_call("a", {}), function_call("b", "{}")], id="parallel"),
]


def stream_event_adapter() -> TypeAdapter[Any]:
    members = typing.get_args(typing.get_args(ResponseStreamEvent)[0])
    return TypeAdapter(Annotated[Union[members], Field(discriminator="type")])  # noqa: UP007


EVENTS = stream_event_adapter()
CHUNK = TypeAdapter(ChatCompletionChunk)


def payloads(raw: bytes) -> Iterator[Any]:
    parser = SseParser()
    for data in [*parser.feed(raw), *parser.close()]:
        yield data.decode() if data == b"[DONE]" else json.loads(data)


def fetch(base_url: str, path: str) -> list[Any]:
    """Everything one POST to the server streams back, as parsed payloads."""
    response = httpx.post(f"{base_url}/{path}", json={"input": [], "messages": []}, timeout=10)
    response.raise_for_status()
    return list(payloads(response.content))


def check_responses_event(data: dict[str, Any]) -> None:
    EVENTS.validate_python(data)


def check_chat_payload(data: Any) -> None:
    if data != "[DONE]":
        CHUNK.validate_python(data)


# -- streams -------------------------------------------------------------------------------


@pytest.mark.parametrize("items", OUTPUT_SETS)
def test_scripted_responses_server_events(items: list[dict[str, Any]]) -> None:
    with ScriptedResponsesServer([items]) as server:
        events = fetch(server.base_url, "responses")
    assert events[-1]["type"] == "response.completed"
    for data in events:
        check_responses_event(data)


@pytest.mark.parametrize("items", OUTPUT_SETS)
def test_fault_server_streams_in_both_protocols(items: list[dict[str, Any]]) -> None:
    responses, chat = FaultServer([Answer(items=items)]), chat_fault_server([Answer(items=items)])
    try:
        for data in fetch(responses.base_url, "responses"):
            check_responses_event(data)
        chat_payloads = fetch(chat.base_url, "chat/completions")
    finally:
        responses.close()
        chat.close()
    assert chat_payloads[-1] == "[DONE]"
    for data in chat_payloads:
        check_chat_payload(data)


@pytest.mark.parametrize(
    "whole", [pytest.param(False, id="fragments"), pytest.param(True, id="whole")]
)
def test_chat_builder_variants(whole: bool) -> None:
    items = [message("hi"), function_call("f", {"a": 1}), custom_tool_call("apply_patch", PATCH)]
    for data in chat_chunks(items, whole_calls=whole, reasoning="hmm", size=3):
        check_chat_payload(data)


def test_failed_response_stream() -> None:
    events = list(payloads(failed_response("rate_limit_exceeded", "try again in 1s")))
    assert [e["type"] for e in events] == ["response.created", "response.failed"]
    for data in events:
        check_responses_event(data)


def test_shipped_recording_streams() -> None:
    lines = (RECORDINGS / "demo.jsonl").read_text().splitlines()
    header, exchanges = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert header["provider"] == "responses" and exchanges
    for exchange in exchanges:
        for data in exchange["response"]:
            check_responses_event(data)


# -- the oracle is strict where it matters -------------------------------------------------


def test_the_oracle_rejects_what_the_protocol_does_not_allow() -> None:
    completed = list(response_events([message("x")]))[-1]
    del completed["response"]["usage"]["input_tokens_details"]["cache_write_tokens"]
    with pytest.raises(ValidationError):
        check_responses_event(completed)
    with pytest.raises(ValidationError):
        check_responses_event({"type": "response.made_up", "sequence_number": 0})
    ollama_style = delta({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": ""}}]})
    with pytest.raises(ValidationError):
        check_chat_payload(ollama_style)


# Shapes our tests send on purpose that are not OpenAI's (other servers' dialects):
# chat_error (OpenRouter's mid-stream error), vLLM's {"object": "error"}, and chunks
# without tool_calls[].index (older Ollama). The client tests use them; no check here.


# -- requests ------------------------------------------------------------------------------


def session_requests(tmp_path: Path, protocol: str) -> list[dict[str, Any]]:
    turns = [
        Answer(items=[REASONING, message("Looking."), function_call("update_plan", {"plan": []})]),
        Answer(items=[custom_tool_call("apply_patch", PATCH)]),
        ok("done"),
    ]
    server = chat_fault_server(turns) if protocol == "chat" else FaultServer(turns)
    try:
        config = SessionConfig(
            model="m",
            provider=protocol,
            base_url=server.base_url,
            api_key="sk-x",
            cwd=tmp_path,
            approval_policy="never",
            reasoning_effort="low",
        )
        session = Session(config, approver=approve_all)
        asyncio.run(session.run_turn("go"))
        asyncio.run(session.aclose())
    finally:
        server.close()
    return server.requests


def test_responses_request_items_and_tools(tmp_path: Path) -> None:
    requests = session_requests(tmp_path, "responses")
    input_item = TypeAdapter(ResponseInputItemParam)
    tool = TypeAdapter(ToolParam)
    checked = 0
    for body in requests:
        for item in body["input"]:
            if item["type"] == "reasoning" or item.get("role") == "assistant":
                continue  # Codex-style history the SDK types reject knowingly (no ids)
            input_item.validate_python(item)
            checked += 1
        for spec in body["tools"]:
            tool.validate_python(spec)
    assert checked >= 8


def test_chat_request_bodies(tmp_path: Path) -> None:
    requests = session_requests(tmp_path, "chat")
    body_type = TypeAdapter(CompletionCreateParamsStreaming)
    for body in requests:
        body_type.validate_python(body)
    last = requests[-1]["messages"]
    assert [m["role"] for m in last].count("tool") == 2
