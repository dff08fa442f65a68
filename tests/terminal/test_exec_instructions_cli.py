"""What ``agent-magics exec`` tells the model of approvals, through the real CLI and a
scripted model server (issue 34): with stdin not a terminal nobody can answer, and the
instructions say so, with what runs without asking and what is denied under the policy
and sandbox given; at a terminal (a real PTY) a person answers, and they say that."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_magics.agent.headless_rules import headless_rules
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.testing import ScriptedResponsesServer, message
from tests.helpers.exec_cli import answer_each_question

pytestmark = pytest.mark.slow

KEY = "sk-instructions-0123456789"


def argv_env(tmp_path: Path, base_url: str, *options: str) -> tuple[list[str], dict[str, str]]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
    argv += ["--base-url", base_url, "-m", "m", "-C", str(ws), "-c", "allow_login_shell=false"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    return [*argv, *options, "look"], env | {"HOME": str(tmp_path), "OPENAI_API_KEY": KEY}


@pytest.mark.parametrize(
    ("policy", "sandbox"),
    [("on-request", "workspace-write"), ("untrusted", "read-only")],
)
def test_with_nobody_to_ask_the_instructions_say_what_runs_and_what_is_denied(
    tmp_path: Path, policy: str, sandbox: str
) -> None:
    with ScriptedResponsesServer([[message("ok")]]) as server:
        argv, env = argv_env(tmp_path, server.base_url, "-a", policy, "-s", sandbox)
        done = subprocess.run(
            argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    told = server.requests[0]["instructions"]
    flat = " ".join(told.split())
    assert "Nobody can answer an approval question here" in flat
    assert "every call that needs approval is denied" in flat
    assert "approves the tool calls" not in flat and "A person" not in flat
    for rule in headless_rules(ApprovalPolicy(policy), SandboxMode(sandbox), approves=False):
        assert f"- {rule}\n" in told


def test_at_a_terminal_the_instructions_say_a_person_there_approves(tmp_path: Path) -> None:
    with ScriptedResponsesServer([[message("ok")]]) as server:
        argv, env = argv_env(tmp_path, server.base_url, "-a", "untrusted")
        code, err = answer_each_question(argv, env, tmp_path, [])
    assert code == 0, err
    told = " ".join(server.requests[0]["instructions"].split())
    assert "A person at the terminal reads your messages and approves" in told
    assert "Nobody can answer" not in told and "notebook" not in told.split("How to work")[0]
