"""The hosted ``web_search`` tool: offered to the model, run by the model server.

The search happens on the server; what comes back are ``web_search_call`` items beside
the answer (see :mod:`agent_magics.protocol.web_search`), never a call for us to run.
So this handler exists for the spec alone: a function call that names it is answered
as Codex answers a call to a tool it does not run.
"""

from __future__ import annotations

from typing import Literal

from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.spec import ToolSpec, WebSearchSpec

WEB_SEARCH = "web_search"


class WebSearchHandler:
    name = WEB_SEARCH
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return WebSearchSpec(external_web_access=config.web_search == "live")

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        return ToolOutput(f"unsupported call: {WEB_SEARCH}", success=False)
