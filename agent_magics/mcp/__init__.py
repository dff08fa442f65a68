"""MCP servers as tools, through the official ``mcp`` SDK.

* :mod:`.config` — ``[mcp_servers.NAME]``: how a server is started or reached;
* :mod:`.manager` — :class:`McpManager`: the session's servers, their tools and calls;
* :mod:`.names` — the ``mcp__server__tool`` names the model sees;
* :mod:`.results` — what the model reads back from a call.
"""

from __future__ import annotations

from agent_magics.lazy_names import lazy_names

# Importing this package must stay cheap: the SDK (~0.65 s), and even the settings model
# of a server, are needed only once a server is configured. The names below are loaded
# on first use.
_WHERE = {
    "config": ["McpServerConfig"],
    "manager": ["McpError", "McpManager", "McpTool", "ServerStatus"],
    "names": ["qualify_tools"],
    "results": ["call_error_output", "call_result_output"],
}

__all__ = sorted(name for names in _WHERE.values() for name in names)
__getattr__ = lazy_names(__name__, globals(), _WHERE)
