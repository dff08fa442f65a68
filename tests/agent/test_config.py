"""Settings from files, environment, options and ``-c`` overrides, MCP server tables included."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_magics.config import SessionConfig, build_config, load_config
from agent_magics.errors import ConfigError
from agent_magics.mcp.config import McpServerConfig, http_headers, server_env
from agent_magics.tools.context import TurnContext
from agent_magics.trust import project_config, trust_project


def trust(project: Path, home: Path) -> None:
    found = project_config(project, home)
    assert found is not None
    trust_project(found, home)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project


def test_precedence_files_env_options_overrides(folders: tuple[Path, Path]) -> None:
    home, project = folders
    write(home / ".agent_magics/config.toml", 'model = "from-home"\nreasoning_effort = "low"\n')
    write(project / ".agent_magics/config.toml", 'model = "from-project"\n')
    trust(project, home)
    config = load_config(project, env={}, home=home)
    assert (config.model, config.reasoning_effort) == ("from-project", "low")
    env = {"AGENT_MAGICS_MODEL": "from-env"}
    assert load_config(project, env=env, home=home).model == "from-env"
    config = load_config(project, {"model": "from-option"}, ["model=from-c"], env=env, home=home)
    assert config.model == "from-c"


def test_mcp_servers_from_both_files_merge_by_name(folders: tuple[Path, Path]) -> None:
    home, project = folders
    write(
        home / ".agent_magics/config.toml",
        '[mcp_servers.time]\ncommand = "python"\nargs = ["-m", "mcp_server_time"]\n'
        "tool_timeout_sec = 30\n",
    )
    write(
        project / ".agent_magics/config.toml",
        '[mcp_servers.docs]\nurl = "http://127.0.0.1:9/mcp"\n\n'
        '[mcp_servers.time]\nenv = { TZ = "UTC" }\n',
    )
    trust(project, home)
    servers = load_config(project, env={}, home=home).mcp_servers
    assert sorted(servers) == ["docs", "time"]
    time = servers["time"]
    assert (time.command, time.args, time.env) == (
        "python",
        ("-m", "mcp_server_time"),
        {"TZ": "UTC"},
    )
    assert (time.tool_timeout_sec, time.startup_timeout_sec) == (30, 10)
    assert servers["docs"].transport == "http"


def test_dash_c_sets_a_server_table_key_by_key(folders: tuple[Path, Path]) -> None:
    home, project = folders
    overrides = [
        'mcp_servers.time.command="python"',
        'mcp_servers.time.args=["-m","mcp_server_time"]',
        'mcp_servers.time.enabled_tools=["get_current_time"]',
    ]
    config = load_config(project, overrides=overrides, env={}, home=home)
    time = config.mcp_servers["time"]
    assert time.args == ("-m", "mcp_server_time")
    assert time.offers("get_current_time") and not time.offers("convert_time")
    # a later session built from this one keeps the servers
    assert config.replace(model="other").mcp_servers == config.mcp_servers


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param(
            ['mcp_servers.x.args=["a"]'],
            "Invalid value for mcp_servers.x: Value error, set exactly one of `command` "
            "(stdio) or `url` (streamable HTTP).",
            id="no-transport",
        ),
        pytest.param(
            ['mcp_servers.x.command="a"', 'mcp_servers.x.url="http://127.0.0.1/"'],
            "Invalid value for mcp_servers.x: Value error, set exactly one of `command` "
            "(stdio) or `url` (streamable HTTP).",
            id="both",
        ),
        pytest.param(
            ['mcp_servers.x.command="a"', "mcp_servers.x.comand=1"],
            "Invalid value for mcp_servers.x.comand: Extra inputs are not permitted.",
            id="typo",
        ),
        pytest.param(
            ['mcp_servers.x.command="a"', "mcp_servers.x.tool_timeout_sec=0"],
            "Invalid value for mcp_servers.x.tool_timeout_sec: Input should be greater than 0.",
            id="timeout",
        ),
        pytest.param(["nope.deep=1"], "Unknown setting(s): nope.", id="unknown-table"),
    ],
)
def test_bad_server_tables_get_one_sentence(
    folders: tuple[Path, Path], overrides: list[str], message: str
) -> None:
    home, project = folders
    with pytest.raises(ConfigError) as err:
        load_config(project, overrides=overrides, env={}, home=home)
    assert str(err.value) == message


def test_stdio_server_gets_only_the_default_variables_plus_its_own() -> None:
    environ = {
        "PATH": "/bin",
        "HOME": "/home/u",
        "OPENAI_API_KEY": "sk-secret",
        "VIRTUAL_ENV": "/venv",
        "EXTRA": "yes",
    }
    config = McpServerConfig(command="srv", env={"TZ": "UTC"}, env_vars=("EXTRA",))
    assert server_env(config, environ) == {
        "PATH": "/bin",
        "HOME": "/home/u",
        "EXTRA": "yes",
        "TZ": "UTC",
    }


def test_http_headers_from_config_and_environment() -> None:
    config = McpServerConfig(
        url="http://127.0.0.1:1/mcp",
        http_headers={"X-Static": "1"},
        env_http_headers={"X-From-Env": "HDR", "X-Blank": "BLANK"},
        bearer_token_env_var="TOKEN",
    )
    environ = {"HDR": "v", "BLANK": "  ", "TOKEN": "t0k"}
    assert http_headers(config, environ) == {
        "X-Static": "1",
        "X-From-Env": "v",
        "Authorization": "Bearer t0k",
    }


def test_listings_never_show_a_urls_credentials() -> None:
    config = McpServerConfig(url="https://user:pw@mcp.example.com:8443/mcp?token=abc#x")
    assert config.describe() == "https://mcp.example.com:8443/mcp"


def test_a_turn_defaults_to_the_session_configs_policy_and_sandbox() -> None:
    """A turn built without naming them runs as a session with default settings does
    (a stray default of full access would leave such a caller unsandboxed)."""
    config, turn = SessionConfig(), TurnContext(cwd=Path.cwd())
    assert (turn.approval_policy, turn.sandbox_mode) == (
        config.approval_policy,
        config.sandbox_mode,
    )


def test_a_teachers_sandbox_limit_is_no_setting_a_person_can_clear(tmp_path: Path) -> None:
    """``sandbox_limit`` is set by a teacher's policy only: ``-c`` cannot set or clear it."""
    with pytest.raises(ConfigError, match="Unknown setting"):
        build_config({"cwd": str(tmp_path)}, overrides=["sandbox_limit=''"])
    with pytest.raises(ConfigError, match="Unknown setting"):
        build_config({"cwd": str(tmp_path)}, {"sandbox_limit": "x"})
