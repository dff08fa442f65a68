"""MCP servers as tools, through the official ``mcp`` SDK.

* :mod:`.config` — ``[mcp_servers.NAME]``: how a server is started or reached;
* :mod:`.manager` — :class:`McpManager`: the session's servers, their tools and calls;
* :mod:`.names` — the ``mcp__server__tool`` names the model sees;
* :mod:`.results` — what the model reads back from a call.
"""

from __future__ import annotations

from agent_magics.mcp.config import McpServerConfig
from agent_magics.mcp.manager import McpError, McpManager, McpTool, ServerStatus
from agent_magics.mcp.names import qualify_tools
from agent_magics.mcp.results import call_error_output, call_result_output

__all__ = [
    "McpError",
    "McpManager",
    "McpServerConfig",
    "McpTool",
    "ServerStatus",
    "call_error_output",
    "call_result_output",
    "qualify_tools",
]
