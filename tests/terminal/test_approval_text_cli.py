"""What a person approves in ``agent-magics exec`` is what runs, end to end: a person at
a terminal (stdin is a real PTY) answers ``y`` to the question, and the question showed
the command with its escape sequence written out, under both sandbox mechanisms.

Before, the question printed ``echo hellom -f precious.txt``: the ``ESC [ ; r`` in
``echo hello\\x1b[;rm -f precious.txt`` was removed, and with it the ``r`` of ``rm``, so
the ``rm`` that ran was not on the screen. The session's exports show the same text.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.text.visible import visible
from tests.helpers.exec_cli import WAIT_S, answer_each_question, cli_env, exec_argv
from tests.helpers.sandbox import LINUX_MECHANISMS, Arena, require_mechanism
from tests.helpers.visible_text import read_back

pytestmark = pytest.mark.slow


def shown_command(stderr: str, question: str) -> str:
    """The command a question showed: the indented line under ``question``."""
    found = re.search(re.escape(question) + r"\n  (.*)\n", stderr)
    assert found, stderr
    return found.group(1)


def ask_and_approve(
    arena: Arena, mechanism: str, policy: str, cmd: str, tool: str = "exec_command"
) -> tuple[str, ScriptedResponsesServer]:
    """Run ``cmd`` through ``tool`` and approve every question. (``shell_command`` judges
    a sandbox denial once the command has ended; ``exec_command`` only within its first
    150 ms, as Codex does, which a loaded machine can miss.)"""
    args = {"cmd": cmd} if tool == "exec_command" else {"command": cmd}
    script: list[Any] = [[function_call(tool, args, "c1")], [message("done")]]
    with ScriptedResponsesServer(script) as server:
        env = cli_env(arena, mechanism)
        argv = exec_argv(server, arena.ws, policy)
        if tool != "exec_command":
            argv[-1:-1] = ["-c", f"shell_type={tool}"]
        code, stderr = answer_each_question(argv, env, arena.ws, ["y"])
    assert code == 0, stderr
    assert "\x1b" not in stderr  # stderr is a pipe: not even our colours
    return stderr, server


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_the_question_shows_the_escape_that_hid_rm(arena: Arena, mechanism: str) -> None:
    require_mechanism(mechanism)
    # in a folder of the workspace: Landlock grants those whole, while the workspace's
    # top level (which holds .git) it cannot, and a denied write there is retried
    # without the sandbox only if seen within exec_command's first 150 ms
    precious = arena.ws / "keep" / "precious.txt"
    precious.parent.mkdir()
    precious.write_text("keep me\n")
    cmd = "echo hello\x1b[;rm -f keep/precious.txt"
    stderr, server = ask_and_approve(arena, mechanism, "untrusted", cmd)
    shown = shown_command(stderr, "Run this command?")
    assert shown == r"echo hello\x1b[;rm -f keep/precious.txt"
    assert read_back(shown) == cmd  # what was approved, read back, is what ran
    assert f"exec {shown}\n" in stderr  # the call's own line, before the question
    assert "approval approved" in stderr
    assert not precious.exists()  # the rm the question showed is the rm that ran
    assert "Process exited with code 0" in server.outputs(1)["c1"]
    exported = export_all(arena, mechanism)
    assert f"$ {shown}\n" in exported[".md"]
    assert f"$ {shown}</pre>" in exported[".html"]
    cells = json.loads(exported[".ipynb"])["cells"]
    [source] = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert source == visible(cmd) == shown
    for text in exported.values():  # the command as it ran is nowhere (its output is)
        assert cmd not in text and json.dumps(cmd)[1:-1] not in text


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_the_retry_without_the_sandbox_shows_it_too(arena: Arena, mechanism: str) -> None:
    """``on-failure``: the sandbox refuses the write outside the workspace, and the
    question to run it again without the sandbox shows the same written-out text."""
    require_mechanism(mechanism)
    made = arena.outside / "made.txt"
    cmd = f"echo hello\x1b[2K\r\u202e;touch {made}"
    stderr, _server = ask_and_approve(arena, mechanism, "on-failure", cmd, "shell_command")
    shown = shown_command(stderr, "Run this command? (it would run without the sandbox)")
    assert shown == rf"echo hello\x1b[2K\x0d<U+202E>;touch {made}"
    assert read_back(shown) == cmd
    assert made.exists()


def export_all(arena: Arena, mechanism: str) -> dict[str, str]:
    """The last session, exported by ``agent-magics export`` in each format."""
    texts = {}
    for suffix in (".md", ".html", ".ipynb"):
        done = subprocess.run(
            [sys.executable, "-m", "agent_magics", "export", "last", f"out{suffix}"],
            env=cli_env(arena, mechanism), cwd=arena.ws, capture_output=True, text=True,
            timeout=WAIT_S, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        texts[suffix] = (arena.ws / f"out{suffix}").read_text()
    return texts
