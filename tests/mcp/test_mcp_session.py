"""MCP servers in a whole session: a scripted model on 127.0.0.1 calls the tools of real
servers over stdio (the SDK-written demo server and mcp-server-time); approvals, server
faults and changes of the server list during the session."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_magics import ReviewDecision, Session
from agent_magics.events import (
    ApprovalDecided,
    ApprovalRequested,
    Event,
    McpServerFailed,
    McpServerReady,
    ToolCallProposed,
    TurnFinished,
)
from agent_magics.mcp.config import McpServerConfig
from agent_magics.testing import ScriptedResponsesServer, Turn, function_call, message
from tests.helpers.paths import MCP_SERVERS
from tests.helpers.sandbox import RecordingApprover
from tests.helpers.sessions import session_for

pytestmark = pytest.mark.slow  # real sandboxes, servers or CLI runs per case

SILENT = MCP_SERVERS / "silent_server.py"
DEMO = MCP_SERVERS / "demo_server.py"
REJECTED = 'err: "user rejected MCP tool call"'


def demo(*args: str, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(DEMO), *args], **extra}


class Harness:
    """A session on a scripted model, with its events and approvals recorded."""

    def __init__(self, tmp_path: Path, servers: dict[str, Any], **extra: Any) -> None:
        self.tmp_path = tmp_path
        self.servers = servers
        self.extra = extra
        self.events: list[Event] = []
        self.approver = RecordingApprover(ReviewDecision.APPROVED)
        self.model: ScriptedResponsesServer | None = None
        self._session: Session | None = None

    def session(self, script: list[Turn]) -> Session:
        self.model = ScriptedResponsesServer(script).start()
        settings: dict[str, Any] = {
            "approval_policy": "on-request",
            "sandbox_mode": "danger-full-access",
            "log_dir": self.tmp_path / "logs",
            "mcp_servers": self.servers,
        } | self.extra
        self._session = session_for(
            self.tmp_path, self.model.base_url, approver=self.approver, **settings
        )
        self._session.subscribe(self.events.append)
        return self._session

    def outputs(self, index: int) -> dict[str, Any]:
        assert self.model is not None
        return self.model.outputs(index)

    def tool_names(self, index: int) -> list[str]:
        assert self.model is not None
        return [t.get("name") or t["type"] for t in self.model.requests[index]["tools"]]

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    async def close(self) -> None:
        if self._session is not None:
            await self._session.aclose()
        if self.model is not None:
            self.model.stop()


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    h = Harness(tmp_path, {"demo": demo()})
    yield h
    await h.close()


async def test_servers_start_before_the_first_request(harness: Harness) -> None:
    session = harness.session([[message("hi")]])
    assert harness.of(McpServerReady) == []  # nothing starts before a turn
    await session.run_turn("hello")
    (ready,) = harness.of(McpServerReady)
    assert (ready.server, ready.transport) == ("demo", "stdio")
    assert "lookup" in ready.tools
    names = harness.tool_names(0)
    assert names[:3] == ["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"]
    offered = sorted(f"mcp__demo__{t}" for t in ready.tools)
    assert names[-len(offered) :] == offered
    [status] = session.mcp_statuses()
    assert (status.name, status.state, status.log_path) == (
        "demo",
        "ready",
        harness.tmp_path / "logs" / "mcp-demo.log",
    )


async def test_a_denied_call_tells_the_model(harness: Harness) -> None:
    harness.approver.decision = ReviewDecision.DENIED
    script: list[Turn] = [
        [
            function_call("mcp__demo__echo", {"text": "hi"}, "c1"),
            function_call("mcp__demo__lookup", {"word": "mcp"}, "c2"),
        ],
        [message("ok")],
    ]
    session = harness.session(script)
    result = await session.run_turn("go")
    assert result.final_text == "ok"
    assert harness.outputs(1) == {"c1": REJECTED, "c2": '{"result":"Model Context Protocol"}'}
    (asked,) = harness.approver.asked
    assert (asked.kind, asked.server, asked.mcp_tool, asked.arguments) == (
        "mcp",
        "demo",
        "echo",
        '{"text": "hi"}',
    )
    proposed = harness.of(ToolCallProposed)
    assert [(p.tool_name, p.server, p.mcp_tool) for p in proposed] == [
        ("mcp__demo__echo", "demo", "echo"),
        ("mcp__demo__lookup", "demo", "lookup"),
    ]
    assert [r.request.call_id for r in harness.of(ApprovalRequested)] == ["c1"]


async def test_approved_for_the_session_is_not_asked_again(harness: Harness) -> None:
    harness.approver.decision = ReviewDecision.APPROVED_FOR_SESSION
    script: list[Turn] = [
        [function_call("mcp__demo__echo", {"text": "one"}, "c1")],
        [function_call("mcp__demo__echo", {"text": "two"}, "c2")],
        [function_call("mcp__demo__add", {"a": 1, "b": 1}, "c3")],
        [message("ok")],
    ]
    session = harness.session(script)
    await session.run_turn("go")
    assert harness.outputs(1)["c1"] == '[{"type":"text","text":"one"}]'
    assert harness.outputs(2)["c2"] == '[{"type":"text","text":"two"}]'
    assert harness.outputs(3)["c3"] == '{"result":2}'
    # echo asked once, then remembered; add is another tool and asks for itself
    assert [a.mcp_tool for a in harness.approver.asked] == ["echo", "add"]
    decided = [(d.call_id, d.cached) for d in harness.of(ApprovalDecided)]
    assert decided == [("c1", False), ("c2", True), ("c3", False)]


async def test_servers_that_never_start_do_not_stop_the_turn(tmp_path: Path) -> None:
    servers = {
        "gone": {"command": "no-such-mcp-server-command"},
        "quits": demo("--exit-at-start", "3"),
        "hangs": {"command": sys.executable, "args": [str(SILENT)], "startup_timeout_sec": 1},
        "demo": demo(),
    }
    h = Harness(tmp_path, servers)
    script: list[Turn] = [
        [
            function_call("mcp__quits__echo", {"text": "x"}, "c1"),
            function_call("list_mcp_resources", {"server": "quits"}, "c2"),
            function_call("list_mcp_resources", "", "c3"),
        ],
        [message("carried on")],
    ]
    try:
        session = h.session(script)
        result = await session.run_turn("go")
        states = {s.name: s.state for s in session.mcp_statuses()}
    finally:
        await h.close()
    assert states == {"gone": "failed", "quits": "failed", "hangs": "failed", "demo": "ready"}
    assert result.final_text == "carried on"
    failed = {e.server: e for e in h.of(McpServerFailed)}
    assert set(failed) == {"gone", "quits", "hangs"}
    assert "no-such-mcp-server-command" in failed["gone"].reason
    assert "3" in failed["quits"].reason
    assert "timed out after 1s" in failed["hangs"].reason
    assert failed["quits"].log_path == str(tmp_path / "logs" / "mcp-quits.log")
    assert (
        "fatal: the demo server was told to exit"
        in (tmp_path / "logs" / "mcp-quits.log").read_text()
    )
    names = h.tool_names(0)
    assert not any(n.startswith(("mcp__gone", "mcp__quits", "mcp__hangs")) for n in names)
    assert "mcp__demo__echo" in names
    outputs = h.outputs(1)
    assert outputs["c1"] == "unsupported call: mcp__quits__echo"
    assert outputs["c2"].startswith("resources/list failed: MCP server 'quits' is not available: ")
    assert [r["server"] for r in json.loads(outputs["c3"])["resources"]] == ["demo"]
    assert isinstance(h.events[-1], TurnFinished)


async def test_a_server_that_dies_during_a_call(harness: Harness) -> None:
    harness.approver.decision = ReviewDecision.APPROVED_FOR_SESSION
    script: list[Turn] = [
        [function_call("mcp__demo__crash", {"code": 9}, "c1")],
        [function_call("mcp__demo__echo", {"text": "still there?"}, "c2")],
        [message("the server is gone")],
    ]
    session = harness.session(script)
    result = await session.run_turn("go")
    assert result.final_text == "the server is gone"
    crashed = harness.outputs(1)["c1"]
    assert crashed.startswith("err: \"tool call error: MCP server 'demo' failed during tools/call")
    after = harness.outputs(2)["c2"]
    assert after.startswith("err: \"tool call error: MCP server 'demo' is not available")
    (failed,) = harness.of(McpServerFailed)
    assert failed.server == "demo" and "9" in failed.reason
    assert "crashing on purpose" in (harness.tmp_path / "logs" / "mcp-demo.log").read_text()
    # the dead server's tools stay offered and keep answering the error
    assert "mcp__demo__echo" in harness.tool_names(2)


async def test_the_time_server_from_pypi(tmp_path: Path) -> None:
    servers = {
        "time": {
            "command": sys.executable,
            "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        }
    }
    h = Harness(tmp_path, servers, approval_policy="untrusted")
    script: list[Turn] = [
        [
            function_call(
                "mcp__time__convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                "c1",
            )
        ],
        [message("ok")],
    ]
    try:
        await h.session(script).run_turn("convert")
    finally:
        await h.close()
    answer = json.loads(h.outputs(1)["c1"])
    assert answer["source"]["timezone"] == "UTC"
    assert answer["target"]["timezone"] == "Asia/Tokyo"
    assert answer["time_difference"] == "+9.0h"
    assert h.approver.asked == []  # the time tools say they only read


async def test_adding_removing_and_restarting_servers(tmp_path: Path) -> None:
    h = Harness(tmp_path, {})
    try:
        session = h.session([[message("one")], [message("two")], [message("three")]])
        assert "list_mcp_resources" not in session.registry
        assert session.mcp_statuses() == []
        extra = {"extra": McpServerConfig.model_validate(demo())}
        assert session.reconfigure(session.config.model_copy(update={"mcp_servers": extra}))
        await session.sync_mcp_servers()
        [status] = session.mcp_statuses()
        assert status.state == "ready" and "mcp__extra__echo" in session.registry
        assert "list_mcp_resources" in session.registry
        await session.run_turn("first")
        assert "mcp__extra__echo" in h.tool_names(0)
        session.reset()  # a new conversation keeps the servers
        await session.run_turn("second")
        assert "mcp__extra__echo" in h.tool_names(1)
        assert session.mcp is not None
        restarted = await session.mcp.restart("extra")
        assert restarted.state == "ready"
        assert session.reconfigure(session.config.model_copy(update={"mcp_servers": {}}))
        await session.sync_mcp_servers()
        assert session.mcp_statuses() == [] and "mcp__extra__echo" not in session.registry
        assert await session.mcp.remove("extra") is False
        await session.run_turn("third")
        assert not any(n.startswith("mcp__") for n in h.tool_names(2))
        assert "list_mcp_resources" not in h.tool_names(2)
    finally:
        await h.close()


async def test_sync_follows_the_settings(harness: Harness) -> None:
    session = harness.session([[message("ok")]])
    await session.sync_mcp_servers()  # starts the configured server
    assert [(s.name, s.state) for s in session.mcp_statuses()] == [("demo", "ready")]
    servers = {"other": McpServerConfig.model_validate(demo())}
    session.config = session.config.model_copy(update={"mcp_servers": servers})
    await session.sync_mcp_servers()
    assert [(s.name, s.state) for s in session.mcp_statuses()] == [("other", "ready")]
    assert "mcp__other__echo" in session.registry and "mcp__demo__echo" not in session.registry
    await session.run_turn("go")
    assert "mcp__other__add" in harness.tool_names(0)
