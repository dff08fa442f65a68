"""MCP servers as tools, through the official ``mcp`` SDK.

* :mod:`.config` — ``[mcp_servers.NAME]``: how a server is started or reached;
* :mod:`.manager` — :class:`~.manager.McpManager`: the session's servers, their tools
  and calls (it imports the SDK: only a session with a server configured loads it);
* :mod:`.names` — the ``mcp__server__tool`` names the model sees;
* :mod:`.results` — what the model reads back from a call.
"""
