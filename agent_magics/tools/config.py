"""Which tools a session offers, and in which form (Codex's ``ToolsConfig``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ShellType = Literal["unified_exec", "shell_command", "shell", "disabled"]
ApplyPatchToolType = Literal["freeform", "function"]
WebSearchMode = Literal["disabled", "cached", "live"]
WEB_SEARCH_MODES: tuple[WebSearchMode, ...] = ("disabled", "cached", "live")
"""Codex's ``web_search`` setting: no search, cached results only, or live pages."""
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
    web_search: WebSearchMode = "disabled"
    """The hosted search, as resolved for the session (see ``SessionConfig.web_search``)."""
