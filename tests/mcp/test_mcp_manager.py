"""The MCP manager against real servers: the demo server (written with the SDK's
``MCPServer``) over stdio and over streamable HTTP on 127.0.0.1, and ``mcp-server-time``
from PyPI over stdio. Faults are real too: a server that exits at start, one that
never answers, a missing command, a crash in the middle of a call, an HTTP server
killed while a call waits."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
import pytest_asyncio
from mcp.types import CallToolResult, TextContent

from agent_magics.events import Event, McpServerFailed, McpServerReady
from agent_magics.mcp import _reasons
from agent_magics.mcp.config import DEFAULT_ENV_VARS, McpServerConfig, safe_url
from agent_magics.mcp.manager import McpError, McpManager
from agent_magics.mcp.results import call_result_output
from agent_magics.models.secret import Scrubber
from tests.helpers.mcp_http import HttpServer, start_http_server, stop_http_server
from tests.helpers.paths import MCP_SERVERS
from tests.helpers.tools import alive

pytestmark = pytest.mark.slow  # real sandboxes, servers or CLI runs per case

DEMO = MCP_SERVERS / "demo_server.py"
SILENT = DEMO.with_name("silent_server.py")
DEMO_TOOLS = (
    "add",
    "echo",
    "pixel",
    "fail",
    "crash",
    "exit_soon",
    "slow",
    "env_names",
    "cwd",
    "header",
    "lookup",
)
SECRET = "AM_TEST_SECRET_TOKEN"
PASSED = "AM_TEST_PASSED_THROUGH"
GUARD_S = 60  # no test waits this long unless something hangs

module_loop = pytest.mark.asyncio(loop_scope="module")


def demo(*extra: str, **fields: Any) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=(str(DEMO), *extra), **fields)


def time_server(**fields: Any) -> McpServerConfig:
    args = ("-m", "mcp_server_time", "--local-timezone", "UTC")
    return McpServerConfig(command=sys.executable, args=args, **fields)


@dataclass
class Running:
    manager: McpManager
    events: list[Event]
    log_dir: Path


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Running]:
    """demo (stdio), time (stdio) and a disabled entry, started once for the module."""
    log_dir = tmp_path_factory.mktemp("logs")
    events: list[Event] = []
    servers = {
        "demo": demo(env={"DEMO_FLAG": "on"}, env_vars=(PASSED,)),
        "time": time_server(),
        "off": demo(enabled=False),
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SECRET, "hunter2")
        patch.setenv(PASSED, "yes")
        work = tmp_path_factory.mktemp("work")
        manager = McpManager(servers, cwd=work, log_dir=log_dir, emit=events.append)
        await manager.start()
    yield Running(manager, events, log_dir)
    await manager.aclose()


@pytest_asyncio.fixture
async def running(tmp_path: Path) -> AsyncIterator[Running]:
    """An empty manager of the test's own, closed afterwards."""
    events: list[Event] = []
    manager = McpManager({}, cwd=tmp_path, log_dir=tmp_path / "logs", emit=events.append)
    yield Running(manager, events, tmp_path / "logs")
    await manager.aclose()


def text_of(result: CallToolResult) -> str:
    [item] = result.content
    assert isinstance(item, TextContent)
    return item.text


def failures(events: list[Event], server: str) -> list[McpServerFailed]:
    return [e for e in events if isinstance(e, McpServerFailed) and e.server == server]


# -- listing and calling ----------------------------------------------------------------


@module_loop
async def test_servers_start_and_list_their_tools(shared: Running) -> None:
    statuses = {s.name: s for s in shared.manager.statuses()}
    assert [s.state for s in statuses.values()] == ["ready", "ready", "disabled"]
    assert statuses["demo"].tools == DEMO_TOOLS
    assert statuses["demo"].log_path == shared.log_dir / "mcp-demo.log"
    assert statuses["demo"].description == f"{sys.executable} {DEMO}"
    assert statuses["time"].tools == ("get_current_time", "convert_time")
    assert statuses["off"].log_path is None
    ready = [e for e in shared.events if isinstance(e, McpServerReady)]
    assert sorted((e.server, e.transport, tuple(e.tools)) for e in ready) == [
        ("demo", "stdio", DEMO_TOOLS),
        ("time", "stdio", ("get_current_time", "convert_time")),
    ]
    assert shared.manager.configured
    assert shared.manager.names() == ["demo", "time", "off"]
    assert shared.manager.config("time") == time_server()
    assert shared.manager.config("nope") is None
    assert shared.manager.approval_mode("demo") == "auto"


@module_loop
async def test_tools_are_qualified_and_sorted(shared: Running) -> None:
    names = [t.qualified_name for t in shared.manager.tools()]
    expected = [f"mcp__demo__{t}" for t in DEMO_TOOLS]
    expected += ["mcp__time__convert_time", "mcp__time__get_current_time"]
    assert names == sorted(expected)
    lookup = shared.manager.tool("mcp__demo__lookup")
    assert lookup is not None
    assert (lookup.server, lookup.name) == ("demo", "lookup")
    assert lookup.description == "Looks a word up in a tiny dictionary."
    assert lookup.annotations == {
        "title": "Look up a word",
        "readOnlyHint": True,
        "destructiveHint": False,
        "openWorldHint": False,
    }
    assert lookup.input_schema["properties"]["word"]["type"] == "string"
    add = shared.manager.tool("mcp__demo__add")
    assert add is not None and add.annotations is None
    assert shared.manager.tool("mcp__demo__nope") is None


@module_loop
async def test_structured_text_image_and_error_results(shared: Running) -> None:
    manager = shared.manager
    add = await manager.call_tool("demo", "add", {"a": 2, "b": 3})
    assert call_result_output(add).content == '{"result":5}'
    echo = await manager.call_tool("demo", "echo", {"text": "héllo"})
    assert call_result_output(echo).content == '[{"type":"text","text":"héllo"}]'
    pixel = call_result_output(await manager.call_tool("demo", "pixel", {}))
    assert isinstance(pixel.content, list)
    assert pixel.content[0] == {"type": "input_text", "text": "a pixel"}
    assert pixel.content[1]["image_url"].startswith("data:image/png;base64,iVBORw0KGgo")
    fail = call_result_output(await manager.call_tool("demo", "fail", {"message": "no luck"}))
    assert (fail.content, fail.success) == (
        '[{"type":"text","text":"Error executing tool fail: no luck"}]',
        False,
    )


@module_loop
async def test_mcp_server_time_answers_the_time(shared: Running) -> None:
    result = await shared.manager.call_tool("time", "get_current_time", {"timezone": "UTC"})
    assert not result.is_error
    assert result.structured_content["timezone"] == "UTC"
    assert result.structured_content["datetime"].endswith("+00:00")
    assert call_result_output(result).content.startswith('{"timezone":"UTC","datetime":"')


@module_loop
async def test_the_server_sees_only_the_environment_it_is_given(shared: Running) -> None:
    result = await shared.manager.call_tool("demo", "env_names", {})
    seen = set(text_of(result).split("\n"))
    assert SECRET not in seen  # set in our environment while the server started
    expected = {name for name in DEFAULT_ENV_VARS if name in os.environ}
    assert seen == expected | {PASSED, "DEMO_FLAG"}


@module_loop
async def test_calls_from_many_tasks_at_once(shared: Running) -> None:
    manager = shared.manager
    tasks = [
        asyncio.create_task(manager.call_tool("demo", "add", {"a": i, "b": i})) for i in range(6)
    ]
    results = await asyncio.gather(*tasks)
    assert [r.structured_content for r in results] == [{"result": 2 * i} for i in range(6)]


@module_loop
async def test_a_call_that_takes_too_long_times_out_and_the_server_stays(shared: Running) -> None:
    manager = shared.manager
    with pytest.raises(McpError) as caught:
        await manager.call_tool("demo", "slow", {"seconds": 30}, timeout_s=0.2)
    assert caught.value.message == "MCP server 'demo' timed out awaiting tools/call after 0.2s"
    assert {s.name: s.state for s in manager.statuses()}["demo"] == "ready"
    result = await manager.call_tool("demo", "add", {"a": 1, "b": 1})
    assert result.structured_content == {"result": 2}


@module_loop
async def test_unknown_disabled_and_unknown_tool(shared: Running) -> None:
    manager = shared.manager
    with pytest.raises(McpError, match=r"^unknown MCP server 'nope'$"):
        await manager.call_tool("nope", "add", {})
    with pytest.raises(McpError, match=r"^MCP server 'off' is disabled$"):
        await manager.call_tool("off", "add", {})
    result = await manager.call_tool("demo", "nope", {})
    assert result.is_error  # the server answers an unknown tool with an error result


@module_loop
async def test_resources_and_templates(shared: Running) -> None:
    manager = shared.manager
    resources = await manager.list_resources("demo")
    assert [(r.uri, r.name, r.mime_type) for r in resources.resources] == [
        ("demo://greeting", "greeting", "text/plain")
    ]
    assert resources.next_cursor is None
    templates = await manager.list_resource_templates("demo")
    assert [t.uri_template for t in templates.resource_templates] == ["demo://items/{item_id}"]
    read = await manager.read_resource("demo", "demo://items/42")
    assert [(c.uri, getattr(c, "text", None)) for c in read.contents] == [
        ("demo://items/42", '{"id":"42"}')
    ]
    everything = await manager.list_all_resources()
    assert [r.uri for r in everything["demo"]] == ["demo://greeting"]
    assert "off" not in everything
    all_templates = await manager.list_all_resource_templates()
    assert [t.name for t in all_templates["demo"]] == ["item"]


@module_loop
async def test_a_resource_the_server_does_not_have(shared: Running) -> None:
    with pytest.raises(McpError) as caught:
        await shared.manager.read_resource("demo", "demo://missing")
    assert caught.value.message.startswith("MCP server 'demo' answered resources/read with error")
    assert "Unknown resource: demo://missing" in caught.value.message


# -- faults -------------------------------------------------------------------------------


async def test_a_crash_mid_call_fails_every_pending_call_and_marks_the_server(
    running: Running, capfd: pytest.CaptureFixture[str]
) -> None:
    manager = running.manager
    await manager.add("demo", demo(tool_timeout_sec=300))
    waiting = asyncio.create_task(manager.call_tool("demo", "slow", {"seconds": 300}))
    await asyncio.sleep(0)
    with pytest.raises(McpError) as crashed:
        await asyncio.wait_for(manager.call_tool("demo", "crash", {"code": 7}), GUARD_S)
    reason = "exited with code 7: crashing on purpose with code 7"
    assert crashed.value.message == f"MCP server 'demo' failed during tools/call: {reason}"
    with pytest.raises(McpError) as pending:
        await asyncio.wait_for(waiting, GUARD_S)
    assert reason in pending.value.message
    [status] = manager.statuses()
    assert (status.state, status.reason, status.tools) == ("failed", reason, ())
    assert failures(running.events, "demo") == [
        McpServerFailed("demo", reason, str(running.log_dir / "mcp-demo.log"))
    ]
    assert manager.tools() == []
    with pytest.raises(McpError, match=rf"^MCP server 'demo' is not available: {reason}$"):
        await manager.call_tool("demo", "add", {"a": 1, "b": 2})
    assert "crashing on purpose" in (running.log_dir / "mcp-demo.log").read_text()
    assert "crashing on purpose" not in capfd.readouterr().err


async def test_a_server_that_dies_while_idle_is_marked_failed(running: Running) -> None:
    await running.manager.add("demo", demo())
    assert (await running.manager.call_tool("demo", "exit_soon", {"code": 5})).content
    async with asyncio.timeout(GUARD_S):
        while running.manager.statuses()[0].state == "ready":
            await asyncio.sleep(0.05)
    [status] = running.manager.statuses()
    assert (status.state, status.reason) == ("failed", "exited with code 5")
    assert [e.reason for e in failures(running.events, "demo")] == ["exited with code 5"]


async def test_a_child_holding_stdout_does_not_keep_a_dead_server_alive(
    running: Running,
) -> None:
    """The server starts a child that inherits its stdout, then crashes: stdout never
    closes, yet the call fails with the exit code and the child is killed with it."""
    script = f'sleep 300 & echo "child $!" >&2; exec "{sys.executable}" "{DEMO}"'
    cfg = McpServerConfig(command="sh", args=("-c", script), tool_timeout_sec=300)
    status = await running.manager.add("parent", cfg)
    assert status.state == "ready" and status.log_path is not None
    with pytest.raises(McpError) as crashed:
        await asyncio.wait_for(running.manager.call_tool("parent", "crash", {}), GUARD_S)
    reason = "exited with code 7: crashing on purpose with code 7"
    assert crashed.value.message == f"MCP server 'parent' failed during tools/call: {reason}"
    assert [e.reason for e in failures(running.events, "parent")] == [reason]
    child = int(status.log_path.read_text().rsplit("child ", 1)[1].split()[0])
    assert not alive(child)


async def test_a_server_that_never_answers_times_out_and_is_killed(running: Running) -> None:
    silent = McpServerConfig(command=sys.executable, args=(str(SILENT),), startup_timeout_sec=1)
    status = await running.manager.add("hang", silent)
    assert (status.state, status.reason) == ("failed", "timed out after 1s while starting")
    assert failures(running.events, "hang") == [
        McpServerFailed("hang", "timed out after 1s while starting", str(status.log_path))
    ]
    assert status.log_path is not None
    pid = int(status.log_path.read_text().split("pid ")[1].split(",")[0])
    assert not alive(pid)


async def test_a_missing_command(running: Running) -> None:
    cfg = McpServerConfig(command="no-such-mcp-server-for-tests")
    status = await running.manager.add("missing", cfg)
    assert (status.state, status.reason) == (
        "failed",
        "command not found: no-such-mcp-server-for-tests",
    )
    [event] = failures(running.events, "missing")
    assert event.reason == status.reason
    with pytest.raises(McpError, match="is not available: command not found"):
        await running.manager.call_tool("missing", "anything", None)


async def test_a_server_that_exits_while_starting(running: Running) -> None:
    status = await running.manager.add("exits", demo("--exit-at-start", "3"))
    assert status.state == "failed"
    assert (
        status.reason
        == "exited with code 3 while starting: fatal: the demo server was told to exit"
    )
    assert [e.reason for e in failures(running.events, "exits")] == [status.reason]


async def test_the_working_folder(running: Running, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    await running.manager.add("inside", demo(cwd="sub"))
    result = await running.manager.call_tool("inside", "cwd", {})
    assert text_of(result) == str(tmp_path / "sub")
    status = await running.manager.add("nowhere", demo(cwd="missing"))
    assert status.reason == f"its working folder does not exist: {tmp_path / 'missing'}"


async def test_stdout_lines_that_are_not_json_rpc_go_to_the_log(running: Running) -> None:
    status = await running.manager.add("noisy", demo("--noise"))
    assert status.state == "ready" and status.log_path is not None
    result = await running.manager.call_tool("noisy", "add", {"a": 1, "b": 1})
    assert result.structured_content == {"result": 2}
    assert "[not JSON-RPC on stdout] some noise on stdout" in status.log_path.read_text()


# -- lifecycle ----------------------------------------------------------------------------


async def test_add_replace_remove_restart(running: Running) -> None:
    manager = running.manager
    assert not manager.configured
    status = await manager.add("demo", demo(enabled_tools=("add", "echo")))
    assert (status.state, status.tools) == ("ready", ("add", "echo"))
    assert [t.qualified_name for t in manager.tools()] == ["mcp__demo__add", "mcp__demo__echo"]
    status = await manager.add("demo", demo(disabled_tools=("crash",)))
    assert status.tools == tuple(t for t in DEMO_TOOLS if t != "crash")
    assert manager.names() == ["demo"]
    with pytest.raises(McpError):
        await manager.call_tool("demo", "crash", {})
    assert manager.statuses()[0].state == "failed"
    status = await manager.restart("demo")
    assert status.state == "ready"
    assert (await manager.call_tool("demo", "add", {"a": 1, "b": 2})).structured_content == {
        "result": 3
    }
    assert await manager.remove("demo")
    assert not await manager.remove("demo")
    assert manager.tools() == [] and not manager.configured
    with pytest.raises(McpError, match=r"^unknown MCP server 'demo'$"):
        await manager.restart("demo")


async def test_closing_stops_servers_and_pending_calls(tmp_path: Path) -> None:
    events: list[Event] = []
    manager = McpManager({"demo": demo()}, cwd=tmp_path, log_dir=tmp_path, emit=events.append)
    await manager.start()
    await manager.start()  # idempotent
    assert [e.server for e in events] == ["demo"]
    waiting = asyncio.create_task(manager.call_tool("demo", "slow", {"seconds": 300}))
    await asyncio.sleep(0.1)
    await manager.aclose()
    with pytest.raises(McpError, match=r"^MCP server 'demo' was stopped during tools/call$"):
        await asyncio.wait_for(waiting, GUARD_S)
    await manager.aclose()
    await manager.start()
    assert [(s.state, s.reason) for s in manager.statuses()] == [("stopped", None)]
    assert failures(events, "demo") == []
    with pytest.raises(McpError, match=r"^MCP server 'demo' is not running$"):
        await manager.call_tool("demo", "add", {"a": 1, "b": 2})


@pytest.mark.parametrize(
    ("returncode", "line", "starting", "reason"),
    [
        pytest.param(3, "boom", True, "exited with code 3 while starting: boom", id="starting"),
        pytest.param(0, None, False, "exited with code 0", id="quiet"),
        pytest.param(-9, None, False, "was killed by SIGKILL", id="signal"),
    ],
)
def test_exit_reasons(returncode: int, line: str | None, starting: bool, reason: str) -> None:
    assert _reasons.exited(returncode, line, starting=starting) == reason


def test_reasons_never_show_credentials_of_a_url() -> None:
    url = "http://user:pw@127.0.0.1:8080/mcp?token=abc#x"
    assert safe_url(url) == "http://127.0.0.1:8080/mcp"
    failure = _reasons.describe(httpx2.ConnectError("refused"), url=url)
    assert failure == "could not connect to http://127.0.0.1:8080/mcp: refused"


# -- streamable HTTP ----------------------------------------------------------------------


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpServer]:
    server = start_http_server(tmp_path / "http-server.log")
    yield server
    stop_http_server(server)


async def test_streamable_http(
    running: Running, http_server: HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AM_TEST_TOKEN", "s3cret")
    cfg = McpServerConfig(
        url=http_server.url,
        bearer_token_env_var="AM_TEST_TOKEN",
        http_headers={"X-Demo": "1"},
        disabled_tools=("crash",),
    )
    status = await running.manager.add("web", cfg)
    assert (status.state, status.transport, status.log_path) == ("ready", "http", None)
    assert "crash" not in status.tools and "add" in status.tools
    manager = running.manager
    assert (await manager.call_tool("web", "add", {"a": 4, "b": 5})).structured_content == {
        "result": 9
    }
    auth = await manager.call_tool("web", "header", {"name": "authorization"})
    assert text_of(auth) == "Bearer s3cret"
    demo_header = await manager.call_tool("web", "header", {"name": "x-demo"})
    assert text_of(demo_header) == "1"
    read = await manager.read_resource("web", "demo://greeting")
    assert getattr(read.contents[0], "text", None) == "hello from demo"
    assert next(e for e in running.events if isinstance(e, McpServerReady)).transport == "http"


async def test_an_http_server_nobody_listens_on(running: Running) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    status = await running.manager.add("gone", McpServerConfig(url=url))
    assert status.state == "failed"
    assert status.reason is not None and status.reason.startswith(f"could not connect to {url}: ")
    assert [e.log_path for e in failures(running.events, "gone")] == [None]


async def test_an_http_server_killed_during_a_call(running: Running, tmp_path: Path) -> None:
    server = start_http_server(tmp_path / "killed.log")
    try:
        await running.manager.add("web", McpServerConfig(url=server.url, tool_timeout_sec=300))
        waiting = asyncio.create_task(running.manager.call_tool("web", "slow", {"seconds": 300}))
        await asyncio.sleep(0.5)
        server.process.kill()
        with pytest.raises(McpError) as caught:
            await asyncio.wait_for(waiting, GUARD_S)
    finally:
        stop_http_server(server)
    assert caught.value.message.startswith("MCP server 'web' failed during tools/call: ")
    [status] = running.manager.statuses()
    assert status.state == "failed"
    assert [e.reason for e in failures(running.events, "web")] == [status.reason]


# -- secrets in a server's log --------------------------------------------------------------


async def test_a_server_log_is_written_through_redact_codex_shares_this(tmp_path: Path) -> None:
    """Every stderr line reaches the log scrubbed, the last one (the failure reason) too.
    Codex logs a server's stderr lines as they come (rmcp_client.rs: ``info!("MCP server
    stderr ({program_name}): {line}")``)."""
    token = "tok-Mn3Bv5Cx7Zl9Kj2Hg4Qw8Er6Ty1Ui0"
    server = MCP_SERVERS / "environ_server.py"
    cfg = McpServerConfig(
        command=sys.executable,
        args=(str(server), "--exit-at-start", "4"),
        env={"SERVICE_TOKEN": token, "LAST": f"tail {token}"},
    )
    events: list[Event] = []
    manager = McpManager(
        {}, cwd=tmp_path, log_dir=tmp_path / "logs", emit=events.append, redact=Scrubber(token)
    )
    try:
        status = await manager.add("env", cfg)
    finally:
        await manager.aclose()
    assert status.state == "failed" and status.log_path is not None
    log = status.log_path.read_text()
    assert "SERVICE_TOKEN=[redacted]\n" in log
    assert "LAST=tail [redacted]\n" in log
    assert token[:12] not in log
    assert (status.reason or "").startswith("exited with code 4 while starting: key:")


async def test_sync_follows_the_wanted_servers_and_says_when_tools_change(
    tmp_path: Path,
) -> None:
    """``sync`` stops the servers no longer wanted (one never started is not started),
    restarts the changed ones, leaves the same ones running, and calls
    ``on_tools_changed`` with the tools as they then are."""
    events: list[Event] = []
    seen: list[list[str]] = []
    add_only, echo_only = demo(enabled_tools=("add",)), demo(enabled_tools=("echo",))
    manager = McpManager(
        {"a": add_only, "gone": demo()},
        cwd=tmp_path,
        log_dir=tmp_path / "logs",
        emit=events.append,
        on_tools_changed=lambda: seen.append([t.qualified_name for t in manager.tools()]),
    )

    def starts(name: str) -> int:
        return sum(isinstance(e, McpServerReady) and e.server == name for e in events)

    try:
        await manager.sync({"a": add_only, "b": echo_only})
        assert manager.names() == ["a", "b"]
        assert seen[-1] == ["mcp__a__add", "mcp__b__echo"]
        assert (starts("a"), starts("b"), starts("gone")) == (1, 1, 0)
        await manager.sync({"a": echo_only, "b": echo_only})
        assert seen[-1] == ["mcp__a__echo", "mcp__b__echo"]
        assert (starts("a"), starts("b")) == (2, 1)
        await manager.sync({})
        assert manager.names() == [] and seen[-1] == []
    finally:
        await manager.aclose()
