"""``local_shell_call`` items through a real session: run by the shell tool under the
turn's sandbox and approval policy, answered with Codex's structured JSON, kept and sent
back as they came; a call without an id ends the turn; an item type nobody knows is
kept and the turn goes on."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent_magics.errors import ModelError
from agent_magics.protocol.approval import ReviewDecision
from agent_magics.protocol.items import server_item
from agent_magics.store.readback import answer_unfinished_calls
from agent_magics.testing import (
    ScriptedResponsesServer,
    function_call,
    local_shell_call,
    message,
)
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.handlers.toolset import build_registry
from tests.helpers.sandbox import LINUX_MECHANISMS, RecordingApprover, require_mechanism
from tests.helpers.sandbox import use_mechanism as mechanism
from tests.helpers.sessions import session_for

STRUCTURED = re.compile(
    r'\{"output":"(?P<output>.*)","metadata":\{"exit_code":(?P<code>-?\d+),'
    r'"duration_seconds":\d+(\.\d)?\}\}',
    re.DOTALL,
)
"""Codex's structured exec output: compact JSON, keys in this order."""


def answer_to(body: dict[str, Any], call_id: str) -> dict[str, Any]:
    found = [
        i
        for i in body["input"]
        if i["type"].endswith("_call_output") and i.get("call_id") == call_id
    ]
    assert len(found) == 1, body["input"]
    return found[0]


def structured(text: str) -> tuple[str, int]:
    matched = STRUCTURED.fullmatch(text)
    assert matched is not None, text
    parsed = json.loads(text)
    return parsed["output"], parsed["metadata"]["exit_code"]


async def run_script(
    tmp_path: Path, script: list[Any], **settings: Any
) -> tuple[list[dict[str, Any]], str]:
    with ScriptedResponsesServer(script) as server:
        session = session_for(tmp_path, server.base_url, **settings)
        result = await session.run_turn("go")
        await session.aclose()
    return server.requests, result.final_text


@pytest.mark.parametrize("kind", LINUX_MECHANISMS)
async def test_runs_in_the_sandbox_and_is_answered_in_codex_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    require_mechanism(kind)
    (tmp_path / "sub").mkdir()
    call = local_shell_call(
        ["bash", "-c", "pwd; echo hi; touch made.txt"],
        "ls1",
        working_directory=str(tmp_path / "sub"),
        timeout_ms=10_000,
    )
    with mechanism(monkeypatch, kind):
        requests, final = await run_script(
            tmp_path,
            [[call], [message("ok")]],
            shell_type="unified_exec",
            approval_policy="never",
            sandbox_mode="read-only",
            apply_patch_tool_type=None,
        )
    assert final == "ok"
    assert not (tmp_path / "sub" / "made.txt").exists()  # the sandbox held
    sent = requests[1]["input"]
    assert call in sent  # kept and sent back exactly as the model sent it
    answer = answer_to(requests[1], "ls1")
    assert answer["type"] == "function_call_output"
    assert sent.index(answer) == sent.index(call) + 1
    output, code = structured(answer["output"])
    assert output.startswith(f"{tmp_path / 'sub'}\nhi\n")
    assert any(word in output.lower() for word in ("read-only file system", "permission denied"))
    assert code == 1
    assert "local_shell" not in [t.get("name") for t in requests[0]["tools"]]


async def test_answer_is_reserialized_like_shell_when_freeform_apply_patch_is_offered(
    tmp_path: Path,
) -> None:
    script = [[local_shell_call(["echo", "hi"], "ls1")], [message("ok")]]
    requests, _ = await run_script(
        tmp_path, script, shell_type="shell_command", approval_policy="never"
    )
    text = answer_to(requests[1], "ls1")["output"]
    assert re.fullmatch(r"Exit code: 0\nWall time: \d+(\.\d)? seconds\nOutput:\nhi\n", text)


@pytest.mark.parametrize("decision", [ReviewDecision.APPROVED, ReviewDecision.DENIED])
async def test_needs_approval_as_shell_does(tmp_path: Path, decision: ReviewDecision) -> None:
    """Under ``untrusted`` a command that is not known safe is asked about, for a
    local_shell_call exactly as for a ``shell`` call, and answered the same."""
    answers: list[object] = []
    for tool in ("shell", "local_shell"):
        folder = tmp_path / tool
        folder.mkdir()
        argv = ["touch", "made.txt"]
        call = (
            function_call("shell", {"command": argv}, "c1")
            if tool == "shell"
            else local_shell_call(argv, "c1")
        )
        approver = RecordingApprover(decision)
        requests, _ = await run_script(
            folder,
            [[call], [message("ok")]],
            shell_type="shell",
            approval_policy="untrusted",
            sandbox_mode="workspace-write",
            apply_patch_tool_type=None,
            approver=approver,
        )
        assert [list(r.command) for r in approver.asked] == [argv]
        assert (folder / "made.txt").exists() == (decision is ReviewDecision.APPROVED)
        text = answer_to(requests[1], "c1")["output"]
        answers.append(structured(text) if decision is ReviewDecision.APPROVED else text)
    assert answers[0] == answers[1]
    assert answers[0] == (
        ("", 0) if decision is ReviewDecision.APPROVED else "exec command rejected by user"
    )


async def test_a_call_paired_by_its_id_alone_is_answered_under_that_id(tmp_path: Path) -> None:
    call = local_shell_call(["echo", "hi"])
    del call["call_id"]
    requests, _ = await run_script(
        tmp_path,
        [[call], [message("ok")]],
        shell_type="unified_exec",
        approval_policy="never",
        apply_patch_tool_type=None,
    )
    assert call in requests[1]["input"]
    assert structured(answer_to(requests[1], call["id"])["output"]) == ("hi\n", 0)


async def test_a_call_without_any_id_ends_the_turn_with_codex_words(tmp_path: Path) -> None:
    call = local_shell_call(["touch", "made.txt"])
    del call["call_id"], call["id"]
    with ScriptedResponsesServer([[call], [message("later")]]) as server:
        session = session_for(tmp_path, server.base_url, shell_type="unified_exec")
        with pytest.raises(ModelError, match="LocalShellCall without call_id or id"):
            await session.run_turn("go")
        assert not (tmp_path / "made.txt").exists()
        result = await session.run_turn("again")  # nothing of the failed answer is kept
        await session.aclose()
    assert result.final_text == "later"
    assert not [i for i in server.requests[1]["input"] if i["type"] == "local_shell_call"]


async def test_without_a_shell_tool_it_is_an_unsupported_call(tmp_path: Path) -> None:
    script = [[local_shell_call(["touch", "made.txt"], "ls1")], [message("ok")]]
    requests, final = await run_script(tmp_path, script, shell_type="disabled")
    assert final == "ok"
    assert not (tmp_path / "made.txt").exists()
    assert answer_to(requests[1], "ls1")["output"] == "unsupported call: local_shell"


async def test_an_unknown_item_type_is_kept_and_the_turn_goes_on(tmp_path: Path) -> None:
    """Codex's router runs no tool for an item it does not know and the turn goes on;
    nothing answers it (we keep the item in history, as every item we do not model)."""
    unknown = {"type": "server_side_gadget_call", "id": "g1", "status": "completed", "x": [1]}
    plan = function_call("update_plan", {"plan": []}, "p1")
    requests, final = await run_script(tmp_path, [[unknown, plan], [unknown, message("ok")]])
    assert final == "ok"
    assert len(requests) == 2
    sent = requests[1]["input"]
    assert sent[-3:] == [unknown, plan, answer_to(requests[1], "p1")]
    assert not [i for i in sent if i["type"].endswith("_output") and i["call_id"] == "g1"]


@pytest.mark.parametrize("paired_by", ["call_id", "id"])
def test_a_resumed_call_left_unanswered_gets_an_answer(paired_by: str) -> None:
    """A session file that ends after a local_shell_call (the kernel died while it ran)
    resumes with the call answered, or the model server would refuse the history."""
    call = local_shell_call(["echo", "hi"], "ls1")
    if paired_by == "id":
        del call["call_id"]
    kept = answer_unfinished_calls([server_item(call)])
    wire = [item.wire() for item in kept]
    assert wire[0] == call
    assert wire[1]["type"] == "function_call_output"
    assert wire[1]["call_id"] == call.get("call_id", call["id"])


@pytest.mark.parametrize("shell_type", ["unified_exec", "shell_command", "shell"])
def test_it_goes_where_the_shell_tool_goes(shell_type: Any) -> None:
    """Accepted beside whichever shell tool is offered, never offered itself, and gone
    when a policy takes the shell tool away (it is no way around that)."""
    config = ToolsConfig(shell_type=shell_type)
    offered = build_registry(config)
    assert "local_shell" in offered
    assert "local_shell" not in [s.get("name") for s in offered.wire_specs()]
    shell_name = next(iter(offered))
    refused = build_registry(config, offers=lambda name: name != shell_name)
    assert "local_shell" not in refused
