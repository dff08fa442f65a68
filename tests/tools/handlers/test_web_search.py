"""The hosted ``web_search`` tool through real sessions against loopback model servers:
the spec Codex 0.171.0 offers under each setting and sandbox (recorded with the real
CLI, ``tests/conformance/extra-0.171/web_search``), never offered to a Chat Completions
server, and ``web_search_call`` items shown as a card, kept in the history and the
session file, and sent back as Codex sends them (the recorded next request's item)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_magics.agent.session import Session
from agent_magics.events import Event
from agent_magics.store.recorder import SessionRecorder
from agent_magics.store.resume import continue_in, load_resume
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.transcript.export import FORMATS, render, stored_document
from agent_magics.transcript.history import history_text
from agent_magics.transcript.model import ToolBlock, Transcript
from agent_magics.transcript.static_html import transcript_html
from tests.helpers.chat_fault_server import chat_fault_server
from tests.helpers.fault_server import ok
from tests.helpers.sessions import config_for, session_for

RECORDED = Path(__file__).parents[2] / "conformance" / "extra-0.171" / "web_search"
MODES = {"default": {}, **{m: {"web_search": m} for m in ("disabled", "cached", "live")}}
SANDBOXES = {"ws": "workspace-write", "full": "danger-full-access"}
SOURCE = "https://jupyter-client.readthedocs.io/en/latest/messaging.html"
SEARCH = {
    "type": "web_search_call",
    "id": "ws_1",
    "status": "completed",
    "action": {
        "type": "search",
        "query": "jupyter kernel protocol",
        "sources": [{"type": "url", "url": SOURCE}],
    },
}


def golden(name: str) -> dict[str, Any]:
    return dict(json.loads((RECORDED / "goldens" / f"{name}.json").read_text()))


def searches(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for t in tools if t.get("type") == "web_search"]


def golden_name(mode: str, sandbox: str) -> str:
    if mode == "default":
        return "tools_default_sandboxed" if sandbox == "ws" else "tools_default_full_access"
    return f"tools_{mode}_{sandbox}"


@pytest.mark.parametrize("sandbox", list(SANDBOXES))
@pytest.mark.parametrize("mode", list(MODES))
async def test_the_spec_is_codexs_for_each_setting(tmp_path: Path, mode: str, sandbox: str) -> None:
    recorded = golden(golden_name(mode, sandbox))["tools"]
    with ScriptedResponsesServer() as server:
        session = session_for(
            tmp_path,
            server.base_url,
            shell_type="auto",
            sandbox_mode=SANDBOXES[sandbox],
            **MODES[mode],
        )
        await session.run_turn("hi")
        await session.aclose()
    tools = server.requests[0]["tools"]
    assert searches(tools) == searches(recorded)
    if searches(tools):  # last, as in Codex's list, and after every tool both offer
        assert tools[-1] == searches(recorded)[0] == recorded[-1]


@pytest.mark.parametrize("mode", ["cached", "live"])
async def test_a_chat_completions_server_is_never_offered_it(tmp_path: Path, mode: str) -> None:
    server = chat_fault_server([ok("fine")])
    try:
        session = session_for(
            tmp_path,
            server.base_url,
            provider="chat",
            sandbox_mode="danger-full-access",
            web_search=mode,
        )
        result = await session.run_turn("hi")
        await session.aclose()
    finally:
        server.close()
    assert result.final_text == "fine"
    body = json.dumps(server.requests[0])
    assert "web_search" not in body, body
    assert "web_search" not in session.registry


async def run_search_turn(tmp_path: Path, item: dict[str, Any]) -> tuple[Session, list[Any]]:
    script = [[item, function_call("update_plan", {"plan": []}, "call_2")], [message("ok")]]
    events: list[Event] = []
    server = ScriptedResponsesServer(script).start()
    session = session_for(tmp_path, server.base_url)
    session.subscribe(events.append)
    recorder = SessionRecorder(session, tmp_path / "s")
    try:
        await session.run_turn("look it up")
        await session.aclose()
    finally:
        recorder.close()
        server.stop()
    return session, [server.requests, events]


@pytest.mark.parametrize(
    ("name", "item"),
    [
        ("call_round_trip", SEARCH),
        ("call_no_action", {"type": "web_search_call", "id": "ws_2", "status": "completed"}),
    ],
)
async def test_the_item_goes_back_as_codex_sends_it(
    tmp_path: Path, name: str, item: dict[str, Any]
) -> None:
    """Streamed as the Responses API streams it (output_item.added, then .done), the
    item is kept where it came and sent back with Codex's fields: a search's sources
    are not sent again (the recorded 0.171.0 request)."""
    _, (requests, _) = await run_search_turn(tmp_path, item)
    [expected] = golden(name)["extra_input_items"]
    sent = [i for i in requests[1]["input"] if i.get("type") == "web_search_call"]
    assert sent == [expected]
    assert json.dumps(sent[0]) == json.dumps(expected)  # same keys, same order
    kinds = [i.get("type") for i in requests[1]["input"]]
    assert kinds[-3:] == ["web_search_call", "function_call", "function_call_output"]


async def test_an_answer_holding_only_a_search_ends_the_turn(tmp_path: Path) -> None:
    """A response with the server's search and nothing else ends the turn as Codex ends
    one without a tool call: done, with the search's card, not a failure."""
    events: list[Event] = []
    with ScriptedResponsesServer([[SEARCH]]) as server:
        session = session_for(tmp_path, server.base_url)
        session.subscribe(events.append)
        result = await session.run_turn("look it up")
        await session.aclose()
    assert result.final_text == ""
    assert [type(e).__name__ for e in events][-2:] == ["WebSearched", "TurnFinished"]
    assert session.history[-1].type == "web_search_call"


async def test_the_card_shows_the_query_and_the_sources(tmp_path: Path) -> None:
    session, (_, events) = await run_search_turn(tmp_path, SEARCH)
    live = Transcript()
    for event in events:
        live.apply(event)
    [card] = [b for b in live.blocks if isinstance(b, ToolBlock) and b.tool_name == "web_search"]
    assert card.status == "done" and card.output == SOURCE
    assert json.loads(card.arguments) == {"query": "jupyter kernel protocol"}
    shown = history_text([i.wire() for i in session.history])
    assert f"• web_search: jupyter kernel protocol\n    {SOURCE}" in shown
    static = transcript_html(live)  # the saved notebook's copy of the cell's cards
    assert "<code>jupyter kernel protocol</code>" in static and SOURCE in static
    doc = stored_document(next((tmp_path / "s").rglob("*.jsonl")))
    for suffix in FORMATS:
        saved = render(doc, suffix)
        assert "jupyter kernel protocol" in saved and SOURCE in saved, suffix
        assert "web_search_call" not in saved  # a card, not an unknown item


async def test_a_search_without_sources_says_so(tmp_path: Path) -> None:
    item = {**SEARCH, "action": {"type": "search", "query": "q"}}
    session, _ = await run_search_turn(tmp_path, item)
    assert "• web_search: q\n    (the server named no sources)" in history_text(
        [i.wire() for i in session.history]
    )


async def test_resume_keeps_the_item_and_sends_it_as_before(tmp_path: Path) -> None:
    first, _ = await run_search_turn(tmp_path, SEARCH)
    lines = next((tmp_path / "s").rglob("*.jsonl")).read_text().splitlines()
    saved = [json.loads(line) for line in lines]
    kept = [r["item"] for r in saved if r.get("type") == "item"]
    assert SEARCH in kept  # whole, sources too: a resumed card shows them
    with ScriptedResponsesServer() as server:
        again = Session(config_for(tmp_path, server.base_url))
        continue_in(again, load_resume(tmp_path / "s", first.thread_id))
        await again.run_turn("and then?")
        await again.aclose()
    sent = [i for i in server.requests[0]["input"] if i.get("type") == "web_search_call"]
    assert sent == golden("call_round_trip")["extra_input_items"]
    assert history_text([i.wire() for i in again.history]).count(SOURCE) == 1
