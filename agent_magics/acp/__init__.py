"""``agent-magics acp``: the agent for chat panels that speak the Agent Client Protocol.

jupyter-ai 3, Zed, marimo and other clients start ``agent-magics acp`` as a process and
speak JSON-RPC to it over stdio (the official ``acp`` SDK). Each ACP session is one of
our sessions, with the same tools, sandbox, approvals and saved sessions as a cell or
``exec``: an approval becomes the client's permission request, a tool call its
``tool_call`` updates, the plan its plan; approval policies are the session's modes.

- :mod:`.agent`: the ACP methods (initialize, session/new, load, list, prompt, cancel,
  set_mode, close).
- :mod:`.chat_session`: one ACP session: our session, its recorder, its running turn.
- :mod:`.updates`: the pure fold of our events into ACP session updates.
- :mod:`.permissions`: an approval request as a permission request, and back.
- :mod:`.modes`, :mod:`.commands`, :mod:`.client_mcp`, :mod:`.replay`: modes, slash
  commands, the MCP servers a client passes, a loaded session told again.
- :mod:`.chat_notebook` with :mod:`.kernel_channel`, :mod:`.kernel_tools` and
  :mod:`.kernel_document`: the notebook a chat belongs to, its kernel's tools and its
  live document, reached through the Jupyter server that started the process.
- :mod:`.persona`: the agent as a persona of Jupyter AI's chat.
"""
