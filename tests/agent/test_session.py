"""The session loop against a real loopback Responses server."""

from __future__ import annotations

import asyncio
import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from agent_magics import ReviewDecision
from agent_magics.errors import ConnectionFailed
from agent_magics.events import (
    ApprovalRequested,
    Event,
    PlanUpdated,
    RetryScheduled,
    TextDelta,
    ToolCallFinished,
    TurnFinished,
)
from agent_magics.protocol.approval import ApprovalRequest
from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from tests.helpers.fault_server import Answer, FaultServer, ok
from tests.helpers.sessions import session_for
from tests.helpers.tools import alive

KEY = "sk-session-secret-987654321"
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"


make_session = partial(session_for, api_key=KEY)


def pairs_are_whole(body: dict[str, Any]) -> bool:
    items = body["input"]
    calls = {i["call_id"] for i in items if i["type"] in ("function_call", "custom_tool_call")}
    outs = [i["call_id"] for i in items if i["type"].endswith("_output")]
    return calls == set(outs) and len(outs) == len(set(outs))


async def test_turn_runs_tools_until_a_plain_answer(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Always be kind.")
    script = [
        [
            function_call("update_plan", {"plan": [{"step": "s", "status": "pending"}]}, "c1"),
            custom_tool_call("apply_patch", PATCH, "c2"),
        ],
        [message("All done, friend.")],
    ]
    events: list[Event] = []
    with ScriptedResponsesServer(script) as server:
        session = make_session(
            tmp_path, server.base_url, approval_policy="never", sandbox_mode="workspace-write"
        )
        session.subscribe(events.append)
        result = await session.run_turn("make hello.txt")
        await session.aclose()
    assert result.final_text == "All done, friend."
    assert (tmp_path / "hello.txt").read_text() == "hi\n"
    first, second = server.requests
    texts = [c["text"] for i in first["input"] for c in i["content"]]
    assert texts[0].startswith("# AGENTS.md instructions for") and "Always be kind." in texts[0]
    assert texts[1].startswith("<environment_context>") and f"<cwd>{tmp_path}</cwd>" in texts[1]
    assert texts[2] == "make hello.txt"
    assert [t.get("name") or t["type"] for t in first["tools"]] == [
        "update_plan",
        "request_user_input",
        "apply_patch",
        "view_image",
        "multi_agent_v1",
        "get_goal",
        "create_goal",
        "update_goal",
        "web_search",  # the hosted tool has a type and no name
    ]
    assert server.outputs(1)["c1"] == "Plan updated"
    assert server.outputs(1)["c2"].startswith("Exit code: 0\nWall time: ")
    assert pairs_are_whole(second)
    assert any(isinstance(e, PlanUpdated) for e in events)
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "All done, friend."
    finished = [e for e in events if isinstance(e, TurnFinished)]
    assert finished and finished[0].usage.total_tokens == 30
    assert session.usage.total_tokens == 30


async def test_next_turn_continues_the_conversation(tmp_path: Path) -> None:
    with ScriptedResponsesServer([[message("one")], [message("two")]]) as server:
        session = make_session(tmp_path, server.base_url)
        await session.run_turn("first")
        await session.run_turn("second")
        await session.aclose()
    last = server.requests[-1]["input"]
    assert [i.get("role") for i in last][-3:] == ["user", "assistant", "user"]
    assert sum("environment_context" in json.dumps(i) for i in last) == 1


async def test_bad_calls_are_answered_and_the_turn_goes_on(tmp_path: Path) -> None:
    script = [
        [
            function_call("update_plan", "{not json", "c1"),
            function_call("nope", {}, "c2"),
            custom_tool_call("frob", "x", "c3"),
        ]
    ]
    with ScriptedResponsesServer(script) as server:
        session = make_session(tmp_path, server.base_url)
        result = await session.run_turn("go")
        await session.aclose()
    outputs = server.outputs(1)
    assert outputs["c1"].startswith("failed to parse function arguments: key must be a string")
    assert outputs["c2"] == "unsupported call: nope"
    assert outputs["c3"] == "unsupported custom tool call: frob"
    assert result.final_text == "done"


async def test_denied_patch_writes_nothing(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> ReviewDecision:
        asked.append(request)
        return ReviewDecision.DENIED

    script = [[custom_tool_call("apply_patch", PATCH, "c1")]]
    events: list[Event] = []
    with ScriptedResponsesServer(script) as server:
        session = make_session(tmp_path, server.base_url, approval_policy="untrusted")
        session.approver = deny
        session.subscribe(events.append)
        await session.run_turn("go")
        await session.aclose()
    assert server.outputs(1)["c1"] == "patch rejected by user"
    assert not (tmp_path / "hello.txt").exists()
    assert asked[0].kind == "patch" and asked[0].keys == [str(tmp_path / "hello.txt")]
    assert any(isinstance(e, ApprovalRequested) for e in events)


async def test_dropped_stream_is_retried_without_duplicating_history(tmp_path: Path) -> None:
    cut = Answer(items=[function_call("update_plan", {"plan": []}, "c1")], cut_after_bytes=400)
    server = FaultServer(
        [cut, Answer(items=[function_call("update_plan", {"plan": []}, "c1")]), ok("finished")]
    )
    events: list[Event] = []
    try:
        session = make_session(tmp_path, server.base_url)
        session.subscribe(events.append)
        result = await session.run_turn("go")
        await session.aclose()
    finally:
        server.close()
    assert result.final_text == "finished"
    assert server.requests[0] == server.requests[1]
    last = server.requests[2]["input"]
    assert sum(1 for i in last if i["type"] == "function_call") == 1
    assert pairs_are_whole(server.requests[2])
    assert any(isinstance(e, RetryScheduled) for e in events)


async def test_stream_failures_run_out_with_one_sentence(tmp_path: Path) -> None:
    cut = Answer(items=[message("x")], cut_after_bytes=100)
    server = FaultServer([cut, cut, cut])
    try:
        session = make_session(tmp_path, server.base_url, stream_max_retries=2)
        with pytest.raises(ConnectionFailed, match="after 2 retries"):
            await session.run_turn("go")
        await session.aclose()
    finally:
        server.close()


async def test_api_key_never_reaches_requests_bodies_or_events(tmp_path: Path) -> None:
    events: list[Event] = []
    with ScriptedResponsesServer([[function_call("update_plan", {"plan": []})]]) as server:
        session = make_session(tmp_path, server.base_url)
        session.subscribe(events.append)
        await session.run_turn("go")
        await session.aclose()
        assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    assert KEY not in json.dumps(server.requests)
    assert KEY not in repr(events)
    assert KEY not in repr(session.config) and KEY not in session.config.model_dump_json()


async def test_tool_events_pair_up(tmp_path: Path) -> None:
    events: list[Event] = []
    with ScriptedResponsesServer([[function_call("update_plan", {"plan": []}, "c9")]]) as server:
        session = make_session(tmp_path, server.base_url)
        session.subscribe(events.append)
        await session.run_turn("go")
        await session.aclose()
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(e.call_id, e.output, e.success) for e in finished] == [("c9", "Plan updated", True)]


async def test_tool_call_arguments_are_never_rewritten(tmp_path: Path) -> None:
    # A path that happens to share a long run with the key must reach the tool as sent.
    step = f"check /data/{KEY[3:20]}/x"
    args = {"plan": [{"step": step, "status": "pending"}]}
    with ScriptedResponsesServer([[function_call("update_plan", args, "c1")]]) as server:
        session = make_session(tmp_path, server.base_url)
        seen: list[Event] = []
        session.subscribe(seen.append)
        await session.run_turn("go")
        await session.aclose()
    plans = [e for e in seen if isinstance(e, PlanUpdated)]
    assert plans[0].plan[0].step == step


async def test_reconfigure_takes_per_turn_settings_in_place(tmp_path: Path) -> None:
    """New per-turn settings apply to the same conversation; a new model server, key or
    tool set is refused (the caller moves the conversation to a new session)."""
    with ScriptedResponsesServer([[message("one")], [message("two")]]) as server:
        session = make_session(tmp_path, server.base_url)
        await session.run_turn("first")
        newer = session.config.model_copy(update={"model": "m2", "approval_policy": "never"})
        assert session.reconfigure(newer) and session.config is newer
        await session.run_turn("second")
        await session.aclose()
    second = server.requests[1]
    assert second["model"] == "m2"
    assert "first" in json.dumps(second["input"])  # the conversation went on
    for change in (
        {"base_url": "http://127.0.0.1:9/v1"},
        {"api_key": SecretStr("sk-another-key-123456")},
        {"shell_type": "unified_exec"},
        {"request_max_retries": 0},
    ):
        assert not session.reconfigure(newer.model_copy(update=change)), change
        assert session.config is newer


async def test_kill_processes_kills_what_the_tools_left_running(tmp_path: Path) -> None:
    """A command the model left running in the background dies at once (SIGKILL) when
    the session's processes are killed, as the stop button does; the session stays
    usable."""
    cmd = "echo $$ > pid; exec sleep 600"
    script = [
        [function_call("exec_command", {"cmd": cmd, "yield_time_ms": 250}, "c1")],
        [message("left running")],
        [message("still here")],
    ]
    with ScriptedResponsesServer(script) as server:
        session = make_session(
            tmp_path,
            server.base_url,
            shell_type="unified_exec",
            approval_policy="never",
            sandbox_mode="danger-full-access",
        )
        try:
            await session.run_turn("start it")
            pid = int((tmp_path / "pid").read_text())
            assert alive(pid)
            session.kill_processes()
            async with asyncio.timeout(20):
                while alive(pid):
                    await asyncio.sleep(0.02)
            assert (await session.run_turn("again")).final_text == "still here"
        finally:
            await session.aclose()
