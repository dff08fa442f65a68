"""The magics in an in-process IPython shell (no kernel: the terminal path), and the cell
rewrite that makes a cell wait for its turn (headless, and on ipykernel >= 7.4)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agent_magics.jupyter.magics import AgentMagics
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.paths import MCP_SERVERS

OPTS = "-c allow_login_shell=false"


def magics(ip: Any) -> AgentMagics:
    found: AgentMagics = ip.magics_manager.registry["AgentMagics"]
    return found


def test_a_turn_without_a_kernel_prints_its_transcript(
    ip: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedResponsesServer([[message("Hello from the model.")]]) as server:
        ip.run_cell(f"%%agent --base-url {server.base_url} {OPTS}\nsay hello")
    out = capsys.readouterr().out
    assert out == "Hello from the model.\n\n*Tokens: 10 in · 5 out · 15 total*\n"


def test_options_stick_through_new(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedResponsesServer([[message("one")], [message("two")]]) as server:
        ip.run_cell(f"%%agent --base-url {server.base_url} -m first-model {OPTS}\nfirst")
        session = magics(ip).session
        ip.run_cell("%%agent\nsecond")
        assert magics(ip).session is session  # one conversation
        assert [r["model"] for r in server.requests] == ["first-model", "first-model"]
        texts = [i["content"][0]["text"] for i in server.requests[1]["input"] if "role" in i]
        assert texts[-3:] == ["first", "one", "second"]
    with ScriptedResponsesServer([[message("three")]]) as other:
        ip.run_cell(f"%%agent --new --base-url {other.base_url}\nthird")
        assert magics(ip).session is not session
        assert other.requests[0]["model"] == "first-model"  # kept; the server is the cell's
        assert len([i for i in other.requests[0]["input"] if i.get("role") == "assistant"]) == 0


def test_a_new_server_keeps_the_conversation(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedResponsesServer([[message("one")]]) as a, ScriptedResponsesServer() as b:
        ip.run_cell(f"%%agent --base-url {a.base_url} {OPTS}\nfirst")
        ip.run_cell(f"%%agent --base-url {b.base_url}\nsecond")
    assert "The model server or the tools changed" in capsys.readouterr().out
    roles = [i.get("role") for i in b.requests[0]["input"] if i.get("role")]
    assert roles[-3:] == ["user", "assistant", "user"]


def test_traitlets_config_sets_defaults(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell('%config AgentMagics.model = "model-from-config"')
    with ScriptedResponsesServer([[message("ok")]]) as server:
        ip.run_cell(f"%%agent --base-url {server.base_url} {OPTS}\nhi")
    assert server.requests[0]["model"] == "model-from-config"


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        pytest.param("%%agent -c nope=1\nhi", "agent: Unknown setting(s): nope.\n", id="setting"),
        pytest.param("%%agent\n   \n", "agent: the cell is empty", id="empty"),
        pytest.param(
            "%%agent --block --background\nhi",
            "agent: --block and --background contradict each other; give one.\n",
            id="block-and-background",
        ),
    ],
)
def test_mistakes_are_one_line(
    ip: Any, capsys: pytest.CaptureFixture[str], cell: str, expected: str
) -> None:
    result = ip.run_cell(cell)
    captured = capsys.readouterr()
    assert result.success
    assert (captured.err + captured.out).startswith(expected)


def test_a_line_command_that_takes_no_arguments_says_so(
    ip: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    ip.run_cell("%agent tools --provider chat")
    captured = capsys.readouterr()
    assert captured.out == ""  # no tool list that looks like chat's but is not
    assert captured.err.startswith("agent: %agent tools takes no arguments, so it did not run")
    assert captured.err.count("\n") == 1 and "%%agent --provider chat" in captured.err


def test_unload_removes_the_magics(ip: Any) -> None:
    ip.run_cell("%unload_ext agent_magics")
    assert "agent" not in ip.magics_manager.magics["cell"]
    assert "agent" not in ip.magics_manager.magics["line"]
    ip.run_cell("%load_ext agent_magics")
    assert "agent" in ip.magics_manager.magics["cell"]


def test_cells_stay_as_they_are_without_a_kernel(ip: Any) -> None:
    lines = ["%%agent -a never\n", "hello\n"]
    assert magics(ip).transform(lines) == lines


@pytest.mark.parametrize(
    ("lines", "rewritten"),
    [
        pytest.param(
            ["%%agent -a never\n", "hello\n", "world"],
            [
                "await get_ipython().run_cell_magic('agent', '--_awaited -a never', "
                "'hello\\nworld')\n"
            ],
            id="options",
        ),
        pytest.param(
            ["%%agent\n", "it's\n"],
            ["await get_ipython().run_cell_magic('agent', '--_awaited', \"it's\\n\")\n"],
            id="bare",
        ),
        pytest.param(["%%agent?\n"], None, id="help"),
        pytest.param(["%%agentx\n", "a\n"], None, id="other-magic"),
        pytest.param(["print(1)\n"], None, id="code"),
        pytest.param(["%%agent --bogus\n", "a\n"], None, id="bad-option"),
    ],
)
def test_headless_cells_become_awaited(
    ip: Any, lines: list[str], rewritten: list[str] | None
) -> None:
    ip.kernel = SimpleNamespace()  # a kernel is running; nothing of it is used here
    magics(ip).headless = "always"
    assert magics(ip).transform(lines) == (lines if rewritten is None else rewritten)


def test_the_core_never_imports_jupyter() -> None:
    code = (
        "import sys, agent_magics, agent_magics.agent.session, agent_magics.terminal.cli\n"
        "import agent_magics.tools.handlers.toolset\n"
        "print(sorted(m for m in ('IPython', 'ipywidgets', 'ipykernel') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_mcp_sdk_loads_only_when_a_server_is_configured() -> None:
    code = (
        "import sys, agent_magics.jupyter.magics\n"
        "from agent_magics import Session, SessionConfig\n"
        "Session(SessionConfig(cwd='.'))\n"
        "print('mcp' in sys.modules)\n"
        "Session(SessionConfig(cwd='.', mcp_servers={'t': {'command': 'srv'}}))\n"
        "print('mcp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


DEMO_SERVER = MCP_SERVERS / "demo_server.py"


def test_mcp_servers_are_listed_added_used_and_removed(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    ip.run_cell("%agent mcp")
    assert capsys.readouterr().out.startswith("No MCP servers.")
    ip.run_cell(f"%agent mcp add demo -- {sys.executable} {DEMO_SERVER}")
    assert (
        capsys.readouterr().out == "agent: MCP server 'demo' added; it starts with the next turn.\n"
    )
    ip.run_cell("%agent mcp")
    assert capsys.readouterr().out.startswith("demo         stdio not started")
    call = function_call("mcp__demo__add", {"a": 2, "b": 3}, "c1")
    with ScriptedResponsesServer([[call], [message("5")]]) as server:
        ip.run_cell(
            f"%%agent --base-url {server.base_url} -a never -c log_dir='{logs}' {OPTS}\nadd"
        )
        outputs = [i for i in server.requests[1]["input"] if i["type"] == "function_call_output"]
    assert outputs == [{"type": "function_call_output", "call_id": "c1", "output": '{"result":5}'}]
    out = capsys.readouterr().out
    assert "**demo · add**" in out and "MCP server 'demo' is ready" in out
    ip.run_cell("%agent mcp")
    assert capsys.readouterr().out.startswith("demo         stdio ready,")
    ip.run_cell("%agent mcp remove demo")
    assert (
        capsys.readouterr().out == "agent: MCP server 'demo' removed.\n"
        "No MCP servers. Add one with: %agent mcp add NAME -- COMMAND ARG...\n"
    )
    ip.run_cell("%agent tools")
    assert "mcp__demo__add" not in capsys.readouterr().out
    ip.run_cell("%agent mcp add bad --tool-timeout soon -- x")
    assert capsys.readouterr().err == (
        "agent: %agent mcp add: argument --tool-timeout: invalid float value: 'soon'.\n"
    )


@pytest.mark.parametrize(
    ("button", "applied", "outcome"),
    [
        pytest.param("Trust", True, "Trusted: ", id="trust"),
        pytest.param("Not now", False, "Not now: ", id="not-now"),
    ],
)
async def test_the_cell_asks_before_a_project_config_applies(
    ip: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    button: str,
    applied: bool,
    outcome: str,
) -> None:
    """The widget question (a real ``Button.click()``) holds the turn until answered."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    config = tmp_path / ".agent_magics" / "config.toml"
    config.parent.mkdir()
    config.write_text('instructions = "from-project"\nsandbox_mode = "danger-full-access"\n')
    agent = magics(ip)
    with ScriptedResponsesServer([[message("one")], [message("two")]]) as server:
        ip.run_cell(f"%%agent --base-url {server.base_url} {OPTS}\nfirst")
        question = agent.trust.last
        assert question is not None and not question.answered
        assert "sandbox_mode = &quot;danger-full-access&quot;" in question.text.value
        tasks = list(agent.agent.tasks)
        await asyncio.sleep(0.05)
        assert (server.requests, agent.session) == ([], None)  # the turn waits for the answer
        question.buttons[button].click()
        await asyncio.gather(*tasks)
        assert question.outcome.value.startswith(f"<div>{outcome}")
        ip.run_cell("%%agent\nsecond")  # asked once: no second question
        assert agent.trust.last is question
        await asyncio.gather(*agent.agent.tasks)
        assert agent.session is not None
        await agent.session.aclose()
    assert [r["instructions"] == "from-project" for r in server.requests] == [applied, applied]
    assert (home / ".agent_magics" / "config.toml").exists() is (button == "Trust")


def test_a_headless_cell_ignores_an_untrusted_project_config_until_agent_trust(
    ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = tmp_path / ".agent_magics" / "config.toml"
    config.parent.mkdir()
    config.write_text('instructions = "from-project"\n')
    magics(ip).headless = "always"
    with ScriptedResponsesServer() as server:
        ip.run_cell(f"%%agent --base-url {server.base_url} {OPTS}\nfirst")
        assert capsys.readouterr().err == (
            f"agent: ignored the project config {config} (it sets instructions): not trusted "
            "yet. To trust it: run `%agent trust` in this folder, or `agent-magics trust "
            "FOLDER` in a terminal.\n"
        )
        ip.run_cell("%agent trust")
        assert capsys.readouterr().out == (
            '  instructions = "from-project"\n'
            f"agent: Trusted: {config} applies "
            f"(kept in {tmp_path}/home/.agent_magics/config.toml).\n"
        )
        ip.run_cell("%%agent\nsecond")
    assert [r["instructions"] == "from-project" for r in server.requests] == [False, True]


def test_the_manuals_read_as_plain_text() -> None:
    """``%%agent?`` and ``%agent help`` show the docstring as it is: no reStructuredText
    markers, the magics under their own names, every ``%agent`` command listed."""
    from agent_magics.jupyter.magics import AgentMagics
    from agent_magics.jupyter.ui.line_commands import COMMANDS

    cell = AgentMagics.agent_cell.__doc__ or ""
    line = AgentMagics.agent_line.__doc__ or ""
    assert cell.startswith("%%agent [-m MODEL] [--base-url BASE_URL]\n")
    for text in (cell, line):
        assert "::" not in text and "``" not in text and "agent_cell" not in text
        assert "<{" not in text and "<KEY=VALUE>" not in text
    assert "-c KEY=VALUE, --config KEY=VALUE" in cell
    assert all(f"\n{word} " in "\n" + line.split("\n\n", 1)[1] for word in COMMANDS)


def test_unloading_closes_the_terminal_loops_http_client(ip: Any) -> None:
    """Without a kernel the turns run on a loop of the extension's own; unloading ends
    it with its async generators finalized, so the shared HTTP client (and its kept-alive
    connection) is closed rather than left for the garbage collector."""
    from agent_magics.models import pool

    with ScriptedResponsesServer([[message("hi")]]) as server:
        ip.run_cell(f"%%agent --base-url {server.base_url} {OPTS}\nsay hello")
        loop = magics(ip).agent.own_loop()
        clients = list(pool._BY_LOOP[loop].clients.values())
        assert clients and not any(c.is_closed for c in clients)
        ip.run_cell("%unload_ext agent_magics")
        assert loop.is_closed()
        assert all(c.is_closed for c in clients)
    ip.run_cell("%load_ext agent_magics")  # the fixture unloads it again
