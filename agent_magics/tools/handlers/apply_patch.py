"""apply_patch: edit files with a patch, checked whole before anything is written.

Two forms, chosen by ``apply_patch_tool_type``: a freeform tool whose input is the raw
patch (constrained by a Lark grammar), or a JSON function with one ``input`` string.
The handler only reads the patch; :mod:`agent_magics.tools.runtimes.apply_patch`
verifies, approves and applies it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from agent_magics.tools.args import decode_args
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import CustomPayload, ToolInvocation, ToolOutput
from agent_magics.tools.runtimes.apply_patch import run_apply_patch
from agent_magics.tools.spec import ToolSpec
from agent_magics.tools.specs.patch import apply_patch_spec


class ApplyPatchArgs(BaseModel):
    input: str


class ApplyPatchHandler:
    """The apply_patch tool in its freeform or function form."""

    name = "apply_patch"
    supports_parallel = False

    def __init__(self, tool_type: Literal["freeform", "function"] = "freeform") -> None:
        self.tool_type = tool_type
        self.payload_kind: Literal["function", "custom"] = (
            "custom" if tool_type == "freeform" else "function"
        )

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return apply_patch_spec(self.tool_type)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        if isinstance(inv.payload, CustomPayload):
            patch = inv.payload.input
        else:
            patch = decode_args(ApplyPatchArgs, inv.payload.arguments).input
        return await run_apply_patch(inv, patch, inv.turn.cwd)
