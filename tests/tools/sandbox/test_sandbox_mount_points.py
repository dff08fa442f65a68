"""A sandboxed command leaves no empty ``.git`` (bubblewrap's mount point) in a working
folder that had none, and the protection holds meanwhile: not even after another
command in the same folder ended while this one still runs. Both Linux mechanisms."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.sandbox.platform import MECHANISM_ENV
from tests.helpers.sandbox import KEY, LINUX_MECHANISMS, Arena, Run, require_mechanism

pytestmark = pytest.mark.slow  # real sandboxes and CLI runs

PLANT = "mkdir -p .git/hooks && echo x > .git/hooks/x && echo PLANTED; ls -a"


def top_level(arena: Arena) -> list[str]:
    return sorted(os.listdir(arena.ws))


async def test_no_empty_git_is_left_behind(run: Run, arena: Arena) -> None:
    shutil.rmtree(arena.ws / ".git")
    before = top_level(arena)
    output = await run(PLANT, "workspace-write")
    assert "PLANTED" not in output, output
    assert top_level(arena) == before  # no .git, no .agent_magics


def _session_id(request: dict[str, Any]) -> int:
    outputs = [i for i in request["input"] if i.get("type") == "function_call_output"]
    text = json.dumps(outputs)
    found = re.search(r"session ID (\d+)", text)
    assert found, text
    return int(found.group(1))


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_a_command_ending_keeps_the_mount_point_of_one_still_running(
    arena: Arena, mechanism: str
) -> None:
    """Command 1 runs on (a session) while command 2 runs and ends in the same folder;
    then command 1 tries to create ``.git``: still refused, and nothing is left."""
    require_mechanism(mechanism)
    shutil.rmtree(arena.ws / ".git")
    before = top_level(arena)
    first = function_call(
        "exec_command", {"cmd": f"read go; {PLANT}", "tty": True, "yield_time_ms": 500}, "c1"
    )
    second = function_call("exec_command", {"cmd": "ls -a; echo second done"}, "c2")

    def resume(request: dict[str, Any]) -> list[dict[str, Any]]:
        args = {"session_id": _session_id(request), "chars": "go\n", "yield_time_ms": 5000}
        return [function_call("write_stdin", args, "c3")]

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(arena.home), "OPENAI_API_KEY": KEY, MECHANISM_ENV: mechanism}
    turns: list[Any] = [[first], [second], resume, [message("done")]]
    with ScriptedResponsesServer(turns) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-s", "workspace-write", "-a", "never"]
        argv += ["-c", "sessions_dir=false", "-c", "shell_snapshot=false"]
        argv += ["-C", str(arena.ws), "try it"]
        done = subprocess.run(
            argv, env=env, cwd=arena.ws, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "second done" in server.outputs(2)["c2"]
        last = server.outputs(3)["c3"]
    assert "PLANTED" not in last, last
    assert "exit code" in last or "Process exited" in last, last
    assert top_level(arena) == before
