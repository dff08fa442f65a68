"""Chat Completions streams for the loopback fault server, shaped as OpenAI sends them.

``chat_chunks`` turns Responses-style items (the same builders the Responses tests
use) into ``chat.completion.chunk`` payloads: text in content fragments, each call
opened with its id and name and then continued by ``index`` in argument fragments (or
sent whole, as Ollama does), a finish chunk, and the usage chunk with no choices.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from tests.helpers.fault_server import Answer, FaultServer

CHAT_USAGE = {
    "prompt_tokens": 11,
    "completion_tokens": 7,
    "total_tokens": 18,
    "prompt_tokens_details": {"cached_tokens": 3},
    "completion_tokens_details": {"reasoning_tokens": 2},
}


def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "scripted",
        "choices": choices,
        **extra,
    }


def delta(body: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return chunk([{"index": 0, "delta": body, "finish_reason": finish}])


def _call_parts(item: dict[str, Any]) -> tuple[str, str, str]:
    if item["type"] == "custom_tool_call":
        return item["call_id"], item["name"], json.dumps({"input": item["input"]})
    return item["call_id"], item["name"], item["arguments"]


def chat_chunks(
    items: list[dict[str, Any]],
    *,
    size: int = 16,
    whole_calls: bool = False,
    usage: dict[str, Any] | None = CHAT_USAGE,
    reasoning: str = "",
) -> Iterator[dict[str, Any]]:
    yield delta({"role": "assistant", "content": ""})
    if reasoning:
        yield delta({"reasoning_content": reasoning})
    for item in items:
        if item["type"] == "message":
            text = "".join(p["text"] for p in item["content"])
            for start in range(0, len(text), size):
                yield delta({"content": text[start : start + size]})
    calls = [i for i in items if i["type"] in ("function_call", "custom_tool_call")]
    for index, item in enumerate(calls):
        call_id, name, arguments = _call_parts(item)
        head = {"index": index, "id": call_id, "type": "function"}
        if whole_calls:
            function = {"name": name, "arguments": arguments}
            yield delta({"tool_calls": [{**head, "function": function}]})
            continue
        yield delta({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        for start in range(0, len(arguments), size):
            piece = {"index": index, "function": {"arguments": arguments[start : start + size]}}
            yield delta({"tool_calls": [piece]})
    yield delta({}, "tool_calls" if calls else "stop")
    if usage is not None:
        yield chunk([], usage=usage)


def encode_chat(chunks: Iterable[dict[str, Any] | str], done: bool = True) -> bytes:
    """``data:`` lines; a string is sent as it is (``[DONE]``, or a comment line)."""
    out = []
    for c in chunks:
        out.append(c if isinstance(c, str) else f"data: {json.dumps(c)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def chat_error(code: str, text: str) -> bytes:
    """A stream whose data is an error object, as OpenRouter sends mid-stream failures."""
    return encode_chat([chunk([], error={"code": code, "message": text})], done=False)


def chat_sse(items: list[dict[str, Any]]) -> bytes:
    return encode_chat(chat_chunks(items))


def chat_fault_server(answers: list[Answer]) -> FaultServer:
    return FaultServer(answers, encode=chat_sse)
