"""What every model client takes and yields, whatever protocol it speaks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_magics.events import Usage


@dataclass(frozen=True)
class ModelRequest:
    """One request: the whole history every time (stateless, as Codex sends it)."""

    model: str
    instructions: str
    input: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    parallel_tool_calls: bool = False
    reasoning: dict[str, Any] | None = None
    prompt_cache_key: str | None = None
    tool_choice: str | dict[str, Any] = "auto"
    output_schema: dict[str, Any] | None = None
    """The JSON schema the final answer must follow (``exec --output-schema``): sent as
    a strict structured-output format, named as Codex names it."""


OUTPUT_SCHEMA_NAME = "codex_output_schema"
"""The name Codex gives the schema it sends; servers see the same request from us."""


@dataclass(frozen=True)
class ItemAdded:
    item: dict[str, Any]


@dataclass(frozen=True)
class ItemDone:
    """A finished output item; tool calls are run from these only."""

    item: dict[str, Any]


@dataclass(frozen=True)
class OutputTextDelta:
    item_id: str
    delta: str


@dataclass(frozen=True)
class ToolInputDelta:
    item_id: str
    delta: str


@dataclass(frozen=True)
class ReasoningDelta:
    item_id: str
    delta: str


@dataclass(frozen=True)
class Completed:
    response_id: str
    usage: Usage = field(default_factory=Usage)


ModelEvent = ItemAdded | ItemDone | OutputTextDelta | ToolInputDelta | ReasoningDelta | Completed


class StreamFailed(Exception):
    """The stream ended badly. ``retryable`` says whether the turn may re-send the request;
    ``delay_s`` is the wait the server asked for, if any; ``code`` the server's error
    code (``context_length_exceeded`` says the request was longer than the window)."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        delay_s: float | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.delay_s = delay_s
        self.code = code  # the server's error code, when it gave one


class ModelClient(Protocol):
    """A streaming model client."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...

    async def aclose(self) -> None: ...
