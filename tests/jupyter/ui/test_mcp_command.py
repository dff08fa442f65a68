"""``%agent mcp add`` arguments and the server listing (pure parts of the magic)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_magics.errors import ConfigError
from agent_magics.jupyter.ui import mcp_command
from agent_magics.mcp.config import McpServerConfig


@pytest.mark.parametrize(
    ("words", "name", "table"),
    [
        pytest.param(
            ["time", "--", "python", "-m", "mcp_server_time", "--local-timezone", "UTC"],
            "time",
            {"command": "python", "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
            id="stdio",
        ),
        pytest.param(
            ["t", "--env", "TZ=UTC", "--env-var", "HTTPS_PROXY", "--tool-timeout", "5", "srv"],
            "t",
            {
                "command": "srv",
                "args": [],
                "env": {"TZ": "UTC"},
                "env_vars": ["HTTPS_PROXY"],
                "tool_timeout_sec": 5.0,
            },
            id="options-then-command",
        ),
        pytest.param(
            ["web", "--url", "http://127.0.0.1:8000/mcp", "--approval", "prompt"],
            "web",
            {"url": "http://127.0.0.1:8000/mcp", "default_tools_approval_mode": "prompt"},
            id="http",
        ),
    ],
)
def test_add_arguments_become_a_server_table(
    words: list[str], name: str, table: dict[str, object]
) -> None:
    assert mcp_command.parse_add(words) == (name, table)
    McpServerConfig.model_validate(table)


@pytest.mark.parametrize(
    ("words", "message"),
    [
        pytest.param(
            ["x"],
            "%agent mcp add x: Value error, set exactly one of `command` (stdio) or `url` "
            "(streamable HTTP).",
            id="nothing-to-run",
        ),
        pytest.param(
            ["x", "--env", "NOEQUALS", "--", "srv"],
            "%agent mcp add: --env takes KEY=VALUE, got 'NOEQUALS'.",
            id="env",
        ),
        pytest.param(
            ["x", "--tool-timeout", "soon", "--", "srv"],
            "%agent mcp add: argument --tool-timeout: invalid float value: 'soon'.",
            id="timeout",
        ),
    ],
)
def test_bad_add_arguments_get_one_sentence(words: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        mcp_command.parse_add(words)
    assert str(err.value) == message


@dataclass
class Status:
    name: str
    transport: str
    state: str
    reason: str | None
    tools: tuple[str, ...]
    log_path: Path | None
    description: str


def test_listing() -> None:
    statuses = [
        Status("time", "stdio", "ready", None, ("a", "b"), Path("logs/t.log"), "python -m t"),
        Status("docs", "stdio", "failed", "timed out after 10 s.", (), Path("logs/d.log"), "d"),
    ]
    assert mcp_command.list_text(statuses) == (
        "time         stdio ready, 2 tools   python -m t\n"
        "docs         stdio failed           d\n"
        "             timed out after 10 s.\n"
        "             log: logs/d.log"
    )
    assert mcp_command.list_text([]).startswith("No MCP servers.")
    servers = {
        "a": McpServerConfig(command="srv", args=("x",)),
        "b": McpServerConfig(url="http://127.0.0.1:1/mcp", enabled=False),
    }
    assert mcp_command.configured_text(servers) == (
        "a            stdio not started      srv x\nb            http  disabled         http://127.0.0.1:1/mcp"
    )
