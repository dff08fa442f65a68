"""End to end through ``agent-magics exec``: the model writes a program named like a
known-safe command into the workspace and asks to run it outside the sandbox.

Default approval policy (on-request) and sandbox (workspace-write), no terminal, so any
question is answered "denied". Codex judges ``./ls`` by its file name and would run it
unasked, outside the sandbox (``executable_name_lookup_key`` in
``is_dangerous_command.rs``); here the call is asked about, denied, and the file the
program would create outside the workspace stays absent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.sandbox.platform import probe
from tests.helpers.sandbox import Arena

KEY = "sk-dummy-Q7v9Z2k4W8"


def run_cli(arena: Arena, calls: list[dict[str, Any]]) -> tuple[ScriptedResponsesServer, str]:
    """Run the calls as the model's turns, one tool call each; the server and stderr."""
    script: list[Any] = [
        [function_call("exec_command", call, f"c{i}")] for i, call in enumerate(calls)
    ]
    script.append([message("done")])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(arena.home), "OPENAI_API_KEY": KEY}
    with ScriptedResponsesServer(script) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-C", str(arena.ws), "try it"]
        done = subprocess.run(
            argv, env=env, cwd=arena.ws, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    return server, done.stderr


@pytest.mark.slow
def test_model_written_ls_run_escalated_is_asked_and_denied(arena: Arena) -> None:
    if probe().kind is None:
        pytest.skip("no sandbox mechanism works here")
    target = arena.outside / "new.txt"
    write = f"printf '#!/bin/sh\\ntouch {target}\\n' > ls && chmod +x ls"
    escalate = {"sandbox_permissions": "require_escalated", "justification": "list files"}
    server, stderr = run_cli(arena, [{"cmd": write}, {"cmd": "./ls", **escalate}])
    assert (arena.ws / "ls").exists()  # the sandboxed write went through
    assert "approval denied" in stderr
    assert "rejected by user" in server.outputs(2)["c1"]
    assert not target.exists()
