"""apply_patch: edit files with a patch, checked whole before anything is written.

Two forms, chosen by ``apply_patch_tool_type``: a freeform tool whose input is the raw
patch (constrained by a Lark grammar), or a JSON function with one ``input`` string.
The handler only reads the patch; :mod:`agent_magics.tools.runtimes.apply_patch`
verifies, approves and applies it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from agent_magics.apply_patch.grammar import LARK_GRAMMAR
from agent_magics.tools.args import decode_args
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import CustomPayload, ToolInvocation, ToolOutput
from agent_magics.tools.runtimes.apply_patch import run_apply_patch
from agent_magics.tools.spec import FreeformSpec, FunctionSpec, ToolSpec, obj, string

FREEFORM_DESCRIPTION = (
    "Edit files by sending a patch in the apply_patch format as raw text (not JSON)."
)


FUNCTION_DESCRIPTION = """\
Edit files with a patch. Put the whole patch in `input`.

A patch is framed by `*** Begin Patch` and `*** End Patch`. Between them come file
operations, each starting with a header line:
- `*** Add File: <path>` followed by the new file's lines, each prefixed with `+`.
- `*** Delete File: <path>` with nothing after it.
- `*** Update File: <path>`, optionally followed by `*** Move to: <new path>`, then one
  or more change blocks.

A change block starts with `@@` (optionally followed by a line that locates the change,
such as a class or function header) and lists lines prefixed with ` ` (unchanged
context), `-` (removed) or `+` (added). Give about three lines of context above and
below each change so the place is unambiguous. `*** End of File` after a block anchors
it at the end of the file.

Paths are relative to the working folder. Example:

*** Begin Patch
*** Add File: notes/todo.txt
+first item
*** Update File: src/app.py
@@ def main():
-    print("hi")
+    print("hello")
*** Delete File: old.txt
*** End Patch
"""


def apply_patch_spec(tool_type: Literal["freeform", "function"]) -> ToolSpec:
    if tool_type == "freeform":
        return FreeformSpec("apply_patch", FREEFORM_DESCRIPTION, "lark", LARK_GRAMMAR)
    params = obj(
        {"input": string("The whole patch, from *** Begin Patch to *** End Patch.")}, ["input"]
    )
    return FunctionSpec("apply_patch", FUNCTION_DESCRIPTION, params)


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
