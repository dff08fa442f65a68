"""A session survives a kernel restart, or a kill: its file is written while it runs,
the first ``%%agent`` cell after the restart says it can be resumed, and ``%agent resume
last`` sends its history to the model again (both ipykernel lines)."""

from __future__ import annotations

import json
import re
import signal
from typing import Any

import pytest

from agent_magics import SessionConfig
from agent_magics.store.log import UNFINISHED_CALL_OUTPUT, SessionLog
from agent_magics.testing import HttpFailure, ScriptedResponsesServer, function_call, message
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow


def said(request: dict[str, Any]) -> str:
    return json.dumps(request["input"])


def test_a_session_resumes_after_a_kernel_restart(kernel: Kernel) -> None:
    script = [[message("first answer")], [message("new answer")], [message("second answer")]]
    with ScriptedResponsesServer(script) as server:
        kernel.run(agent_cell(server.base_url, "", "first question"))
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        [path] = (kernel.ws / ".agent_magics" / "sessions").glob("*.jsonl")
        assert "first answer" in path.read_text()

        kernel.km.restart_kernel(now=True)
        kernel.kc.wait_for_ready(timeout=60)
        kernel.run("%load_ext agent_magics")
        kernel.run(agent_cell(server.base_url, "", "a new question"))
        hint = "can be continued: %agent resume last."
        kernel.wait_for(lambda: kernel.shows(hint))
        assert kernel.shows("first question")
        kernel.wait_for(lambda: len(server.requests) == 2)
        assert "first answer" not in said(server.requests[1])

        out = kernel.outputs_text(kernel.run("%agent resume last"))
        when = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"  # the turns, the times: no "items"
        line = rf"agent: Resuming session {path.stem}: 1 turn, started {when}, last used {when}\."
        assert re.search(line, out), out
        assert "The next %%agent cell continues it." in out
        kernel.run(agent_cell(server.base_url, "", "second question"))
        kernel.wait_for(lambda: len(server.requests) == 3)
        resumed = said(server.requests[2])
    assert "first question" in resumed and "first answer" in resumed
    assert "a new question" not in resumed
    assert resumed.index("first answer") < resumed.index("second question")
    turns = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["turn"] for r in turns if r["type"] == "turn_started"] == [1, 2]


def test_a_kernel_killed_in_the_middle_of_a_turn_leaves_a_session_that_resumes(
    kernel: Kernel,
) -> None:
    sleep = function_call("exec_command", {"cmd": "sleep 20"}, "c-sleep")
    script = [[sleep], [message("back again")]]
    with ScriptedResponsesServer(script) as server:
        kernel.execute(agent_cell(server.base_url, "-a never -s danger-full-access", "sleep"))
        folder = kernel.ws / ".agent_magics" / "sessions"
        kernel.wait_for(lambda: any(b"c-sleep" in p.read_bytes() for p in folder.glob("*.jsonl")))
        kernel.pump(0.5)  # the command runs
        kernel.km.signal_kernel(signal.SIGKILL)
        kernel.wait_for(lambda: not kernel.km.is_alive())
        kernel.km.restart_kernel(now=True)
        kernel.kc.wait_for_ready(timeout=60)
        kernel.run("%load_ext agent_magics")
        out = kernel.outputs_text(kernel.run("%agent resume last"))
        assert "agent: Resuming session" in out and "damaged" not in out
        kernel.run(agent_cell(server.base_url, "", "go on"))
        kernel.wait_for(lambda: len(server.requests) == 2)
        outputs = server.outputs(1)
    assert outputs == {"c-sleep": UNFINISHED_CALL_OUTPUT}


def test_only_a_session_that_can_go_on_here_is_offered(kernel: Kernel) -> None:
    """After a restart, the first cell offers no session another kernel is writing (a
    second notebook's, live) and none whose every turn failed before an answer, and
    ``%agent resume last`` passes over both, saying why for the live one."""
    failure = HttpFailure(400, json.dumps({"error": {"message": "bad model", "type": "x"}}))
    script = [[message("first answer")], failure, [message("later answer")]]
    folder = kernel.ws / ".agent_magics" / "sessions"
    with ScriptedResponsesServer(script) as server:
        kernel.run(agent_cell(server.base_url, "", "answered question"))
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        [answered] = folder.glob("*.jsonl")
        kernel.run("%agent reset")
        kernel.run(agent_cell(server.base_url, "", "a question that fails"))
        kernel.wait_for(
            lambda: len(list(folder.glob("*.jsonl"))) == 2 and kernel.shows("bad model")
        )
        kernel.km.restart_kernel(now=True)
        kernel.kc.wait_for_ready(timeout=60)
        kernel.run("%load_ext agent_magics")
        # another kernel writes the answered session now (its writer's lock is held)
        live = SessionLog.open(folder, answered.stem, SessionConfig(cwd=kernel.ws), str)
        try:
            kernel.run(agent_cell(server.base_url, "", "a new question"))
            kernel.wait_for(lambda: len(server.requests) == 3)
            assert not kernel.shows("can be continued")
            out = kernel.outputs_text(kernel.run("%agent resume last"))
            assert "No saved session to resume" in out
            assert f"Passed over newer session(s) {answered.stem[:8]}" in out
            assert "another kernel is writing them now" in out
        finally:
            live.close()
        out = kernel.outputs_text(kernel.run("%agent resume last"))
    assert f"agent: Resuming session {answered.stem}" in out
