"""What a person approves in ``agent-magics exec`` is what runs, end to end: a person at
a terminal (stdin is a real PTY) answers ``y`` to the question, and the question showed
the command with its escape sequence written out, under both sandbox mechanisms.

Before, the question printed ``echo hellom -f precious.txt``: the ``ESC [ ; r`` in
``echo hello\\x1b[;rm -f precious.txt`` was removed, and with it the ``r`` of ``rm``, so
the ``rm`` that ran was not on the screen. The session's exports show the same text.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.text.visible import visible
from agent_magics.tools.sandbox.platform import MECHANISM_ENV
from tests.helpers.sandbox import LINUX_MECHANISMS, Arena, require_mechanism
from tests.text.test_visible import read_back

pytestmark = pytest.mark.slow

KEY = "sk-dummy-Q7v9Z2k4W8"
END_OF_QUESTION = b"[n] deny  [q] abort turn: "
WAIT_S = 120  # a bound against a hang only: the question comes in well under a second


def cli_env(arena: Arena, mechanism: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    return env | {"HOME": str(arena.home), "OPENAI_API_KEY": KEY, MECHANISM_ENV: mechanism}


def answer_at_a_terminal(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, bytes]:
    """Run ``argv`` with a PTY as stdin, answer ``y`` to the first question on stderr;
    the exit status and all of stderr."""
    master, slave = pty.openpty()
    err = b""
    with subprocess.Popen(
        argv, env=env, cwd=cwd, stdin=slave, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as proc:
        os.close(slave)
        assert proc.stderr is not None
        try:
            while END_OF_QUESTION not in err:
                ready, _, _ = select.select([proc.stderr], [], [], WAIT_S)
                chunk = os.read(proc.stderr.fileno(), 65536) if ready else b""
                assert chunk, f"no question came: {err.decode(errors='replace')}"
                err += chunk
            os.write(master, b"y\n")
            err += proc.stderr.read()
            code = proc.wait(timeout=WAIT_S)
        finally:
            os.close(master)
            if proc.poll() is None:
                proc.kill()
    return code, err


def exec_argv(server: ScriptedResponsesServer, ws: Path, policy: str) -> list[str]:
    argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
    argv += ["--base-url", server.base_url, "-m", "m", "-C", str(ws), "-a", policy]
    return [*argv, "-c", "allow_login_shell=false", "tidy up"]


def shown_command(stderr: str, question: str) -> str:
    """The command a question showed: the indented line under ``question``."""
    found = re.search(re.escape(question) + r"\n  (.*)\n", stderr)
    assert found, stderr
    return found.group(1)


def ask_and_approve(
    arena: Arena, mechanism: str, policy: str, cmd: str
) -> tuple[str, ScriptedResponsesServer]:
    script: list[Any] = [[function_call("exec_command", {"cmd": cmd}, "c1")], [message("done")]]
    with ScriptedResponsesServer(script) as server:
        env = cli_env(arena, mechanism)
        code, err = answer_at_a_terminal(exec_argv(server, arena.ws, policy), env, arena.ws)
    stderr = err.decode()
    assert code == 0, stderr
    assert b"\x1b" not in err  # stderr is a pipe: not even our colours
    return stderr, server


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_the_question_shows_the_escape_that_hid_rm(arena: Arena, mechanism: str) -> None:
    require_mechanism(mechanism)
    precious = arena.ws / "precious.txt"
    precious.write_text("keep me\n")
    cmd = "echo hello\x1b[;rm -f precious.txt"
    stderr, server = ask_and_approve(arena, mechanism, "untrusted", cmd)
    shown = shown_command(stderr, "Run this command?")
    assert shown == r"echo hello\x1b[;rm -f precious.txt"
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
    stderr, _server = ask_and_approve(arena, mechanism, "on-failure", cmd)
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
