"""``agent-magics exec`` run by a person at a real terminal: stdin is a PTY, the questions
come on stderr and are answered by letter, as the approval tests of the CLI need."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from agent_magics.testing import ScriptedResponsesServer
from agent_magics.tools.sandbox.platform import MECHANISM_ENV
from tests.helpers.sandbox import Arena

KEY = "sk-dummy-Q7v9Z2k4W8"
END_OF_QUESTION = b"[n] deny  [q] abort turn: "
WAIT_S = 120  # a bound against a hang only: the question comes in well under a second


def cli_env(arena: Arena, mechanism: str) -> dict[str, str]:
    """The test's environment without our settings, ``arena``'s home and the sandbox
    ``mechanism`` chosen."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    return env | {"HOME": str(arena.home), "OPENAI_API_KEY": KEY, MECHANISM_ENV: mechanism}


def exec_argv(server: ScriptedResponsesServer, ws: Path, policy: str) -> list[str]:
    argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
    argv += ["--base-url", server.base_url, "-m", "m", "-C", str(ws), "-a", policy]
    return [*argv, "-c", "allow_login_shell=false", "tidy up"]


def answer_each_question(
    argv: list[str], env: dict[str, str], cwd: Path, letters: list[str]
) -> tuple[int, str]:
    """Run ``argv`` with a PTY as stdin and answer its questions on stderr with
    ``letters`` in turn (a question beyond them fails the test); exit status, stderr."""
    master, slave = pty.openpty()
    err, asked = b"", 0
    with subprocess.Popen(
        argv, env=env, cwd=cwd, stdin=slave, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as proc:
        os.close(slave)
        assert proc.stderr is not None
        try:
            while True:
                ready, _, _ = select.select([proc.stderr], [], [], WAIT_S)
                assert ready, f"no progress: {err.decode(errors='replace')}"
                chunk = os.read(proc.stderr.fileno(), 65536)
                if not chunk:
                    break
                err += chunk
                while err.count(END_OF_QUESTION) > asked:
                    assert asked < len(letters), f"one question too many: {err.decode()}"
                    os.write(master, letters[asked].encode() + b"\n")
                    asked += 1
            code = proc.wait(timeout=WAIT_S)
        finally:
            os.close(master)
            if proc.poll() is None:
                proc.kill()
    return code, err.decode()
