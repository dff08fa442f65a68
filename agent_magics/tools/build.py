"""Which tools a session offers, in Codex's order, and the registry that runs them."""

from __future__ import annotations

from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.registry import ToolHandler, ToolRegistry


def _add(registry: ToolRegistry, config: ToolsConfig, handler: ToolHandler) -> None:
    registry.register(handler.name, handler, handler.spec(config))


def build_registry(config: ToolsConfig) -> ToolRegistry:
    """Shell tool, update_plan, request_user_input, apply_patch, opt-in file tools,
    view_image — the order Codex offers them in."""
    from agent_magics.tools.handlers.apply_patch import ApplyPatchHandler
    from agent_magics.tools.handlers.grep_files import GrepFilesHandler
    from agent_magics.tools.handlers.list_dir import ListDirHandler
    from agent_magics.tools.handlers.plan import UpdatePlanHandler
    from agent_magics.tools.handlers.read_file import ReadFileHandler
    from agent_magics.tools.handlers.request_user_input import RequestUserInputHandler
    from agent_magics.tools.handlers.shell import ShellCommandHandler, ShellHandler
    from agent_magics.tools.handlers.unified_exec import ExecCommandHandler, WriteStdinHandler
    from agent_magics.tools.handlers.view_image import ViewImageHandler

    registry = ToolRegistry()
    if config.shell_type == "unified_exec":
        _add(registry, config, ExecCommandHandler())
        _add(registry, config, WriteStdinHandler())
    elif config.shell_type == "shell_command":
        _add(registry, config, ShellCommandHandler())
    elif config.shell_type == "shell":
        _add(registry, config, ShellHandler())
    if config.update_plan:
        _add(registry, config, UpdatePlanHandler())
    if config.request_user_input:
        _add(registry, config, RequestUserInputHandler())
    if config.apply_patch_tool_type is not None:
        _add(registry, config, ApplyPatchHandler(config.apply_patch_tool_type))
    experimental = config.experimental_supported_tools
    for handler in (GrepFilesHandler(), ReadFileHandler(), ListDirHandler()):
        if handler.name in experimental:
            _add(registry, config, handler)
    _add(registry, config, ViewImageHandler())
    return registry
