"""``request_user_input``: multiple-choice questions for the person, Plan mode only.

Codex offers this tool in every session but answers it only in its Plan collaboration
mode; in any other mode the call is refused before the arguments are even read. Our
sessions always run in the default mode, so the tool answers with that refusal, worded as
Codex words it.
"""

from __future__ import annotations

from typing import Literal

from agent_magics.errors import RespondToModel
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.spec import ToolSpec
from agent_magics.tools.specs.talk import request_user_input_spec

DEFAULT_MODE = "Default"


def unavailable_message(mode: str) -> str:
    """The refusal for a collaboration mode that does not allow questions."""
    return f"request_user_input is unavailable in {mode} mode"


class RequestUserInputHandler:
    """Refuses outside Plan mode, which is the only mode our sessions run in."""

    name = "request_user_input"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return request_user_input_spec(config)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        raise RespondToModel(unavailable_message(DEFAULT_MODE))
