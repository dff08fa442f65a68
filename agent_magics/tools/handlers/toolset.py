"""Which tools a session offers, in Codex's order, and the registry that runs them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.handlers.apply_patch import ApplyPatchHandler
from agent_magics.tools.handlers.goals import GOAL_HANDLERS
from agent_magics.tools.handlers.grep_files import GrepFilesHandler
from agent_magics.tools.handlers.list_dir import ListDirHandler
from agent_magics.tools.handlers.plan import UpdatePlanHandler
from agent_magics.tools.handlers.read_file import ReadFileHandler
from agent_magics.tools.handlers.request_user_input import RequestUserInputHandler
from agent_magics.tools.handlers.shell import ShellCommandHandler, ShellHandler
from agent_magics.tools.handlers.unified_exec import ExecCommandHandler, WriteStdinHandler
from agent_magics.tools.handlers.view_image import ViewImageHandler
from agent_magics.tools.handlers.web_search import WebSearchHandler
from agent_magics.tools.registry import ToolHandler, ToolRegistry
from agent_magics.tools.router import LOCAL_SHELL

if TYPE_CHECKING:
    from agent_magics.mcp.manager import McpManager


def _shell_handlers(config: ToolsConfig) -> list[ToolHandler]:
    if config.shell_type == "unified_exec":
        return [ExecCommandHandler(), WriteStdinHandler()]
    if config.shell_type == "shell_command":
        return [ShellCommandHandler()]
    if config.shell_type == "shell":
        return [ShellHandler()]
    return []


_FILE_TOOLS: tuple[Callable[[], ToolHandler], ...] = (
    GrepFilesHandler,
    ReadFileHandler,
    ListDirHandler,
)
NOTEBOOK_TOOLS = ("read_notebook", "edit_notebook")


def _file_handlers(config: ToolsConfig) -> list[ToolHandler]:
    """The opt-in file tools (``experimental_supported_tools``), in the order offered;
    the notebook tools (and nbformat with them) are imported only when asked for."""
    wanted = config.experimental_supported_tools
    handlers = [make() for make in _FILE_TOOLS]
    if set(NOTEBOOK_TOOLS) & set(wanted):
        from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
        from agent_magics.tools.handlers.read_notebook import ReadNotebookHandler

        handlers += [ReadNotebookHandler(), EditNotebookHandler()]
    return [h for h in handlers if h.name in wanted]


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
the kernel's tools and the person's Python functions (see :mod:`agent_magics.jupyter.kernel`)."""


ToolFilter = Callable[[str], bool]
"""Whether a tool may be offered, by name (a teacher's policy: see
:meth:`agent_magics.teaching.policy.CoursePolicy.offers`)."""


def build_registry(
    config: ToolsConfig,
    mcp: McpManager | None = None,
    extra: ExtraTools | None = None,
    offers: ToolFilter | None = None,
    agents: Sequence[ToolHandler] = (),
) -> ToolRegistry:
    """Shell tool, MCP resource tools (when a server is configured), update_plan,
    request_user_input, apply_patch, opt-in file tools, view_image, the sub-agent tools
    (``agents``: a namespace, its members registered under the namespace and name run
    together), then the MCP servers' tools sorted by name: the order Codex offers them
    in. A front end's ``extra`` tools come last, as Codex's dynamic tools do, except that
    one named like a tool above takes its place (the kernel's notebook tools, which reach
    the open notebook, stand in for the plain ones a setting may have asked for). A tool
    ``offers`` refuses is left out: the model is not told of it, and a call to it is
    answered as to an unknown tool."""
    shell = _shell_handlers(config)
    handlers = shell + _resource_handlers(mcp)
    if config.update_plan:
        handlers.append(UpdatePlanHandler())
    if config.request_user_input:
        handlers.append(RequestUserInputHandler())
    if config.apply_patch_tool_type is not None:
        handlers.append(ApplyPatchHandler(config.apply_patch_tool_type))
    handlers += _file_handlers(config)
    handlers.append(ViewImageHandler())
    handlers += agents
    handlers += [make() for make in GOAL_HANDLERS]  # after the sub-agent tools
    if config.web_search != "disabled":  # the hosted search, last of the built-in tools
        handlers.append(WebSearchHandler())
    handlers += _mcp_handlers(mcp)
    added = {h.name: h for h in (extra() if extra is not None else ())}
    registry = ToolRegistry()
    for handler in [added.pop(h.name, h) for h in handlers] + list(added.values()):
        if offers is not None and not offers(handler.name):
            continue
        registry.register(handler.name, handler, handler.spec(config))
        for member in getattr(handler, "members", ()):
            registry.register(handler.name + member.name, member, None)
        if shell and handler is shell[0] and (offers is None or offers(LOCAL_SHELL)):
            # As Codex: whichever shell tool is offered, a local_shell_call item runs as a
            # `shell` call; accepted, never offered, under this name, and only where a
            # shell tool is (a setting or a teacher's policy that takes it away, or names
            # local_shell, takes this).
            registry.register(LOCAL_SHELL, ShellHandler(), None)
    return registry
