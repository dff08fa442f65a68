"""Two agents asking at once at a real terminal (issue 31, item 2): ``agent-magics exec``
with a PTY as stdin, a helper asking to run ``touch child_ok.txt`` outside the sandbox and,
while that question waits, the parent asking to run ``touch <outside>/PWNED``.

The person reads the screen as people do: after a question shows they look a moment
longer, then answer the questions they see from the last one up, each by what it shows
(``y`` for the helper's file, ``n`` for the other). Each question must be on screen alone
and answered before the next is printed, and say which agent asks; the typed ``n`` must
deny the command it was typed under."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import ConversationsServer, function_call, message
from tests.helpers.agents import agent_call, deciding, outputs, spawned_ids
from tests.helpers.exec_cli import END_OF_QUESTION, KEY, WAIT_S

pytestmark = pytest.mark.slow

PARENT, TASK = "Delegate the file.", "Write child_ok.txt in the workspace."
LOOK_S = 2.0
"""How long the person looks at the screen after a question shows before answering."""


def escalated(cmd: str, call_id: str) -> dict[str, Any]:
    args = {"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": "needed"}
    return function_call("exec_command", args, call_id)


def questions(screen: str) -> list[str]:
    """The questions on screen not yet answered: each ends with the answer letters."""
    return screen.split(END_OF_QUESTION.decode())[:-1]


def test_each_question_is_answered_by_the_letter_typed_under_it(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    helper_asked = threading.Event()

    def parent(body: dict[str, Any]) -> list[dict[str, Any]]:
        said = outputs(body)
        if "s1" not in said:
            return [agent_call("spawn_agent", {"message": TASK}, "s1")]
        (helper,) = spawned_ids(body, "s1")
        if "p1" not in said:
            helper_asked.wait(WAIT_S)  # the parent asks while the helper's question waits
            return [escalated(f"touch {outside / 'PWNED'}", "p1")]
        if "w1" not in said:
            return [agent_call("wait_agent", {"targets": [helper]}, "w1")]
        return [message("Done.")]

    scripts: dict[str, Any] = {
        PARENT: deciding(parent),
        TASK: [[escalated("touch child_ok.txt", "call_1")], [message("wrote it")]],
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(tmp_path), "OPENAI_API_KEY": KEY}
    with ConversationsServer(scripts) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-a", "on-request", "-C", str(ws)]
        argv += ["-c", "sessions_dir=false", "-c", "allow_login_shell=false", PARENT]
        code, err, shown_alone = _answer_by_sight(argv, env, ws, helper_asked)
    assert code == 0, err
    assert (ws / "child_ok.txt").exists()
    assert not (outside / "PWNED").exists(), err
    assert shown_alone == [True, True], err  # never two questions on screen at once
    assert re.search(r"\[\w+\] asks:\n", err)  # the helper's question names the helper
    assert "The main agent asks:" in err


def _answer_by_sight(
    argv: list[str], env: dict[str, str], cwd: Path, helper_asked: threading.Event
) -> tuple[int, str, list[bool]]:
    master, slave = pty.openpty()
    err, answered, alone = "", 0, []
    with subprocess.Popen(
        argv, env=env, cwd=cwd, stdin=slave, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as proc:
        os.close(slave)
        assert proc.stderr is not None
        try:
            while True:
                err, ended = _read(proc.stderr.fileno(), err, WAIT_S)
                if ended:
                    break
                if len(questions(err)) > answered:
                    helper_asked.set()
                    err, ended = _read(proc.stderr.fileno(), err, LOOK_S, keep_on=True)
                    waiting = questions(err)[answered:]
                    alone.append(len(waiting) == 1)
                    for shown in reversed(waiting):  # the last one shown first
                        letter = "n" if "PWNED" in shown else "y"
                        os.write(master, letter.encode() + b"\n")
                    answered += len(waiting)
                    if ended:
                        break
            code = proc.wait(timeout=WAIT_S)
        finally:
            os.close(master)
            if proc.poll() is None:
                proc.kill()
    return code, err, alone


def _read(fd: int, err: str, wait_s: float, keep_on: bool = False) -> tuple[str, bool]:
    """Read what comes on ``fd`` for up to ``wait_s`` (all of it when ``keep_on``, else
    the first chunk); the text so far and whether the stream ended."""
    end = time.monotonic() + wait_s
    while (left := end - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            assert keep_on, f"no progress: {err}"
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            return err, True
        err += chunk.decode(errors="replace")
        if not keep_on:
            break
    return err, False
