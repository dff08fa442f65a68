"""One MCP server tool, offered to the model as ``mcp__<server>__<tool>``.

The call goes through the orchestrator like any tool: the server's approval mode and the
tool's hints decide whether a person is asked
(:mod:`agent_magics.tools.approval.requirement`); the card shows the server, the tool's
own name and the arguments. MCP servers run outside the sandbox. The result is converted
as Codex converts it; a server that is down, too slow or dies during the call answers an
error the model can read, and the turn goes on.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from agent_magics.errors import RespondToModel
from agent_magics.mcp.approval import approval_key, remember_allowed
from agent_magics.mcp.config import ApprovalMode
from agent_magics.mcp.manager import McpError, McpManager, McpTool
from agent_magics.mcp.results import call_error_output, call_result_output, compact_json
from agent_magics.protocol.approval import ApprovalRequest
from agent_magics.text.rust import RUST_WHITESPACE
from agent_magics.tools.approval.orchestrator import GuardedCall, run_guarded
from agent_magics.tools.approval.requirement import mcp_approval_requirement
from agent_magics.tools.args import json_error_text, parse_json
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import FunctionPayload, ToolInvocation, ToolOutput
from agent_magics.tools.sandbox import SandboxSpec
from agent_magics.tools.spec import FunctionSpec, JsonSchema, ToolSpec, sanitize_schema
from agent_magics.tools.unified_exec.format import rust_debug_str

# What the model reads when the person says no (Codex's words, as Rust debug-prints them).
REJECTED = "err: " + rust_debug_str("user rejected MCP tool call")


def tool_parameters(input_schema: Any) -> JsonSchema:
    """The tool's input schema in the subset we offer; always an object with properties."""
    params = sanitize_schema(input_schema)
    if params.get("type") != "object":
        params = {"type": "object", "properties": {}}
    params.setdefault("properties", {})
    return params


def parse_arguments(raw: str) -> Any:
    """Blank -> ``None`` (no arguments); otherwise the JSON value, or the output Codex
    gives for JSON it cannot read (``err: <serde message>``)."""
    if not raw.strip(RUST_WHITESPACE):
        return None
    try:
        return parse_json(raw)
    except json.JSONDecodeError as exc:
        raise RespondToModel(f"err: {json_error_text(raw, exc)}") from None


class McpToolHandler:
    """Calls ``tool`` on its server through ``manager``."""

    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def __init__(
        self, tool: McpTool, manager: McpManager, approval_mode: ApprovalMode = "auto"
    ) -> None:
        self.tool = tool
        self.manager = manager
        self.approval_mode: ApprovalMode = approval_mode
        self.name: str = tool.qualified_name
        self.server: str = tool.server
        self.mcp_tool: str = tool.name

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return FunctionSpec(
            self.name, self.tool.description or "", tool_parameters(self.tool.input_schema)
        )

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        if not isinstance(inv.payload, FunctionPayload):
            raise RespondToModel(f"{self.name} handler received unsupported payload")
        raw = inv.payload.arguments
        arguments = parse_arguments(raw)
        if arguments is not None and not isinstance(arguments, dict):
            return call_error_output(
                f"MCP tool arguments must be a JSON object, got {compact_json(arguments)}"
            )
        turn = inv.turn
        remembered = remember_allowed(self.approval_mode)
        request = ApprovalRequest(
            call_id=inv.call_id,
            tool_name=self.name,
            kind="mcp",
            cwd=turn.cwd,
            server=self.server,
            mcp_tool=self.mcp_tool,
            arguments=raw,
            # No keys when "approve for session" is not offered: nothing is remembered.
            keys=[approval_key(self.server, self.mcp_tool)] if remembered else [],
            remember_allowed=remembered,
            session_scope=(
                f"later calls of {self.mcp_tool} on {self.server}, with any arguments, run "
                "without asking; its other tools ask"
            ),
        )
        requirement = mcp_approval_requirement(
            self.tool.annotations, self.approval_mode, turn.approval_policy, turn.sandbox_mode
        )

        async def attempt(_sandbox: SandboxSpec) -> ToolOutput:
            try:
                result = await self.manager.call_tool(self.server, self.mcp_tool, arguments)
            except McpError as exc:
                return call_error_output(exc.message)
            return call_result_output(result, supports_images=inv.turn.supports_images)

        ran = await run_guarded(
            inv, GuardedCall(request, requirement, attempt, REJECTED, runs_outside_sandbox=True)
        )
        return ran.value
