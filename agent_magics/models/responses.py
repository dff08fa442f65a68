"""A streaming client for ``POST {base_url}/responses`` (the OpenAI Responses API).

Retries, status errors and stream reading are shared with the other protocols
(:mod:`agent_magics.models.http`); this module builds the body as Codex writes it and
maps the stream's events.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agent_magics.events import Usage
from agent_magics.models._template import Hole, TextShape
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
from agent_magics.models.http import RETRY_STATUSES, RetryHook, SseClient
from agent_magics.models.stream import NOT_RETRYABLE_FAILURES, BaseDecoder, stream_failure

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
    return body


class ResponsesDecoder(BaseDecoder):
    """Maps Responses stream events; ``response.completed`` is held until the end."""

    text_shape: ClassVar[TextShape | None] = TextShape(
        text_path=("delta",),
        ignored={"sequence_number": Hole.COUNTER, "obfuscation": Hole.STRING},
    )

    def __init__(self) -> None:
        super().__init__()
        self.completed: Completed | None = None

    def plain_text(self, data: dict[str, Any]) -> str | None:
        if data.get("type") == "response.output_text.delta" and isinstance(data.get("delta"), str):
            return str(data.get("item_id", ""))
        return None

    def feed_text(self, item_id: str, text: str) -> list[ModelEvent]:
        self._buffer.text(item_id, text)
        return self._buffer.take()

    def feed_all(self, batch: list[dict[str, Any]]) -> list[ModelEvent]:
        buffer = self._buffer
        for data in batch:
            kind = data.get("type", "")
            if kind == "response.output_text.delta":
                delta = data.get("delta")
                buffer.text(str(data.get("item_id", "")), delta if isinstance(delta, str) else "")
            else:
                event = self._other(kind, data)
                if event is not None:
                    buffer.add(event)
        return buffer.take()

    def _other(self, kind: str, data: dict[str, Any]) -> ModelEvent | None:
        if kind == "response.output_item.done":
            return ItemDone(data.get("item") or {})
        if kind == "response.output_item.added":
            return ItemAdded(data.get("item") or {})
        if kind in TOOL_INPUT_DELTAS:
            return ToolInputDelta(str(data.get("item_id", "")), str(data.get("delta", "")))
        if kind in REASONING_DELTAS:
            return ReasoningDelta(str(data.get("item_id", "")), str(data.get("delta", "")))
        if kind == "response.completed":
            resp = data.get("response") or {}
            self.completed = Completed(str(resp.get("id", "")), parse_usage(resp.get("usage")))
        elif kind == "response.incomplete":
            reason = ((data.get("response") or {}).get("incomplete_details") or {}).get("reason")
            raise StreamFailed(f"Incomplete response returned, reason: {reason}", retryable=True)
        elif kind in ("response.failed", "error"):
            err = (data.get("response") or {}).get("error") or data
            code = str(err.get("code") or "")
            raise stream_failure(code, str(err.get("message") or "response.failed"))
        return None

    def finish(self, done_marker: bool) -> list[ModelEvent]:
        if self.completed is None:
            raise StreamFailed("stream closed before response.completed", retryable=True)
        return [self.completed]


class ResponsesClient(SseClient):
    """Speaks the Responses API."""

    endpoint = "responses"
    provider = "responses"

    def body(self, request: ModelRequest) -> dict[str, Any]:
        return responses_body(request)

    def decoder(self, request: ModelRequest) -> ResponsesDecoder:
        return ResponsesDecoder()


def parse_usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    inp = raw.get("input_tokens_details") or {}
    out = raw.get("output_tokens_details") or {}
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        cached_input_tokens=int(inp.get("cached_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        reasoning_output_tokens=int(out.get("reasoning_tokens") or 0),
        total_tokens=int(raw.get("total_tokens") or 0),
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
