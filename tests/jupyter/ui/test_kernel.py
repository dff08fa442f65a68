"""``%%agent`` in real kernels (jupyter_client), clicked the way a browser clicks.

Every test runs once per kernel interpreter of :mod:`tests.helpers.kernels`: the project venv
(ipykernel 7.x) and ``.venv/kernels/ipykernel6`` (ipykernel 6.29; ``.ci/run`` creates
it, the module docstring of ``tests/helpers/kernels.py`` says how to by hand). The model is a
scripted Responses server on 127.0.0.1 in this process; the card's buttons are found
among the IOPub ``comm_open`` messages and pressed by sending the ``comm_msg`` that a
browser's widget manager sends.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agent_magics.jupyter.ui.runner import SHOWN_ABOVE
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell
from tests.helpers.paths import MCP_SERVERS
from tests.helpers.tools import alive

pytestmark = pytest.mark.slow

MARK = "echo ran > marker.txt; echo ran-it"


def exec_call(call_id: str, cmd: str, **more: Any) -> dict[str, Any]:
    return function_call("exec_command", {"cmd": cmd, **more}, call_id)


def ws(kernel: Kernel) -> Path:
    return kernel.ws


def test_approve_runs_the_command(kernel: Kernel) -> None:
    with ScriptedResponsesServer([[exec_call("c1", MARK)], [message("ok")]]) as server:
        kernel.execute(agent_cell(server.base_url, "-a untrusted", "make a marker"))
        approve = kernel.wait_for(lambda: kernel.buttons("Approve"))[-1]
        assert len(server.requests) == 1 and not (ws(kernel) / "marker.txt").exists()
        kernel.click(approve)
        kernel.wait_for(lambda: len(server.requests) == 2)
        assert "ran-it" in server.outputs(1)["c1"]
        assert (ws(kernel) / "marker.txt").read_text() == "ran\n"
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        assert kernel.states[approve]["disabled"] is True
        assert kernel.shows("done</span>")
        assert kernel.shows("✔ Approved by you</div>")  # in the buttons' place


def test_deny_does_not_run_the_command(kernel: Kernel) -> None:
    with ScriptedResponsesServer([[exec_call("c1", MARK)], [message("ok")]]) as server:
        kernel.execute(agent_cell(server.base_url, "-a untrusted", "make a marker"))
        kernel.click(kernel.wait_for(lambda: kernel.buttons("Deny"))[-1])
        kernel.wait_for(lambda: len(server.requests) == 2)
        assert "exec command rejected by user" in server.outputs(1)["c1"]
        assert not (ws(kernel) / "marker.txt").exists()
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        assert kernel.shows(">denied</span>")


def test_approve_for_session_is_not_asked_again(kernel: Kernel) -> None:
    script = [[exec_call("c1", MARK)], [exec_call("c2", MARK)], [message("ok")]]
    with ScriptedResponsesServer(script) as server:
        kernel.execute(agent_cell(server.base_url, "-a untrusted", "twice"))
        kernel.click(kernel.wait_for(lambda: kernel.buttons("Approve for session"))[-1])
        kernel.wait_for(lambda: len(server.requests) == 3)
        assert "ran-it" in server.outputs(2)["c2"]
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        assert len(kernel.buttons("Approve")) == 1  # one question, for the first call only
        assert kernel.shows("approved earlier for this session")


def test_interrupt_kills_the_command_and_the_next_cell_runs(kernel: Kernel) -> None:
    sleeper = exec_call("c1", "echo $$ > sleep.pid; exec sleep 300", yield_time_ms=30_000)
    with ScriptedResponsesServer([[sleeper], [message("next turn ok")]]) as server:
        kernel.execute(agent_cell(server.base_url, "-a never -s danger-full-access", "sleep"))
        pid_file = ws(kernel) / "sleep.pid"
        kernel.wait_for(lambda: pid_file.exists() and pid_file.read_text().strip())
        pid = int(pid_file.read_text())
        assert alive(pid)
        kernel.km.interrupt_kernel()
        stopped_at = time.monotonic()
        while alive(pid) and time.monotonic() - stopped_at < 5:
            time.sleep(0.01)
        assert not alive(pid)
        assert time.monotonic() - stopped_at < 2.0
        kernel.wait_for(lambda: kernel.shows("Turn interrupted."))
        kernel.run("%%agent\nare you still there?")  # the options stick
        kernel.wait_for(lambda: len(server.requests) == 2)
        assert server.outputs(1)["c1"].startswith("aborted by user after ")  # Codex's text
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        assert not [m for m in kernel.log if m["msg_type"] == "error"]


@pytest.mark.parametrize("option", ["", "--block"])
def test_the_cell_waits_for_its_turn_on_ipykernel_7_4(kernel: Kernel, option: str) -> None:
    """The default (and ``--block``, which asks for it): busy until the turn ends, while
    the approval card still takes its click; older kernels run it in the background."""
    version = kernel.value("__import__('ipykernel').__version__")
    waits = tuple(int(p) for p in version.split(".")[:2]) >= (7, 4)
    note = (
        f"ipykernel {version} cannot deliver button clicks to a busy cell, so this turn runs "
        "in the background: Run All will not wait for it; ipykernel 7.4 or newer waits."
    )
    with ScriptedResponsesServer([[exec_call("c1", MARK)], [message("ok")]]) as server:
        msg_id = kernel.execute(
            agent_cell(server.base_url, f"-a untrusted {option}", "make a marker")
        )
        approve = kernel.wait_for(lambda: kernel.buttons("Approve"))[-1]
        if waits:
            assert not kernel.idle(msg_id)  # the cell waits for the turn
            assert not kernel.shows(note)
        else:
            kernel.wait_for(lambda: kernel.idle(msg_id))
            assert kernel.shows(note)
        kernel.click(approve)
        kernel.wait_for(lambda: kernel.idle(msg_id))
        kernel.wait_for(lambda: len(server.requests) == 2)
        assert (ws(kernel) / "marker.txt").exists()


def test_problems_to_fix_are_one_sentence(kernel: Kernel) -> None:
    """Where the cell waits for its turn (ipykernel >= 7.4), a turn that cannot run fails
    its cell, so Run All stops there, with the one sentence and no traceback; where it
    runs in the background the cell has ended already, and the sentence is all."""
    version = kernel.value("__import__('ipykernel').__version__")
    waits = tuple(int(p) for p in version.split(".")[:2]) >= (7, 4)
    unreachable = "--base-url http://127.0.0.1:9/v1 -c request_max_retries=0"
    failed = kernel.run(f"%%agent {unreachable} -c stream_max_retries=0\nhello")
    sentence = (
        "Could not reach the model server at http://127.0.0.1:9/v1 (ConnectError); "
        "check --base-url and that the server runs."
    )
    kernel.wait_for(lambda: kernel.shows(sentence))
    bad = kernel.run("%%agent -c no_such_setting=1\nhello")
    unknown = "Unknown setting(s): no_such_setting."
    errors = [m["content"]["traceback"] for m in failed + bad if m["msg_type"] == "error"]
    if waits:  # the card says the turn's sentence: the error box points to it, once
        assert errors == [[f"AgentTurnFailed: {SHOWN_ABOVE}"], [f"AgentTurnFailed: {unknown}"]]
        values = [m["content"]["evalue"] for m in failed if m["msg_type"] == "error"]
        assert values == [sentence]  # what papermill and nbclient read keeps the sentence
    else:
        assert kernel.outputs_text(bad) == f"agent: {unknown}\n" and errors == []
    assert "Traceback" not in kernel.outputs_text(kernel.log)


def test_config_traits_and_line_commands(kernel: Kernel) -> None:
    with ScriptedResponsesServer([[message("hello there")]]) as server:
        kernel.run('%config AgentMagics.model = "model-from-config"')
        kernel.run(agent_cell(server.base_url, "", "say hello"))
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        assert server.requests[0]["model"] == "model-from-config"
    status = kernel.outputs_text(kernel.run("%agent status"))
    assert "model:           model-from-config (" in status
    assert f"cwd:             {ws(kernel).resolve()}" in status
    assert "tokens used:     15 (10 in, 5 out)" in status
    assert "turn:            idle" in status
    assert "exec_command" in kernel.outputs_text(kernel.run("%agent tools"))
    history = kernel.outputs_text(kernel.run("%agent history"))
    assert "you: say hello" in history and "agent: hello there" in history
    assert "<environment_context>" not in history  # a line about it, not the block
    assert "Ask the coding agent" in kernel.outputs_text(kernel.run("%agent help"))
    assert "no turn is running" in kernel.outputs_text(kernel.run("%agent cancel"))
    assert "reset" in kernel.outputs_text(kernel.run("%agent reset"))
    assert "(the conversation is empty)" in kernel.outputs_text(kernel.run("%agent history"))
    bogus = kernel.outputs_text(kernel.run("%agent bogus"))
    assert "Unknown %agent command 'bogus'" in bogus


def markdown_of(kernel: Kernel, msg_id: str) -> str:
    """The latest static transcript a (headless) cell displayed."""
    shown = [
        m["content"]["data"].get("text/markdown", "")
        for m in kernel.log
        if m["parent_header"].get("msg_id") == msg_id
        and m["msg_type"] in ("display_data", "update_display_data")
    ]
    return shown[-1] if shown else ""


def test_interrupting_a_waiting_cell_stops_the_turn_quietly(kernel: Kernel) -> None:
    sleeper = exec_call("c1", "echo $$ > sleep.pid; exec sleep 300", yield_time_ms=30_000)
    with ScriptedResponsesServer([[sleeper], [message("next turn ok")]]) as server:
        kernel.run('%config AgentMagics.headless = "always"')  # the cell awaits its turn
        msg_id = kernel.execute(
            agent_cell(server.base_url, "-a never -s danger-full-access", "sleep")
        )
        pid_file = ws(kernel) / "sleep.pid"
        kernel.wait_for(lambda: pid_file.exists() and pid_file.read_text().strip())
        pid = int(pid_file.read_text())
        assert not kernel.idle(msg_id)
        kernel.km.interrupt_kernel()
        stopped_at = time.monotonic()
        while alive(pid) and time.monotonic() - stopped_at < 5:
            time.sleep(0.01)
        assert not alive(pid)
        assert time.monotonic() - stopped_at < 2.0
        kernel.wait_for(lambda: kernel.idle(msg_id))
        assert markdown_of(kernel, msg_id).endswith("**Turn interrupted.**")
        assert not [m for m in kernel.log if m["msg_type"] == "error"]
        again = kernel.run("%%agent\nstill there?")
        assert server.outputs(1)["c1"].startswith("aborted by user after ")
        msg = again[0]["parent_header"]["msg_id"]
        assert markdown_of(kernel, msg).startswith("next turn ok")


DEMO_SERVER = MCP_SERVERS / "demo_server.py"


def texts_of(kernel: Kernel, msg_id: str) -> list[str]:
    """Every text/plain a cell displayed or updated later (by display id)."""
    return [
        m["content"]["data"].get("text/plain", "")
        for m in kernel.log
        if m["parent_header"].get("msg_id") == msg_id
        and m["msg_type"] in ("display_data", "update_display_data")
    ]


def test_mcp_servers_change_in_a_live_session(kernel: Kernel, tmp_path: Path) -> None:
    python = kernel.value("__import__('sys').executable")
    logs = tmp_path / "logs"
    call = function_call("mcp__demo__add", {"a": 2, "b": 3}, "c1")
    with ScriptedResponsesServer([[message("first")], [call], [message("5")]]) as server:
        kernel.run(agent_cell(server.base_url, f"-a never -c log_dir='{logs}'", "hello"))
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        msg_id = kernel.execute(f"%agent mcp add demo -- {python} {DEMO_SERVER}")
        kernel.wait_for(
            lambda: any("is ready" not in t and "ready," in t for t in texts_of(kernel, msg_id))
        )
        shown = texts_of(kernel, msg_id)
        assert shown[0] == "agent: starting MCP servers…"
        assert shown[-1].startswith("agent: MCP server 'demo' added.\ndemo         stdio ready, ")
        kernel.run(agent_cell(server.base_url, "", "add 2 and 3"))
        kernel.wait_for(lambda: len(server.requests) == 3)
        outputs = [i for i in server.requests[2]["input"] if i["type"] == "function_call_output"]
        assert outputs[-1]["output"] == '{"result":5}'
    listing = kernel.outputs_text(kernel.run("%agent mcp"))
    assert listing.startswith("demo         stdio ready, ")
    msg_id = kernel.execute("%agent mcp remove demo")
    kernel.wait_for(lambda: any("removed" in t for t in texts_of(kernel, msg_id)))
    assert "mcp__demo__add" not in kernel.outputs_text(kernel.run("%agent tools"))
