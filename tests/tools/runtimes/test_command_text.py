"""Command text no process can be given (a NUL byte, an unpaired surrogate) in ``cmd``,
``command``, ``workdir`` or ``shell`` is answered to the model; the turn goes on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_magics.errors import RespondToModel
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.context import SessionServices
from agent_magics.tools.handlers.shell import ShellCommandHandler, ShellHandler
from agent_magics.tools.handlers.unified_exec import ExecCommandHandler
from agent_magics.tools.registry import ToolHandler
from tests.helpers.sandbox import close
from tests.helpers.tools import shell_invocation

NUL = "echo a\0b"
SURROGATE = "echo \ud800"
NUL_TEXT = "contains a NUL byte; remove it and try again"
SURROGATE_TEXT = (
    "contains an unpaired surrogate (U+D800), which is not valid text; remove it and try again"
)

CASES = [
    pytest.param(ExecCommandHandler(), {"cmd": NUL}, "`cmd` " + NUL_TEXT, id="exec-cmd-nul"),
    pytest.param(
        ExecCommandHandler(), {"cmd": SURROGATE}, "`cmd` " + SURROGATE_TEXT, id="exec-cmd-surrogate"
    ),
    pytest.param(
        ExecCommandHandler(), {"cmd": "ls", "workdir": "a\0b"}, "`workdir` " + NUL_TEXT,
        id="exec-workdir-nul",
    ),
    pytest.param(
        ExecCommandHandler(), {"cmd": "ls", "workdir": "\ud800"}, "`workdir` " + SURROGATE_TEXT,
        id="exec-workdir-surrogate",
    ),
    pytest.param(
        ExecCommandHandler(), {"cmd": "ls", "shell": "ba\0sh"}, "`shell` " + NUL_TEXT,
        id="exec-shell-nul",
    ),
    pytest.param(
        ShellHandler(), {"command": ["echo", "a\0"]}, "`command` " + NUL_TEXT, id="shell-nul"
    ),
    pytest.param(
        ShellHandler(), {"command": ["echo", "\ud800"]}, "`command` " + SURROGATE_TEXT,
        id="shell-surrogate",
    ),
    pytest.param(
        ShellHandler(), {"command": ["ls"], "workdir": "\0"}, "`workdir` " + NUL_TEXT,
        id="shell-workdir-nul",
    ),
    pytest.param(
        ShellCommandHandler(), {"command": NUL}, "`command` " + NUL_TEXT, id="shell-command-nul"
    ),
    pytest.param(
        ShellCommandHandler(), {"command": "ls", "workdir": "\ud800"},
        "`workdir` " + SURROGATE_TEXT, id="shell-command-workdir-surrogate",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("handler", "args", "expected"), CASES)
async def test_bad_text_is_answered(
    tmp_path: Path, handler: ToolHandler, args: dict[str, Any], expected: str
) -> None:
    services = SessionServices()
    inv = shell_invocation(handler, args, services, tmp_path)
    try:
        with pytest.raises(RespondToModel) as caught:
            await handler.handle(inv)
    finally:
        await close(services)
    assert caught.value.message == expected


def test_bad_text_through_the_cli(tmp_path: Path) -> None:
    """A NUL in ``cmd`` and a surrogate in ``workdir``: both answered, then the turn ends
    normally with the model's message."""
    calls = [
        [function_call("exec_command", {"cmd": NUL}, "c0")],
        [function_call("exec_command", {"cmd": "ls", "workdir": "\ud800"}, "c1")],
        [message("done")],
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"OPENAI_API_KEY": "sk-dummy-Q7v9Z2k4W8"}
    with ScriptedResponsesServer(calls) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-C", str(tmp_path), "go"]
        done = subprocess.run(
            argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        assert NUL_TEXT in server.outputs(1)["c0"]
        assert SURROGATE_TEXT in server.outputs(2)["c1"]
    assert done.stdout.strip().endswith("done")
