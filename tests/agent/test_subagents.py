"""Sub-agents end to end: real sessions (and ``agent-magics exec``) against a scripted
model on 127.0.0.1 with one script per conversation, real commands under the sandbox."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent_magics.events import AgentEvent, AgentSpawned, AgentStatusChanged, Event
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision
from agent_magics.testing import ConversationsServer, HttpFailure, function_call, message
from agent_magics.tools.sandbox.platform import MECHANISM_ENV
from tests.helpers.exec_cli import answer_each_question
from tests.helpers.sandbox import LINUX_MECHANISMS, require_mechanism, sleepers
from tests.helpers.sessions import KEY, session_for
from tests.helpers.subagent_cases import load, shape

PARENT, CHILD = "PARENT: delegate", "CHILD: do the work"
WAIT_S = 120  # a bound against a hang only


def agent_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return function_call(name, arguments, call_id) | {"namespace": "multi_agent_v1"}


def said(body: dict[str, Any]) -> dict[str, str]:
    """The tool outputs one request carries, by call id."""
    return {i["call_id"]: i["output"] for i in body["input"] if i["type"] == "function_call_output"}


def spawned(body: dict[str, Any], call_id: str = "s1") -> str:
    agent_id: str = json.loads(said(body)[call_id])["agent_id"]
    return agent_id


def wait_for(call_id: str, **extra: Any) -> Any:
    """A turn waiting on the agent spawn call ``s1`` started."""
    return lambda body: [agent_call("wait_agent", {"targets": [spawned(body)], **extra}, call_id)]


def parent_outputs(server: ConversationsServer) -> dict[str, str]:
    return {
        i["call_id"]: i["output"]
        for body in server.by_conversation[PARENT]
        for i in body["input"]
        if i.get("type") == "function_call_output"
    }


async def test_a_childs_model_failure_is_answered_to_the_parent(tmp_path: Path) -> None:
    failure = json.dumps({"error": {"message": "scripted bad request", "type": "x"}})
    scripts = {
        PARENT: [[agent_call("spawn_agent", {"message": CHILD}, "s1")], wait_for("w1")],
        CHILD: [HttpFailure(400, failure)],
    }
    with ConversationsServer(scripts) as server:
        session = session_for(tmp_path, server.base_url, request_max_retries=0)
        result = await session.run_turn(PARENT)
        await session.aclose()
    assert result.final_text == "done"  # the parent's turn went on to its end
    waited = json.loads(parent_outputs(server)["w1"])
    [status] = waited["status"].values()
    assert list(status) == ["errored"] and "scripted bad request" in status["errored"]
    assert waited["timed_out"] is False


async def test_a_childs_questions_reach_the_parents_approver_marked_with_the_child(
    tmp_path: Path,
) -> None:
    """The parent's approver gets the child's question with its own call id, the child's
    path in ``agents`` (set by the forwarding session) and a ticket of its own."""
    asked: list[tuple[tuple[str, ...], str]] = []
    tickets: list[str] = []

    async def approver(request: ApprovalRequest) -> ReviewDecision:
        asked.append((request.agents, request.call_id))
        tickets.append(request.ticket)
        return ReviewDecision.APPROVED

    command = {"cmd": "echo asked > asked.txt", "sandbox_permissions": "require_escalated"}
    command["justification"] = "write a file"
    scripts = {
        PARENT: [[agent_call("spawn_agent", {"message": CHILD}, "s1")], wait_for("w1")],
        CHILD: [[function_call("exec_command", command, "c1")], [message("child wrote it")]],
    }
    events: list[Event] = []
    with ConversationsServer(scripts) as server:
        session = session_for(
            tmp_path, server.base_url, approver=approver, shell_type="unified_exec",
            approval_policy="on-request", allow_login_shell=False,
        )  # fmt: skip
        session.subscribe(events.append)
        await session.run_turn(PARENT)
        await session.aclose()
    [spawn] = [e for e in events if isinstance(e, AgentSpawned)]
    assert asked == [((spawn.agent_id,), "c1")]
    assert len(tickets[0]) >= 32 and spawn.agent_id not in tickets[0]
    second = server.by_conversation[PARENT][1]["input"]
    sent_back = [i for i in second if i["type"] == "function_call"]
    assert sent_back[0]["namespace"] == "multi_agent_v1"  # kept in history as it came
    assert (tmp_path / "asked.txt").read_text() == "asked\n"
    waited = json.loads(parent_outputs(server)["w1"])
    assert waited["status"] == {spawn.agent_id: {"completed": "child wrote it"}}
    wrapped = [e.event for e in events if isinstance(e, AgentEvent)]
    assert any(type(e).__name__ == "ApprovalRequested" for e in wrapped)
    statuses = [e.status for e in events if isinstance(e, AgentStatusChanged)]
    assert statuses == ["pending_init", "running", "completed", "shutdown"]  # closed at the end


async def test_a_turn_ends_with_the_children_it_started(tmp_path: Path) -> None:
    """A parent that answers without waiting: its turn still ends only once the child is
    done, so the child's question is asked while the turn (its cell, its cards) is there
    to answer it, and the next turn starts with the child's result."""
    asked: list[tuple[tuple[str, ...], str]] = []
    ended: list[bool] = []

    async def approver(request: ApprovalRequest) -> ReviewDecision:
        asked.append((request.agents, request.call_id))
        await asyncio.sleep(0.5)  # a person taking their time
        return ReviewDecision.APPROVED

    command = {"cmd": "echo late > late.txt", "sandbox_permissions": "require_escalated"}
    command["justification"] = "write a file"
    scripts = {
        PARENT: [
            [agent_call("spawn_agent", {"message": CHILD}, "s1")],
            [message("started a helper")],
            [message("the helper wrote late.txt")],
        ],
        CHILD: [[function_call("exec_command", command, "c1")], [message("child wrote it")]],
    }
    events: list[Event] = []
    with ConversationsServer(scripts) as server:
        session = session_for(
            tmp_path, server.base_url, approver=approver, shell_type="unified_exec",
            approval_policy="on-request", allow_login_shell=False,
        )  # fmt: skip
        session.subscribe(events.append)
        first = await session.run_turn(PARENT)
        ended.append((tmp_path / "late.txt").exists())
        statuses = [e.status for e in events if isinstance(e, AgentStatusChanged)]
        await session.run_turn("and now?")
        await session.aclose()
    assert first.final_text == "started a helper"
    [spawn] = [e for e in events if isinstance(e, AgentSpawned)]
    assert asked == [((spawn.agent_id,), "c1")]
    assert ended == [True]  # the child's approved command ran before the turn ended
    assert statuses == ["pending_init", "running", "completed"]
    later = json.dumps(server.by_conversation[PARENT][-1]["input"])
    assert "<subagent_notification>" in later and "child wrote it" in later


async def test_a_child_cannot_spawn_at_codexs_depth_limit(tmp_path: Path) -> None:
    case, golden = load("depth_child_spawns")
    scripts = {
        PARENT: [[agent_call("spawn_agent", {"message": CHILD}, "s1")], wait_for("w1")],
        CHILD: [[agent_call("spawn_agent", {"message": "GRANDCHILD"}, "d1")], [message("gave up")]],
    }
    with ConversationsServer(scripts) as server:
        session = session_for(tmp_path, server.base_url)
        await session.run_turn(PARENT)
        await session.aclose()
    [*_, last] = server.by_conversation[CHILD]
    child_outputs = said(last)
    child_said = [
        i["output"]
        for r in golden["conversations"]["CHILD D: try to spawn"]
        for i in r.get("new_input", [])
        if i.get("type") == "function_call_output"
    ]
    assert child_outputs["d1"] == child_said[0] == "unsupported call: multi_agent_v1spawn_agent"
    first = server.by_conversation[CHILD][0]
    assert "multi_agent_v1" not in [t.get("name") for t in first["tools"]]
    assert "GRANDCHILD" not in server.by_conversation  # nobody was started
    del case


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
async def test_stopping_the_parent_ends_its_children_and_their_processes(
    tmp_path: Path, mechanism: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_mechanism(mechanism)
    monkeypatch.setenv(MECHANISM_ENV, mechanism)
    marker = str(uuid.uuid4().int % 10**6 + 700000)
    sleep = {"cmd": f"sleep {marker}", "yield_time_ms": 250}
    again = "PARENT: carry on"

    def write_to_the_stopped_child(body: dict[str, Any]) -> list[dict[str, Any]]:
        [spawn] = [e for e in events if isinstance(e, AgentSpawned)]
        return [agent_call("send_input", {"target": spawn.agent_id, "message": "go"}, "i1")]

    scripts = {
        PARENT: [
            [agent_call("spawn_agent", {"message": CHILD}, "s1")],
            wait_for("w1", timeout_ms=600000),
        ],
        CHILD: [[function_call("exec_command", sleep, "c1")], wait_for_ever()],
        again: [write_to_the_stopped_child],
    }
    events: list[Event] = []
    with ConversationsServer(scripts) as server:
        session = session_for(
            tmp_path, server.base_url, shell_type="unified_exec", approval_policy="never",
            allow_login_shell=False,
        )  # fmt: skip
        session.subscribe(events.append)
        turn = asyncio.create_task(session.run_turn(PARENT))
        for _ in range(WAIT_S * 10):
            if sleepers(marker) and len(server.by_conversation[PARENT]) >= 2:
                break
            await asyncio.sleep(0.1)
        assert sleepers(marker), "the child's command never started"
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        for _ in range(WAIT_S * 10):
            if not sleepers(marker):
                break
            await asyncio.sleep(0.1)
        assert not sleepers(marker)
        await session.run_turn(again)  # a stopped child takes no more work
        await session.aclose()
    [*_, last] = server.by_conversation[again]
    [spawn] = [e for e in events if isinstance(e, AgentSpawned)]
    assert said(last)["i1"] == f"agent with id {spawn.agent_id} is closed"
    statuses = [e.status for e in events if isinstance(e, AgentStatusChanged)]
    assert statuses[-1] == "shutdown" and "completed" not in statuses


def wait_for_ever() -> Any:
    """A child's second request: it should never be made (the child is stopped first)."""
    return lambda body: [message("the child was not stopped")]


def test_exec_runs_children_and_shows_their_lines(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    run = {"cmd": "echo from-the-child > child.txt && echo wrote"}

    def close(body: dict[str, Any]) -> list[dict[str, Any]]:  # the id as the model may write it
        return [agent_call("close_agent", {"target": spawned(body).upper()}, "x1")]

    scripts = {
        PARENT: [[agent_call("spawn_agent", {"message": CHILD}, "s1")], wait_for("w1"), close],
        CHILD: [[function_call("exec_command", run, "c1")], [message("child finished")]],
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(tmp_path), "OPENAI_API_KEY": KEY}
    with ConversationsServer(scripts, final_text="parent finished") as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-a", "never", "-C", str(ws)]
        argv += ["-c", "sessions_dir=false", "-c", "allow_login_shell=false", PARENT]
        done = subprocess.run(
            argv, env=env, cwd=ws, capture_output=True, text=True, timeout=WAIT_S,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (ws / "child.txt").read_text() == "from-the-child\n"
    waited = json.loads(parent_outputs(server)["w1"])
    [status] = waited["status"].values()
    assert status == {"completed": "child finished"}
    nickname = json.loads(parent_outputs(server)["s1"])["nickname"]
    child_lines = [line for line in done.stderr.splitlines() if line.startswith(f"[{nickname}] ")]
    assert any("echo from-the-child" in line for line in child_lines), done.stderr
    assert f"[{nickname}] started: {CHILD}" in done.stderr  # which helper took which task
    assert f"[{nickname}] completed: child finished" in done.stderr
    assert f"tool wait_agent [{nickname}]\n" in done.stderr  # by name, not by raw id
    assert f"tool close_agent [{nickname}]\n" in done.stderr  # an id in upper case too
    assert done.stdout.strip() == "parent finished"
    assert KEY not in done.stderr + done.stdout
    assert shape(parent_outputs(server)["s1"]) == '{"agent_id":"<id>","nickname":"<Name>"}'


async def test_send_input_with_interrupt_redirects_a_busy_child(tmp_path: Path) -> None:
    orders = "CHILD: new orders"

    def send_once_the_child_asks(body: dict[str, Any]) -> list[dict[str, Any]]:
        for _ in range(WAIT_S * 10):  # the child's first request is being answered
            if server.by_conversation[CHILD]:
                break
            time.sleep(0.1)
        target = spawned(body)
        message_ = {"target": target, "message": orders, "interrupt": True}
        return [agent_call("send_input", message_, "i1")]

    def slow(body: dict[str, Any]) -> list[dict[str, Any]]:
        time.sleep(5)  # long enough for the interrupt to come first
        return [message("the old task, finished")]

    scripts = {
        PARENT: [
            [agent_call("spawn_agent", {"message": CHILD}, "s1")],
            send_once_the_child_asks,
            wait_for("w1"),
        ],
        CHILD: [slow],
        orders: [[message("new orders done")]],
    }
    events: list[Event] = []
    server = ConversationsServer(scripts)
    with server:
        session = session_for(tmp_path, server.base_url)
        session.subscribe(events.append)
        await session.run_turn(PARENT)
        await session.aclose()
    outputs = parent_outputs(server)
    assert json.loads(outputs["i1"]).keys() == {"submission_id"}
    [status] = json.loads(outputs["w1"])["status"].values()
    assert status == {"completed": "new orders done"}
    changes = [(e.status, e.final_text) for e in events if isinstance(e, AgentStatusChanged)]
    assert ("errored", "Interrupted") in changes


def test_exec_names_the_helper_whose_question_it_asks(tmp_path: Path) -> None:
    """At a terminal, a helper's approval question says which helper asks: the question
    itself ("Run this command?") is the same for every agent."""
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = {"cmd": "echo hi > ../outside.txt", "sandbox_permissions": "require_escalated"}
    scripts = {
        PARENT: [[agent_call("spawn_agent", {"message": CHILD}, "s1")], wait_for("w1")],
        CHILD: [[function_call("exec_command", outside, "c1")], [message("child finished")]],
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(tmp_path), "OPENAI_API_KEY": KEY}
    with ConversationsServer(scripts, final_text="parent finished") as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-a", "on-request", "-C", str(ws)]
        argv += ["-c", "sessions_dir=false", "-c", "allow_login_shell=false", PARENT]
        code, err = answer_each_question(argv, env, ws, ["n"])
    assert code == 0, err
    nickname = json.loads(parent_outputs(server)["s1"])["nickname"]
    assert f"[{nickname}] asks:\n" in err and "Run this command?" in err
    assert err.index(f"[{nickname}] asks:") < err.index("Run this command?")
    assert not (tmp_path / "outside.txt").exists()


async def test_a_wait_sees_a_child_that_ends_before_its_waiter_first_runs(tmp_path: Path) -> None:
    """The child ends in the window between the waiter being made and its first step
    (a callback queued before the wait runs there): the wait must return the child's
    answer at once, not sleep to its deadline on a signal the child no longer sets."""
    from agent_magics.agent.multi_agent import _wait_any
    from agent_magics.agent.subagents import Child

    session = session_for(tmp_path, "http://127.0.0.1:9/v1")
    child = Child(session.agents, "agent-x", "Ada", "a task")
    child.status = "running"
    open_ = session.agents.control.open
    open_[child.agent_id] = child
    asyncio.get_running_loop().call_soon(child._set, "completed", "all done")
    an_hour = 3600.0  # the longest wait a model may ask for
    async with asyncio.timeout(WAIT_S):  # a bound against a hang only
        status = await _wait_any([child], an_hour, [child.agent_id], open_)
    assert status == {"agent-x": {"completed": "all done"}}
    await session.aclose()
