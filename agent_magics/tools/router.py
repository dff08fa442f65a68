"""From a model's output item to a handler call, and from its result to an output item.

Unknown tools, calls of the wrong kind and arguments the handler rejects are all answered
to the model; the turn goes on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from agent_magics.errors import RespondToModel
from agent_magics.events import ToolCallFinished, ToolCallProposed, ToolCallStarted
from agent_magics.tools.context import (
    CustomPayload,
    FunctionPayload,
    Payload,
    SessionServices,
    ToolInvocation,
    ToolOutput,
    TurnContext,
)
from agent_magics.tools.registry import ToolRegistry
from agent_magics.tools.stopping import running_calls

INCOMPATIBLE_PAYLOAD = "aborted"
NO_NAME = "(the call names no tool)"


@dataclass(frozen=True)
class ToolCall:
    """A call the model made: ``function_call`` or ``custom_tool_call``."""

    call_id: str
    name: str
    payload: Payload

    @property
    def kind(self) -> Literal["function", "custom"]:
        return "custom" if isinstance(self.payload, CustomPayload) else "function"

    @property
    def raw_input(self) -> str:
        p = self.payload
        return p.input if isinstance(p, CustomPayload) else p.arguments


def tool_call_from_item(item: dict[str, Any]) -> ToolCall | None:
    """The call in a response item, or ``None`` when the item is not a tool call."""
    kind = item.get("type")
    call_id = str(item.get("call_id") or item.get("id") or "")
    name = str(item.get("name") or "")
    if kind == "function_call":
        return ToolCall(call_id, name, FunctionPayload(str(item.get("arguments") or "")))
    if kind == "custom_tool_call":
        return ToolCall(call_id, name, CustomPayload(str(item.get("input") or "")))
    return None


class ToolRouter:
    """Dispatches calls to the registry's handlers and reports them as events."""

    def __init__(self, registry: ToolRegistry, services: SessionServices) -> None:
        self.registry = registry
        self.services = services

    def is_parallel(self, call: ToolCall) -> bool:
        tool = self.registry.get(call.name)
        return bool(tool and tool.parallel)

    def announce(self, call: ToolCall) -> None:
        tool = self.registry.get(call.name)
        # An MCP tool's handler names its server and the tool's own name for the card.
        server = getattr(tool.handler, "server", None) if tool else None
        mcp_tool = getattr(tool.handler, "mcp_tool", None) if tool else None
        self.services.emit(
            ToolCallProposed(
                call.call_id,
                call.name,
                call.raw_input,
                call.kind,
                server=server if isinstance(server, str) else None,
                mcp_tool=mcp_tool if isinstance(mcp_tool, str) else None,
            )
        )

    async def dispatch(self, call: ToolCall, turn: TurnContext) -> ToolOutput:
        started = time.monotonic()
        self.services.emit(ToolCallStarted(call.call_id, call.name))
        running = running_calls(self.services)  # a person may stop this one call
        output, stopped = await running.run(
            call.call_id, call.name, lambda: self._dispatch(call, turn)
        )
        self.services.emit(
            ToolCallFinished(
                call.call_id,
                call.name,
                output.content,
                output.success,
                time.monotonic() - started,
                stopped=stopped,
            )
        )
        return output

    async def _dispatch(self, call: ToolCall, turn: TurnContext) -> ToolOutput:
        tool = self.registry.get(call.name)
        if tool is None:
            what = "unsupported custom tool call" if call.kind == "custom" else "unsupported call"
            return ToolOutput(f"{what}: {call.name or NO_NAME}", success=False)
        if tool.handler.payload_kind != call.kind:
            # Codex 0.169.0 answers a call of the wrong kind (a JSON call to the freeform
            # apply_patch, say) with "aborted" and carries on with the turn.
            return ToolOutput(INCOMPATIBLE_PAYLOAD, success=False)
        inv = ToolInvocation(call.call_id, call.name, call.payload, turn, self.services)
        try:
            return await tool.handler.handle(inv)
        except RespondToModel as exc:
            return ToolOutput(exc.message, success=False)
