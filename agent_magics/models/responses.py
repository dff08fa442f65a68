"""A streaming client for ``POST {base_url}/responses`` (the OpenAI Responses API).

Retries, status errors and stream reading are shared with the other protocols
(:mod:`agent_magics.models.http`); this module builds the body as Codex writes it and
maps the stream's events.
"""

from __future__ import annotations

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
from agent_magics.models.http import RETRY_STATUSES, RetryHook, SseClient
from agent_magics.models.stream import (
    NOT_RETRYABLE_FAILURES,
    BaseDecoder,
    json_object,
    stream_failure,
    token_count,
)
from agent_magics.protocol.items import MalformedItem, check_item_shape

TOOL_INPUT_DELTAS = frozenset(
    {"response.function_call_arguments.delta", "response.custom_tool_call_input.delta"}
)
REASONING_DELTAS = frozenset(
    {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
)


def responses_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body, fields in the order Codex writes them."""
    body: dict[str, Any] = {"model": request.model}
    if request.instructions:
        body["instructions"] = request.instructions
    body["input"] = request.input
    body["tools"] = request.tools
    body["tool_choice"] = request.tool_choice
    body["parallel_tool_calls"] = request.parallel_tool_calls
    body["reasoning"] = request.reasoning
    body["store"] = False
    body["stream"] = True
    body["include"] = ["reasoning.encrypted_content"] if request.reasoning else []
    if request.prompt_cache_key:
        body["prompt_cache_key"] = request.prompt_cache_key
    if request.output_schema is not None:
        body["text"] = {"format": json_schema_format(request.output_schema)}
    return body


def json_schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    """``text.format`` for a final answer held to ``schema``, as Codex 0.171 sends it
    (strict; no ``verbosity`` beside it)."""
    return {"type": "json_schema", "strict": True, "schema": schema, "name": OUTPUT_SCHEMA_NAME}


class ResponsesDecoder(BaseDecoder):
    """Maps Responses stream events; ``response.completed`` is held until the end."""

    def __init__(self) -> None:
        super().__init__()
        self.completed: Completed | None = None

    def feed_all(self, batch: list[dict[str, Any]]) -> list[ModelEvent]:
        buffer = self._buffer
        for data in batch:
            kind = data.get("type")
            if kind == "response.output_text.delta":
                delta = data.get("delta")
                buffer.text(str(data.get("item_id", "")), delta if isinstance(delta, str) else "")
            elif isinstance(kind, str):
                event = self._other(kind, data)
                if event is not None:
                    buffer.add(event)
        return buffer.take()

    def _other(self, kind: str, data: dict[str, Any]) -> ModelEvent | None:
        if kind == "response.output_item.done":
            return ItemDone(_item(data.get("item")))
        if kind == "response.output_item.added":
            item = data.get("item")
            return ItemAdded(_item(item)) if isinstance(item, dict) else None
        if kind in TOOL_INPUT_DELTAS:
            return ToolInputDelta(str(data.get("item_id", "")), str(data.get("delta", "")))
        if kind in REASONING_DELTAS:
            return ReasoningDelta(str(data.get("item_id", "")), str(data.get("delta", "")))
        response = json_object(data.get("response"))
        if kind == "response.completed":
            self.completed = Completed(str(response.get("id", "")), parse_usage(response))
        elif kind == "response.incomplete":
            reason = json_object(response.get("incomplete_details")).get("reason")
            raise StreamFailed(f"Incomplete response returned, reason: {reason}", retryable=True)
        elif kind in ("response.failed", "error"):
            err = json_object(response.get("error")) or data
            code = str(err.get("code") or "")
            raise stream_failure(code, str(err.get("message") or "response.failed"))
        return None

    def finish(self, done_marker: bool) -> list[ModelEvent]:
        if self.completed is None:
            raise StreamFailed("stream closed before response.completed", retryable=True)
        return [self.completed]


def _item(value: Any) -> dict[str, Any]:
    """An output item fit to hand on (see :func:`check_item_shape`); anything else ends
    the stream with one sentence."""
    try:
        return check_item_shape(value)
    except MalformedItem as exc:
        raise StreamFailed(f"the model server sent {exc}", retryable=False) from None


class ResponsesClient(SseClient):
    """Speaks the Responses API."""

    endpoint = "responses"
    provider = "responses"

    def body(self, request: ModelRequest) -> dict[str, Any]:
        return responses_body(request)

    def decoder(self, request: ModelRequest) -> ResponsesDecoder:
        return ResponsesDecoder()


def parse_usage(response: dict[str, Any]) -> Usage:
    """The token counts of a response; counts that are not whole numbers read as 0."""
    raw = json_object(response.get("usage"))
    inp = json_object(raw.get("input_tokens_details"))
    out = json_object(raw.get("output_tokens_details"))
    return Usage(
        input_tokens=token_count(raw.get("input_tokens")),
        cached_input_tokens=token_count(inp.get("cached_tokens")),
        output_tokens=token_count(raw.get("output_tokens")),
        reasoning_output_tokens=token_count(out.get("reasoning_tokens")),
        total_tokens=token_count(raw.get("total_tokens")),
    )


__all__ = [
    "NOT_RETRYABLE_FAILURES",
    "RETRY_STATUSES",
    "ResponsesClient",
    "ResponsesDecoder",
    "RetryHook",
    "parse_usage",
    "responses_body",
]
