"""A session's window from its settings, and the two sentences said about it once."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from agent_magics.agent.compact_trigger import ContextState
from agent_magics.agent.context_window import (
    fixed_bytes,
    fixed_part_text,
    session_window,
    unknown_window_text,
)
from agent_magics.agent.window_watch import UNKNOWN_SAID_AT, WindowWatch
from agent_magics.config import SessionConfig
from agent_magics.events import ContextWindowNoted, Event
from agent_magics.models.base import ModelRequest
from agent_magics.models.context_window import WindowCache, WindowInfo
from tests.helpers.route_server import RouteServer
from tests.helpers.sessions import KEY, config_for, session_for

PROPS = {"default_generation_settings": {"id": 0, "n_ctx": 4096}, "total_slots": 1}
UNKNOWN = (
    "The context window of m is unknown: the model catalog does not list it and its "
    "server did not say. Nothing is compacted until the server refuses a request as too "
    "long; set model_context_window to the window in tokens to compact in time."
)


def tool(name: str, size: int) -> dict[str, object]:
    return {"type": "function", "name": name, "description": "d" * size, "parameters": {}}


def request(instructions: str, *tools: dict[str, object]) -> ModelRequest:
    return ModelRequest(model="m", instructions=instructions, input=[], tools=list(tools))


async def test_a_local_server_is_asked_with_the_sessions_key(tmp_path: Path) -> None:
    with RouteServer({("GET", "/props"): PROPS}) as server:
        config = config_for(tmp_path, server.base_url, provider="chat")
        windows = WindowCache()
        assert await session_window(config, windows) == WindowInfo(4096, "server")
        assert await session_window(config, windows) == WindowInfo(4096, "server")
        assert server.paths() == ["GET /v1/models", "GET /props"]
        assert {s.authorization for s in server.seen} == {f"Bearer {KEY}"}


async def test_the_setting_and_the_catalog_ask_no_server(tmp_path: Path) -> None:
    with RouteServer({("GET", "/props"): PROPS}) as server:
        windows = WindowCache()
        config = config_for(tmp_path, server.base_url, model_context_window=9000)
        assert await session_window(config, windows) == WindowInfo(9000, "setting")
        config = config_for(tmp_path, server.base_url, model="gpt-5.1-codex")
        assert await session_window(config, windows) == WindowInfo(272_000, "catalog")
        assert server.seen == []


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param({"provider": "replay"}, id="replay"),
        pytest.param({"api_key": None, "base_url": "https://api.openai.com/v1"}, id="no-model"),
    ],
)
async def test_no_live_server_no_question_and_no_notice(
    tmp_path: Path, settings: dict[str, object]
) -> None:
    with RouteServer({("GET", "/props"): PROPS}) as server:
        base_url = str(settings.pop("base_url", server.base_url))
        config = config_for(tmp_path, base_url, **settings)
        window = await session_window(config, WindowCache())
        assert window == WindowInfo(None, "unknown") and server.seen == []
        assert unknown_window_text(config, window) is None
        said: list[Event] = []
        watch = WindowWatch()
        await watch.window(config, lambda: request("x"), said.append)
        watch.check(ContextState(tokens=UNKNOWN_SAID_AT * 2), said.append)
        assert said == []


def test_an_unknown_window_is_said(tmp_path: Path) -> None:
    config = config_for(tmp_path, "http://127.0.0.1:9/v1", provider="chat")
    assert unknown_window_text(config, WindowInfo(None, "unknown")) == UNKNOWN
    assert unknown_window_text(config, WindowInfo(4096, "server")) is None


def test_the_fixed_part_is_measured_in_bytes_as_sent() -> None:
    sent = request("é" * 10, tool("read_file", 5))
    assert fixed_bytes(sent) == 20 + len(json.dumps(sent.tools).encode())


@pytest.mark.parametrize(
    ("tools", "instructions", "advice"),
    [
        pytest.param(
            [tool("exec_command", 500)],
            None,
            "a model with a larger window leaves more room for the conversation.",
            id="nothing-to-turn-off",
        ),
        pytest.param(
            [tool("read_file", 100), tool("mcp__time__now", 300), {"type": "web_search"}],
            None,
            "to leave more room for the conversation, turn off the MCP servers' tools "
            "(mcp_servers), the experimental file tools (experimental_supported_tools) or "
            'web search (web_search = "disabled").',
            id="largest-first",
        ),
        pytest.param(
            [tool("grep_files", 10), tool("list_dir", 10)],
            "mine",
            "to leave more room for the conversation, turn off the experimental file tools "
            "(experimental_supported_tools) or shorten your own instructions (instructions).",
            id="own-instructions",
        ),
    ],
)
def test_a_fixed_part_over_a_third_of_the_window_is_said(
    tmp_path: Path, tools: list[dict[str, object]], instructions: str | None, advice: str
) -> None:
    config = config_for(tmp_path, "http://127.0.0.1:9/v1", instructions=instructions)
    sent = request("i" * 4000, *tools)
    tokens = -(-fixed_bytes(sent) // 4)
    window = WindowInfo(3 * tokens - 1, "server")
    assert fixed_part_text(config, window, sent) == (
        f"The instructions and tools sent with every request take about {tokens:,} tokens, "
        f"more than a third of the model's {3 * tokens - 1:,}-token context window (from "
        f"its server); {advice}"
    )
    assert fixed_part_text(config, WindowInfo(3 * tokens, "server"), sent) is None
    assert fixed_part_text(config, WindowInfo(None, "unknown"), sent) is None


async def test_a_real_sessions_request_names_its_file_tools(tmp_path: Path) -> None:
    file_tools = ("read_file", "list_dir", "grep_files")
    session = session_for(
        tmp_path, "http://127.0.0.1:9/v1", experimental_supported_tools=file_tools
    )
    try:
        sent = session.request()
    finally:
        await session.aclose()
    tokens = -(-fixed_bytes(sent) // 4)
    text = fixed_part_text(session.config, WindowInfo(2 * tokens, "setting"), sent)
    assert text is not None and text.endswith(
        "(from model_context_window); to leave more room for the conversation, turn off "
        "the experimental file tools (experimental_supported_tools) or web search "
        '(web_search = "disabled").'
    )


async def test_the_notices_are_events_and_warnings(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What the session's watch says: the unknown window once the conversation passes
    8k tokens (not before), a fixed part over a third of a small window at once."""
    config: SessionConfig = config_for(tmp_path, "http://127.0.0.1:9/v1", provider="chat")
    said: list[Event] = []
    with caplog.at_level(logging.WARNING, logger="agent_magics"):
        watch = WindowWatch()
        assert await watch.window(config, lambda: request("i" * 40_000), said.append) is None
        watch.check(ContextState(tokens=UNKNOWN_SAID_AT - 1), said.append)
        assert said == []
        watch.check(ContextState(tokens=UNKNOWN_SAID_AT), said.append)
        watch.check(ContextState(tokens=UNKNOWN_SAID_AT * 2), said.append)
    assert said == [ContextWindowNoted(UNKNOWN)]
    assert [r.getMessage() for r in caplog.records] == [UNKNOWN]
    for window, notices in ((100, 1), (1000, 0)):
        said.clear()
        small = config.model_copy(update={"model_context_window": window})
        await WindowWatch().window(small, lambda: request("i" * 400), said.append)
        assert [type(e) for e in said] == [ContextWindowNoted] * notices
