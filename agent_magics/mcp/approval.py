"""What an "approve for session" answer to an MCP tool call may remember.

Whether a call needs a person at all is decided with the other approval rules, by
:func:`agent_magics.tools.approval.requirement.mcp_approval_requirement`.
"""

from __future__ import annotations

from agent_magics.mcp.config import ApprovalMode


def remember_allowed(mode: ApprovalMode) -> bool:
    """Whether "approve for session" may be offered for a server in this mode."""
    return mode != "prompt"


def approval_key(server: str, tool: str) -> tuple[str, str, str]:
    """What an "approve for session" answer remembers: this tool of this server."""
    return ("mcp", server, tool)
