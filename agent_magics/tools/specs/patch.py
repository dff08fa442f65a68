"""The ``apply_patch`` tool's spec, in its freeform (Lark grammar) or function form."""

from __future__ import annotations

from typing import Literal

from agent_magics.apply_patch.grammar import LARK_GRAMMAR
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
