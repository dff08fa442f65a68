"""Where an approved command runs is on the screen, end to end through ``agent-magics
exec`` at a real terminal (stdin is a PTY) under both sandbox mechanisms.

Before, the question for ``rm -f precious.txt`` with ``workdir`` set to another folder
showed only the command and the reason; after ``y`` the file was removed, unsandboxed,
in that other folder. Now the question says ``in <folder>`` and so does the call's line.
"Approve for session" is keyed by the folder as well as the command (as Codex keys it),
so a yes for one folder never runs the command in another unasked.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.exec_cli import END_OF_QUESTION, answer_each_question, cli_env, exec_argv
from tests.helpers.sandbox import LINUX_MECHANISMS, Arena, require_mechanism

pytestmark = pytest.mark.slow

ESCALATED = {"sandbox_permissions": "require_escalated"}


def run_turn(
    arena: Arena, mechanism: str, calls: list[dict[str, Any]], letters: list[str]
) -> tuple[str, ScriptedResponsesServer]:
    script: list[Any] = [
        [function_call("exec_command", call, f"c{i}")] for i, call in enumerate(calls, 1)
    ]
    script.append([message("done")])
    with ScriptedResponsesServer(script) as server:
        argv = exec_argv(server, arena.ws, "on-request")
        code, stderr = answer_each_question(argv, cli_env(arena, mechanism), arena.ws, letters)
    assert code == 0, stderr
    return stderr, server


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_the_question_says_in_which_folder_the_command_runs(arena: Arena, mechanism: str) -> None:
    require_mechanism(mechanism)
    other = arena.outside / "build"
    other.mkdir()
    (other / "precious.txt").write_text("keep me\n")
    (arena.ws / "precious.txt").write_text("the one the person thinks of\n")
    call = {"cmd": "rm -f precious.txt", "workdir": str(other), **ESCALATED}
    call["justification"] = "remove the stale build file"
    stderr, server = run_turn(arena, mechanism, [call], ["y"])
    question = (
        "Run this command?\n"
        "  rm -f precious.txt\n"
        f"  in {other}\n"
        "  Reason: remove the stale build file\n"
    )
    assert question in stderr
    assert f"exec rm -f precious.txt\n  in {other}\n" in stderr  # the call's own line
    assert not (other / "precious.txt").exists()  # what was approved, where it was shown
    assert (arena.ws / "precious.txt").exists()
    assert "Process exited with code 0" in server.outputs(1)["c1"]


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_approved_for_the_session_in_one_folder_asks_again_in_another(
    arena: Arena, mechanism: str
) -> None:
    require_mechanism(mechanism)
    first, second = arena.outside / "first", arena.outside / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "precious.txt").write_text("keep me\n")
    calls = [
        {"cmd": "rm -f precious.txt", "workdir": str(first), **ESCALATED},
        {"cmd": "rm -f precious.txt", "workdir": str(first), **ESCALATED},
        {"cmd": "rm -f precious.txt", "workdir": str(second), **ESCALATED},
    ]
    stderr, server = run_turn(arena, mechanism, calls, ["a", "n"])
    assert stderr.count(END_OF_QUESTION.decode()) == 2  # the repeat in `first` was not asked
    assert "approval approved_for_session (remembered for the session)" in stderr
    assert f"  in {second}\n" in stderr.split("Run this command?")[-1]
    assert not (first / "precious.txt").exists()
    assert (second / "precious.txt").read_text() == "keep me\n"
    assert "rejected by user" in server.outputs(3)["c3"]
