"""The tool list built from the spec modules says what the handlers themselves say."""

from __future__ import annotations

from agent_magics.tools.build import build_registry
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.registry import LazyHandler

FILE_TOOLS = frozenset({"grep_files", "read_file", "list_dir", "read_notebook", "edit_notebook"})


def test_each_lazy_tool_matches_its_handler() -> None:
    checked = set()
    for shell in ("unified_exec", "shell", "shell_command"):
        for patch in ("freeform", "function"):
            for login in (True, False):
                config = ToolsConfig(
                    shell_type=shell,
                    apply_patch_tool_type=patch,
                    allow_login_shell=login,
                    experimental_supported_tools=FILE_TOOLS,
                )
                registry = build_registry(config)
                for name in registry:
                    tool = registry.get(name)
                    assert tool is not None and isinstance(tool.handler, LazyHandler)
                    real = tool.handler.handler
                    assert real.name == name
                    assert real.payload_kind == tool.handler.payload_kind
                    assert real.supports_parallel == tool.parallel
                    assert real.spec(config) == tool.spec
                    checked.add(name)
    assert len(checked) == 13
