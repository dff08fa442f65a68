"""``%agent history`` reads as a conversation (prompts, answers, each call with what it
ran and a trimmed output) and ``--raw`` gives the items as sent: through an in-process
IPython shell driving a real turn against the loopback model server, and the text
function on items of each kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from agent_magics.jupyter.magics import AgentMagics
from agent_magics.testing import (
    ScriptedResponsesServer,
    Turn,
    custom_tool_call,
    function_call,
    message,
)
from agent_magics.transcript.history import EMPTY, history_text

OPTS = "-a never -s danger-full-access -c allow_login_shell=false"
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"


def session_of(ip: Any) -> Any:
    found: AgentMagics = ip.magics_manager.registry["AgentMagics"]
    return found.session


def test_history_reads_as_a_conversation(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script: list[Turn] = [
        [function_call("exec_command", {"cmd": "seq 1 20"}, "c1")],
        [custom_tool_call("apply_patch", PATCH, "c2")],
        [message("Made `hello.txt`.\nIt says hi.")],
        [message("You are welcome.")],
    ]
    with ScriptedResponsesServer(script) as server:
        ip.run_cell(f"%%agent --base-url {server.base_url} {OPTS}\nmake hello.txt")
        ip.run_cell("%%agent -a untrusted\nthanks")
    capsys.readouterr()
    ip.run_cell("%agent history")
    shell = session_of(ip).shell.kind
    assert capsys.readouterr().out == (
        "you: make hello.txt\n"
        f"  + environment: cwd {tmp_path} · approval never · sandbox danger-full-access"
        f" · network restricted · shell {shell}\n"
        "• exec_command: $ seq 1 20 · exit code 0\n"
        "    1\n"
        "    2\n"
        "    3\n"
        "    … 14 more lines …\n"
        "    18\n"
        "    19\n"
        "    20\n"
        "• apply_patch: Add hello.txt · exit code 0\n"
        "    Success. Updated the following files:\n"
        "    A hello.txt\n"
        "agent: Made `hello.txt`.\n"
        "       It says hi.\n"
        "\n"
        "you: thanks\n"
        "  + environment changed: approval untrusted\n"
        "agent: You are welcome.\n"
    )


def test_history_raw_gives_the_items_as_sent(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedResponsesServer([[message("hello")]]) as server:
        ip.run_cell(f"%%agent --base-url {server.base_url} {OPTS}\nsay hello")
        capsys.readouterr()
        ip.run_cell("%agent history --raw")
        printed = json.loads(capsys.readouterr().out)
    assert printed == [i.wire() for i in session_of(ip).history]
    assert printed[:-1] == server.requests[0]["input"]  # what was sent, then the answer
    assert printed[-1]["role"] == "assistant"


def test_history_before_any_turn_and_a_bad_option(
    ip: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    ip.run_cell("%agent history")
    assert capsys.readouterr().out == f"{EMPTY}\n"
    ip.run_cell("%agent history --raw")
    assert capsys.readouterr().out == "[]\n"
    with pytest.raises(UsageError, match=r"usage: %agent history \[--raw\]"):
        ip.run_line_magic("agent", "history --full")


# -- the text of each kind of item -------------------------------------------------------


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def test_apply_patch_json_output_is_shown_as_its_text() -> None:
    output = {
        "output": "Success. Updated the following files:\nM a.py\n",
        "metadata": {"exit_code": 0, "duration_seconds": 0.01},
    }
    items = [
        user("fix a.py"),
        function_call("apply_patch", {"input": "*** Begin Patch\n*** Update File: a.py\n"}, "p"),
        {"type": "function_call_output", "call_id": "p", "output": json.dumps(output)},
    ]
    assert history_text(items) == (
        "you: fix a.py\n"
        "• apply_patch: Update a.py · exit code 0\n"
        "    Success. Updated the following files:\n"
        "    M a.py"
    )


def test_other_tools_context_and_reasoning() -> None:
    items = [
        user("# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nbe kind\n</INSTRUCTIONS>"),
        user("look"),
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Reading first."}]},
        function_call("read_file", {"file_path": "a.py", "offset": 1}, "r"),
        function_call("grep_files", {"pattern": "def", "limit": 5}, "g"),
        {"type": "function_call_output", "call_id": "r", "output": "L1: x = 1"},
        {"type": "weird_item"},
    ]
    assert history_text(items) == (
        "you: look\n"
        "  + project instructions (AGENTS.md), 5 lines\n"
        "thinking: Reading first.\n"
        "• read_file: a.py\n"
        "    L1: x = 1\n"
        '• grep_files: {"pattern": "def", "limit": 5} · no output yet\n'
        "(weird_item item)"
    )


def test_secrets_are_taken_out_of_both_forms() -> None:
    secret = "sk-history-secret-1357924680"
    items = [user(f"use {secret}")]

    def redact(text: str) -> str:
        return text.replace(secret, "[REDACTED]")

    assert secret not in history_text(items, redact=redact)
    assert secret not in history_text(items, raw=True, redact=redact)
