"""When an MCP tool call needs a person: a pure function of the tool's hints and settings.

The server's ``default_tools_approval_mode`` picks the rule:

* ``auto`` (Codex's rule): a tool that says it is destructive asks; one that says it is
  read-only runs; any other asks unless it says it is neither destructive nor open-world.
  A hint the tool leaves out counts as ``true``.
* ``prompt``: every call asks, and "approve for session" is not offered.
* ``writes``: every call asks unless the tool says it is read-only.
* ``approve``: no call asks.

With the approval policy ``never`` nobody can be asked, so every call runs. MCP servers
are outside our sandbox: the person's answer (or the rule above) is the only guard.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_magics.mcp.config import ApprovalMode
from agent_magics.tools.approval import ApprovalPolicy, NeedsApproval, SandboxMode, Skip

DESTRUCTIVE = "The tool says it may change or delete data."
UNKNOWN_EFFECTS = "The tool does not say that it only reads and stays on this machine."
NOT_READ_ONLY = "The tool does not say that it only reads."
ALWAYS_ASK = "This server's tools always ask before they run."


def _hint(annotations: Mapping[str, Any] | None, name: str) -> bool | None:
    value = (annotations or {}).get(name)
    return value if isinstance(value, bool) else None


def mcp_requirement(
    annotations: Mapping[str, Any] | None,
    mode: ApprovalMode,
    approval_policy: ApprovalPolicy,
    sandbox_mode: SandboxMode,
) -> Skip | NeedsApproval:
    """Whether one call of a tool with these ``annotations`` (camelCase wire keys, e.g.
    ``readOnlyHint``) needs a person.

    ``sandbox_mode`` does not change the answer: MCP servers run outside the sandbox
    whatever it is, so the result always bypasses it."""
    run = Skip(bypass_sandbox=True)
    if approval_policy is ApprovalPolicy.NEVER or mode == "approve":
        return run
    if mode == "prompt":
        return NeedsApproval(ALWAYS_ASK, bypass_sandbox=True)
    read_only = _hint(annotations, "readOnlyHint") is True
    if mode == "writes":
        return run if read_only else NeedsApproval(NOT_READ_ONLY, bypass_sandbox=True)
    destructive = _hint(annotations, "destructiveHint")
    if destructive is True:
        return NeedsApproval(DESTRUCTIVE, bypass_sandbox=True)
    if read_only:
        return run
    open_world = _hint(annotations, "openWorldHint")
    if destructive is False and open_world is False:
        return run
    return NeedsApproval(UNKNOWN_EFFECTS, bypass_sandbox=True)


def remember_allowed(mode: ApprovalMode) -> bool:
    """Whether "approve for session" may be offered for a server in this mode."""
    return mode != "prompt"


def approval_key(server: str, tool: str) -> tuple[str, str, str]:
    """What an "approve for session" answer remembers: this tool of this server."""
    return ("mcp", server, tool)
