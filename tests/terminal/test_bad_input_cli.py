"""``agent-magics exec`` end to end against loopback servers that send what no server
should: odd calls are answered and the run succeeds; server faults end it with exit
status 1 and one sentence on stderr, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_magics.testing import ScriptedResponsesServer, message
from tests.helpers.bad_streams import deep_event, oversize_event, responses_raw
from tests.helpers.fault_server import Answer, FaultServer

EXIT_USER_ERROR = 1


def exec_cli(base_url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(cwd), "OPENAI_API_KEY": "sk-test"}
    argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
    argv += ["--base-url", base_url, "-m", "m", "-a", "never", "-C", str(cwd), "go"]
    return subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.slow
def test_odd_calls_are_answered_through_exec(tmp_path: Path) -> None:
    """A nameless call and one whose arguments are a number get answers; the run ends
    with the model's next message."""
    calls = [
        {"type": "function_call", "call_id": "c1", "name": None, "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "update_plan", "arguments": 5},
        {"type": "function_call", "call_id": "c3", "name": "update_plan", "arguments": "[" * 999},
    ]
    with ScriptedResponsesServer([calls, [message("all answered")]]) as server:
        done = exec_cli(server.base_url, tmp_path)
        outputs = server.outputs(1)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "all answered\n"
    assert "Traceback" not in done.stderr
    prefix = "failed to parse function arguments: "
    assert outputs == {
        "c1": "unsupported call: (the call names no tool)",
        "c2": prefix
        + "invalid type: integer `5`, expected struct UpdatePlanArgs at line 1 column 1",
        "c3": prefix + "recursion limit exceeded at line 1 column 128",
    }


FAULTS = {
    "string-item": (
        responses_raw(["hello"]),
        "the model server sent an output item that is not a JSON object (a string).",
    ),
    "missing-call-id": (
        responses_raw([{"type": "function_call", "name": "update_plan", "arguments": "{}"}]),
        "the model server sent a function_call without a call_id, so it cannot be answered.",
    ),
    "deep-event": (
        deep_event("responses"),
        "the model server sent an event nested deeper than 256 levels.",
    ),
    "no-items": (
        responses_raw([]),
        "the model server sent an answer with no message and no tool call.",
    ),
    "oversize-event": (
        oversize_event("responses"),
        "the model server sent an event larger than 16 MiB, so the stream was stopped.",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("fault", list(FAULTS))
def test_server_fault_is_one_sentence_through_exec(tmp_path: Path, fault: str) -> None:
    payload, sentence = FAULTS[fault]
    server = FaultServer([Answer(raw=payload)])
    try:
        done = exec_cli(server.base_url, tmp_path)
    finally:
        server.close()
    assert done.returncode == EXIT_USER_ERROR
    session, _, said = done.stderr.partition("\n")
    assert session.startswith("session: ")  # the id of the saved session comes first
    assert said == f"agent-magics: The model's answer failed: {sentence}\n"
    assert done.stdout == ""
