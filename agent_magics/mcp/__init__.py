"""MCP servers as tools, through the official ``mcp`` SDK.

* :mod:`.config` — ``[mcp_servers.NAME]``: how a server is started or reached;
* :mod:`.manager` — :class:`McpManager`: the session's servers, their tools and calls;
* :mod:`.names` — the ``mcp__server__tool`` names the model sees;
* :mod:`.results` — what the model reads back from a call.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Importing this package must stay cheap: the SDK (~0.65 s), and even the settings model
# of a server, are needed only once a server is configured. The names below are loaded
# on first use.
_EXPORTS = {
    "McpError": "manager",
    "McpManager": "manager",
    "McpServerConfig": "config",
    "McpTool": "manager",
    "ServerStatus": "manager",
    "call_error_output": "results",
    "call_result_output": "results",
    "qualify_tools": "names",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
