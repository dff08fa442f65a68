"""A streaming client for ``POST {base_url}/chat/completions`` with tools.

For servers that speak Chat Completions only (older Ollama, vLLM, LM Studio, llama.cpp's
server, OpenRouter...). The request is rewritten from our Responses-style history
(:mod:`agent_magics.models.chat_convert`); the stream is read back into Responses items,
so the session, history and tools never know which protocol ran. Retries and errors are
those of every client (:mod:`agent_magics.models.http`).

Reading the stream: tool-call fragments are gathered by ``index`` (or by position and
``id`` where a server leaves the index out); a fragment may hold a whole call; a new
``id`` under an index already used starts a new call; the usage chunk may come last
with no choices; reasoning arrives as ``reasoning`` or ``reasoning_content``. A turn
ends in tool calls when calls were gathered, whatever ``finish_reason`` says.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from agent_magics.events import Usage
from agent_magics.models.base import (
    OUTPUT_SCHEMA_NAME,
    Completed,
    ItemAdded,
    ItemDone,
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    StreamFailed,
    ToolInputDelta,
)
from agent_magics.models.chat_convert import chat_messages, chat_tool_choice, chat_tools
from agent_magics.models.http import SseClient
from agent_magics.models.stream import (
    BaseDecoder,
    DeltaBuffer,
    json_object,
    stream_failure,
    token_count,
)


def chat_body(request: ModelRequest) -> dict[str, Any]:
    tools, _ = chat_tools(request.tools)
    body: dict[str, Any] = {
        "model": request.model,
        "messages": chat_messages(request.instructions, request.input),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools:
        body["tools"] = tools
        body["tool_choice"] = chat_tool_choice(request.tool_choice)
        body["parallel_tool_calls"] = request.parallel_tool_calls
    effort = (request.reasoning or {}).get("effort")
    if effort:
        body["reasoning_effort"] = effort
    if request.output_schema is not None:
        body["response_format"] = chat_response_format(request.output_schema)
    return body


def chat_response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions form of a final answer held to ``schema`` (strict, under the
    name the Responses request gives it)."""
    inner = {"name": OUTPUT_SCHEMA_NAME, "strict": True, "schema": schema}
    return {"type": "json_schema", "json_schema": inner}


def chat_usage(raw: dict[str, Any]) -> Usage:
    prompt = json_object(raw.get("prompt_tokens_details"))
    completion = json_object(raw.get("completion_tokens_details"))
    return Usage(
        input_tokens=token_count(raw.get("prompt_tokens")),
        cached_input_tokens=token_count(prompt.get("cached_tokens")),
        output_tokens=token_count(raw.get("completion_tokens")),
        reasoning_output_tokens=token_count(completion.get("reasoning_tokens")),
        total_tokens=token_count(raw.get("total_tokens")),
    )


def _short_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


@dataclass
class _Call:
    item_id: str
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChatDecoder(BaseDecoder):
    """Gathers one streamed chat completion into Responses items."""

    def __init__(self, freeform: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.freeform = freeform
        self.response_id = ""
        self.message_id = ""
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[_Call] = []
        self._slots: dict[tuple[str, int], _Call] = {}
        self.finish_reason: str | None = None
        self.usage = Usage()

    def feed_all(self, batch: list[dict[str, Any]]) -> list[ModelEvent]:
        for data in batch:
            self._chunk(data)
        return self._buffer.take()

    def _chunk(self, data: dict[str, Any]) -> None:
        error = data.get("error")
        if error or data.get("object") == "error":
            err = error if isinstance(error, dict) else data
            code = str(err.get("code") or err.get("type") or "")
            raise stream_failure(code, str(err.get("message") or error or "stream error"))
        self.response_id = self.response_id or str(data.get("id") or "")
        if isinstance(data.get("usage"), dict):
            self.usage = chat_usage(data["usage"])
        choices = data.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if isinstance(choice, dict) and (choice.get("index") or 0) == 0:
                self._choice(choice, self._buffer)

    def _choice(self, choice: dict[str, Any], events: DeltaBuffer) -> None:
        delta = json_object(choice.get("delta"))
        reasoning = delta.get("reasoning") or delta.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            self.reasoning.append(reasoning)
            events.add(ReasoningDelta("reasoning", reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            if not self.message_id:
                self.message_id = _short_id("msg")
                events.add(ItemAdded(self._message_item([], "in_progress")))
            self.text.append(content)
            events.text(self.message_id, content)
        fragments = delta.get("tool_calls")
        if not fragments and isinstance(delta.get("function_call"), dict):
            fragments = [delta["function_call"]]  # the legacy single-call form
        for position, fragment in enumerate(fragments if isinstance(fragments, list) else ()):
            if isinstance(fragment, dict):
                self._fragment(position, fragment, events)
        reason = choice.get("finish_reason")
        if reason:
            self.finish_reason = str(reason)
            if reason == "error":
                raise StreamFailed(
                    "the model server ended the answer with an error", retryable=True
                )

    def _fragment(self, position: int, frag: dict[str, Any], events: DeltaBuffer) -> None:
        index = frag.get("index")
        slot = ("index", index) if isinstance(index, int) else ("position", position)
        inner = frag.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else frag
        call_id = str(frag.get("id") or "")
        name = fn.get("name")
        name = name if isinstance(name, str) else ""  # the call is then answered as nameless
        call = self._slots.get(slot)
        if call is None or (call_id and call.call_id and call_id != call.call_id):
            call = _Call(_short_id("fc"), call_id, name)
            self._slots[slot] = call
            self.calls.append(call)
            events.add(ItemAdded(self._call_item(call, "in_progress")))
        call.call_id = call.call_id or call_id
        call.name = call.name or name
        arguments = fn.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            arguments = json.dumps(arguments)  # the tool rejects it in its own words
        if isinstance(arguments, str) and arguments:
            call.arguments.append(arguments)
            events.add(ToolInputDelta(call.item_id, arguments))

    def _message_item(self, content: list[dict[str, Any]], status: str) -> dict[str, Any]:
        return {
            "type": "message",
            "id": self.message_id,
            "role": "assistant",
            "status": status,
            "content": content,
        }

    def _call_item(self, call: _Call, status: str) -> dict[str, Any]:
        raw = "".join(call.arguments)
        if call.name in self.freeform:
            item = {"type": "custom_tool_call", "name": call.name, "input": _freeform_input(raw)}
        else:
            item = {"type": "function_call", "name": call.name, "arguments": raw}
        item["call_id"] = call.call_id
        if status != "completed":
            item["status"] = status
        return item

    def finish(self, done_marker: bool) -> list[ModelEvent]:
        if self.finish_reason is None and not done_marker:
            raise StreamFailed("stream closed before the answer finished", retryable=True)
        events: list[ModelEvent] = []
        if self.reasoning:
            summary = [{"type": "summary_text", "text": "".join(self.reasoning)}]
            events.append(ItemDone({"type": "reasoning", "summary": summary}))
        if self.text:
            text = "".join(self.text)
            part = {"type": "output_text", "text": text}
            events.append(ItemDone({"type": "message", "role": "assistant", "content": [part]}))
        for call in self.calls:
            call.call_id = call.call_id or _short_id("call")
            events.append(ItemDone(self._call_item(call, "completed")))
        events.append(Completed(self.response_id, self.usage))
        return events


def _freeform_input(raw: str) -> str:
    """The ``input`` string of a freeform call; raw text if the model sent no JSON."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return raw
    if isinstance(value, dict):
        if isinstance(value.get("input"), str):
            return str(value["input"])
        strings = [v for v in value.values() if isinstance(v, str)]
        if len(strings) == 1:
            return strings[0]
    return raw


class ChatClient(SseClient):
    """Speaks Chat Completions, reading and writing Responses items."""

    endpoint = "chat/completions"
    provider = "chat"

    def body(self, request: ModelRequest) -> dict[str, Any]:
        return chat_body(request)

    def decoder(self, request: ModelRequest) -> ChatDecoder:
        return ChatDecoder(chat_tools(request.tools)[1])
