"""What an ACP session starts with: the MCP servers the client passes (started only once
the person allowed them, remembered when asked to), and a teacher's site policy."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from acp.schema import EnvVariable, HttpMcpServer, McpServerStdio

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.acp_client import Chat, agent_env, agent_process, ask
from tests.helpers.mcp_http import start_http_server, stop_http_server
from tests.helpers.teaching import site_file

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]
TIME_SERVER = McpServerStdio(
    name="time",
    command=sys.executable,
    args=["-m", "mcp_server_time"],
    env=[EnvVariable(name="TZ_HINT", value="utc")],
)
TIME_CALL = function_call("mcp__time__get_current_time", {"timezone": "UTC"}, "t1")


async def turn_with(
    tmp_path: Path, chat: Chat, turns: list, servers: list, *args: str, python: str = sys.executable
) -> ScriptedResponsesServer:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    with ScriptedResponsesServer(turns) as model:
        env = agent_env(tmp_path / "home", model)
        async with agent_process(chat, env, ws, *args, python=python) as conn:
            session = await conn.new_session(cwd=str(ws), mcp_servers=servers)
            await ask(conn, chat, session.session_id, "what time is it?")
    return model


def tool_names(request: dict) -> list[str]:
    return [t.get("name") or t["type"] for t in request["tools"]]


async def test_a_client_server_starts_once_allowed(tmp_path: Path) -> None:
    chat = Chat(["once", "approved"])
    turns = [[TIME_CALL], [message("It is late.")]]
    model = await turn_with(tmp_path, chat, turns, [TIME_SERVER])
    start, _options = chat.questions[0]
    assert start.title == "Start the MCP server 'time'"
    assert start.raw_input["command"] == f"TZ_HINT=utc {sys.executable} -m mcp_server_time"
    assert "mcp__time__get_current_time" in tool_names(model.requests[0])
    answer = json.loads(model.outputs(1)["t1"])
    assert answer["timezone"] == "UTC"


async def test_a_refused_server_is_not_started_and_the_model_is_told(tmp_path: Path) -> None:
    chat = Chat(["no"])
    model = await turn_with(tmp_path, chat, [[message("no clock")]], [TIME_SERVER])
    names = tool_names(model.requests[0])
    assert not any(n.startswith("mcp__time") for n in names)
    assert "the person did not allow them" in json.dumps(model.requests[0]["input"])


async def test_a_stdio_server_is_asked_about_in_each_session(tmp_path: Path) -> None:
    """It runs files of the folder (``server.py``, ``node_modules``) that a sandboxed
    command may change between two chats: "always" is not offered, and an answer of it
    anyway starts nothing."""
    first = Chat(["always"])
    model = await turn_with(tmp_path, first, [[message("ok")]], [TIME_SERVER])
    [(_, offered)] = first.questions
    assert [o.option_id for o in offered] == ["once", "no"]
    assert not any(n.startswith("mcp__time") for n in tool_names(model.requests[0]))
    again = Chat(["once"])
    await turn_with(tmp_path, again, [[message("ok")]], [TIME_SERVER])
    assert len(again.questions) == 1


async def test_always_is_remembered_for_the_same_http_server_only(tmp_path: Path) -> None:
    server = start_http_server(tmp_path / "http.log")
    try:
        demo = HttpMcpServer(type="http", name="demo", url=server.url, headers=[])
        first = Chat(["always"])
        await turn_with(tmp_path, first, [[message("ok")]], [demo])
        assert len(first.questions) == 1
        again = Chat()
        model = await turn_with(tmp_path, again, [[message("ok")]], [demo])
        assert again.questions == []
        assert "mcp__demo__add" in tool_names(model.requests[0])
        moved = demo.model_copy(update={"url": server.url + "?v=2"})
        third = Chat(["no"])
        await turn_with(tmp_path, third, [[message("ok")]], [moved])
        assert len(third.questions) == 1  # another URL: asked again
    finally:
        stop_http_server(server)


async def test_a_teachers_site_policy_holds_in_the_chat(tmp_path: Path, site_python: Path) -> None:
    site_file(site_python, 'max_approval_policy = "on-request"\nmax_sandbox = "read-only"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    chat = Chat()
    turns = [[function_call("exec_command", {"cmd": "touch written"}, "c1")], [message("ok")]]
    with ScriptedResponsesServer(turns) as model:
        env = agent_env(tmp_path / "home", model)
        async with agent_process(chat, env, ws, python=str(site_python)) as conn:
            session = await conn.new_session(cwd=str(ws), mcp_servers=[])
            with pytest.raises(Exception, match="on-request"):
                await conn.set_session_mode(session_id=session.session_id, mode_id="never")
            await ask(conn, chat, session.session_id, "write a file")
    assert not (ws / "written").exists()  # read-only, whatever the model asked
    assert "read-only" in chat.text()  # the policy's line opens the chat
