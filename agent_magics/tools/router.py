"""From a model's output item to a handler call, and from its result to an output item.

Unknown tools, calls of the wrong kind and arguments the handler rejects are all answered
to the model; the turn goes on.
"""

from __future__ import annotations

import json
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
from agent_magics.tools.spec import NamespaceSpec
from agent_magics.tools.stopping import running_calls

INCOMPATIBLE_PAYLOAD = "aborted"
NO_NAME = "(the call names no tool)"
LOCAL_SHELL = "local_shell"
"""The tool a ``local_shell_call`` item runs as (the shell tool, accepted under this name)."""


@dataclass(frozen=True)
class ToolCall:
    """A call the model made: ``function_call``, ``custom_tool_call`` or
    ``local_shell_call`` (a function call of ``local_shell``)."""

    call_id: str
    name: str
    payload: Payload
    namespace: str = ""

    @property
    def key(self) -> str:
        """The name the registry knows the tool by: a namespaced call's namespace and
        name run together, as Codex joins them (so ``multi_agent_v1spawn_agent``; a bare
        or dotted name finds nothing and is answered ``unsupported call``)."""
        return f"{self.namespace}{self.name}"

    @property
    def kind(self) -> Literal["function", "custom"]:
        return "custom" if isinstance(self.payload, CustomPayload) else "function"

    @property
    def raw_input(self) -> str:
        p = self.payload
        return p.input if isinstance(p, CustomPayload) else p.arguments


def tool_call_from_item(item: dict[str, Any]) -> ToolCall | None:
    """The call in a response item, or ``None`` when the item is not a tool call (a
    message, reasoning, or a type we do not know: kept in history, answered by nothing)."""
    kind = item.get("type")
    call_id = str(item.get("call_id") or item.get("id") or "")
    name = str(item.get("name") or "")
    if kind == "function_call":
        namespace = item.get("namespace")
        payload = FunctionPayload(str(item.get("arguments") or ""))
        return ToolCall(call_id, name, payload, namespace if isinstance(namespace, str) else "")
    if kind == "custom_tool_call":
        return ToolCall(call_id, name, CustomPayload(str(item.get("input") or "")))
    if kind == "local_shell_call":
        return ToolCall(call_id, LOCAL_SHELL, FunctionPayload(local_shell_arguments(item)))
    return None


def local_shell_arguments(item: dict[str, Any]) -> str:
    """The ``shell`` arguments of a ``local_shell_call``'s exec action, as Codex maps them:
    its command, working directory and timeout (``env`` and ``user`` are not used, and
    the call cannot ask to leave the sandbox). Another action gives ``{}``, which the
    shell tool answers as arguments without a command."""
    action = item.get("action")
    if not isinstance(action, dict) or action.get("type") != "exec":
        return "{}"
    fields = {
        "command": action.get("command"),
        "workdir": action.get("working_directory"),
        "timeout_ms": action.get("timeout_ms"),
    }
    return json.dumps({k: v for k, v in fields.items() if v is not None})


class ToolRouter:
    """Dispatches calls to the registry's handlers and reports them as events."""

    def __init__(self, registry: ToolRegistry, services: SessionServices) -> None:
        self.registry = registry
        self.services = services

    def is_parallel(self, call: ToolCall) -> bool:
        tool = self.registry.get(call.key)
        return bool(tool and tool.parallel)

    def announce(self, call: ToolCall) -> None:
        tool = self.registry.get(call.key)
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
        tool = self.registry.get(call.key)
        if tool is None or isinstance(tool.spec, NamespaceSpec):  # a group is not a tool
            what = "unsupported custom tool call" if call.kind == "custom" else "unsupported call"
            return ToolOutput(f"{what}: {call.key or NO_NAME}", success=False)
        if tool.handler.payload_kind != call.kind:
            # Codex 0.169.0 answers a call of the wrong kind (a JSON call to the freeform
            # apply_patch, say) with "aborted" and carries on with the turn.
            return ToolOutput(INCOMPATIBLE_PAYLOAD, success=False)
        inv = ToolInvocation(call.call_id, call.name, call.payload, turn, self.services)
        try:
            return await tool.handler.handle(inv)
        except RespondToModel as exc:
            return ToolOutput(exc.message, success=False)
