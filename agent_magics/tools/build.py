"""Which tools a session offers, in Codex's order, and the registry that runs them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.registry import LazyHandler, ToolHandler, ToolRegistry
from agent_magics.tools.spec import ToolSpec
from agent_magics.tools.specs.command import (
    exec_command_spec,
    shell_command_spec,
    shell_spec,
    write_stdin_spec,
)
from agent_magics.tools.specs.files import (
    grep_files_spec,
    list_dir_spec,
    read_file_spec,
    view_image_spec,
)
from agent_magics.tools.specs.notebook import edit_notebook_spec, read_notebook_spec
from agent_magics.tools.specs.patch import apply_patch_spec
from agent_magics.tools.specs.talk import request_user_input_spec, update_plan_spec

if TYPE_CHECKING:
    from agent_magics.mcp.manager import McpManager


_HANDLERS = "agent_magics.tools.handlers."


def _lazy(name: str, target: str, spec: ToolSpec, parallel: bool) -> ToolHandler:
    return LazyHandler(name, _HANDLERS + target, spec, parallel=parallel)


def _shell_handlers(config: ToolsConfig) -> list[ToolHandler]:
    if config.shell_type == "unified_exec":
        return [
            _lazy(
                "exec_command", "unified_exec:ExecCommandHandler", exec_command_spec(config), True
            ),
            _lazy("write_stdin", "unified_exec:WriteStdinHandler", write_stdin_spec(config), False),
        ]
    if config.shell_type == "shell_command":
        return [
            _lazy("shell_command", "shell:ShellCommandHandler", shell_command_spec(config), True)
        ]
    if config.shell_type == "shell":
        return [_lazy("shell", "shell:ShellHandler", shell_spec(config), True)]
    return []


_FILE_TOOLS = (
    ("grep_files", "grep_files:GrepFilesHandler", grep_files_spec, True),
    ("read_file", "read_file:ReadFileHandler", read_file_spec, True),
    ("list_dir", "list_dir:ListDirHandler", list_dir_spec, True),
    ("read_notebook", "read_notebook:ReadNotebookHandler", read_notebook_spec, True),
    ("edit_notebook", "edit_notebook:EditNotebookHandler", edit_notebook_spec, False),
)
"""The opt-in file tools (``experimental_supported_tools``), in the order offered."""


def _file_handlers(config: ToolsConfig) -> list[ToolHandler]:
    wanted = config.experimental_supported_tools
    return [
        _lazy(name, target, spec(config), parallel)
        for name, target, spec, parallel in _FILE_TOOLS
        if name in wanted
    ]


def _resource_handlers(mcp: McpManager | None) -> list[ToolHandler]:
    if mcp is None or not mcp.configured:
        return []
    from agent_magics.tools.handlers.mcp_resource import RESOURCE_TOOLS, McpResourceHandler

    return [McpResourceHandler(name, mcp) for name in RESOURCE_TOOLS]


def _mcp_handlers(mcp: McpManager | None) -> list[ToolHandler]:
    tools = sorted(mcp.tools(), key=lambda t: t.qualified_name) if mcp is not None else []
    if mcp is None or not tools:
        return []
    from agent_magics.tools.handlers.mcp import McpToolHandler

    return [McpToolHandler(t, mcp, mcp.approval_mode(t.server)) for t in tools]


ExtraTools = Callable[[], Sequence[ToolHandler]]
"""Tools a front end adds to a session, asked for again whenever the tools are rebuilt:
the kernel's tools and the person's Python functions (see :mod:`agent_magics.kernel`)."""


ToolFilter = Callable[[str], bool]
"""Whether a tool may be offered, by name (a teacher's policy: see
:meth:`agent_magics.teaching.policy.CoursePolicy.offers`)."""


def build_registry(
    config: ToolsConfig,
    mcp: McpManager | None = None,
    extra: ExtraTools | None = None,
    offers: ToolFilter | None = None,
) -> ToolRegistry:
    """Shell tool, MCP resource tools (when a server is configured), update_plan,
    request_user_input, apply_patch, opt-in file tools, view_image, then the MCP servers'
    tools sorted by name: the order Codex offers them in. A front end's ``extra`` tools
    come last, as Codex's dynamic tools do, except that one named like a tool above takes
    its place (the kernel's notebook tools, which reach the open notebook, stand in for
    the plain ones a setting may have asked for). A tool ``offers`` refuses is left out:
    the model is not told of it, and a call to it is answered as to an unknown tool."""
    handlers = _shell_handlers(config) + _resource_handlers(mcp)
    if config.update_plan:
        handlers.append(
            _lazy("update_plan", "plan:UpdatePlanHandler", update_plan_spec(config), False)
        )
    if config.request_user_input:
        spec = request_user_input_spec(config)
        handlers.append(
            _lazy("request_user_input", "request_user_input:RequestUserInputHandler", spec, False)
        )
    patch = config.apply_patch_tool_type
    if patch is not None:
        kind: Literal["function", "custom"] = "custom" if patch == "freeform" else "function"
        target = _HANDLERS + "apply_patch:ApplyPatchHandler"
        handlers.append(
            LazyHandler(
                "apply_patch",
                target,
                apply_patch_spec(patch),
                parallel=False,
                payload_kind=kind,
                args=(patch,),
            )
        )
    handlers += _file_handlers(config)
    handlers.append(
        _lazy("view_image", "view_image:ViewImageHandler", view_image_spec(config), True)
    )
    handlers += _mcp_handlers(mcp)
    added = {h.name: h for h in (extra() if extra is not None else ())}
    registry = ToolRegistry()
    for handler in [added.pop(h.name, h) for h in handlers] + list(added.values()):
        if offers is not None and not offers(handler.name):
            continue
        registry.register(handler.name, handler, handler.spec(config))
    return registry
