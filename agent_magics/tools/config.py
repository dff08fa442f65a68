"""Which tools a session offers, and in which form (Codex's ``ToolsConfig``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ShellType = Literal["unified_exec", "shell_command", "shell", "disabled"]
ApplyPatchToolType = Literal["freeform", "function"]
EXPERIMENTAL_TOOLS = ("grep_files", "read_file", "list_dir", "read_notebook", "edit_notebook")


@dataclass(frozen=True)
class ToolsConfig:
    """The tool set: shell flavour, apply_patch form, opt-in file tools, plan, images."""

    shell_type: ShellType = "unified_exec"
    apply_patch_tool_type: ApplyPatchToolType | None = "freeform"
    experimental_supported_tools: frozenset[str] = field(default_factory=frozenset)
    allow_login_shell: bool = True
    supports_images: bool = True
    request_user_input: bool = True
    update_plan: bool = True
