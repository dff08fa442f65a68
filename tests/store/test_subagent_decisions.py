"""A sub-agent's past read back as it happened: a real session whose child asks to run
a command outside the sandbox and is denied (no one approves), its file exported and
its history printed, each showing the child's call denied, not done; a child whose
model server refuses it reads errored in our words in both, the model Codex's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_magics.store.agent_records import tree_records
from agent_magics.store.paths import sessions_folder
from agent_magics.store.recorder import SessionRecorder
from agent_magics.testing import ConversationsServer, HttpFailure, Turn, function_call, message
from agent_magics.transcript.export import render, stored_document
from agent_magics.transcript.history import history_text
from agent_magics.transcript.model import ToolBlock, Transcript
from tests.helpers.sessions import config_for, session_for

PARENT, CHILD = "PARENT: delegate", "CHILD: write outside"
ESCALATED = {
    "cmd": "echo hi > ../outside.txt",
    "sandbox_permissions": "require_escalated",
    "justification": "to write outside",
}


def agent_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return function_call(name, arguments, call_id) | {"namespace": "multi_agent_v1"}


def wait_on_spawned(body: dict[str, Any]) -> list[dict[str, Any]]:
    said = {i["call_id"]: i["output"] for i in body["input"] if i["type"] == "function_call_output"}
    agent_id = json.loads(said["s1"])["agent_id"]
    return [agent_call("wait_agent", {"targets": [agent_id]}, "w1")]


def child_calls(turns: list[Transcript]) -> list[ToolBlock]:
    spawn = [b for t in turns for b in t.blocks if isinstance(b, ToolBlock) and b.agents]
    return [b for r in spawn[0].agents for b in r.transcript.blocks if isinstance(b, ToolBlock)]


async def test_a_childs_denied_command_reads_denied_in_exports_and_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    ws.mkdir()
    scripts: dict[str, list[Turn]] = {
        PARENT: [[agent_call("spawn_agent", {"message": CHILD}, "s1")], wait_on_spawned],
        CHILD: [[function_call("exec_command", ESCALATED, "c1")], [message("it was refused")]],
    }
    settings: dict[str, Any] = {"shell_type": "unified_exec", "approval_policy": "on-request"}
    with ConversationsServer(scripts, final_text="parent done") as server:
        config = config_for(ws, server.base_url, allow_login_shell=False, **settings)
        session = session_for(ws, server.base_url, allow_login_shell=False, **settings)
        folder = sessions_folder(config) or tmp_path
        recorder = SessionRecorder(session, folder)
        await session.run_turn(PARENT)
        items = [i.wire() for i in session.history]
        history = history_text(items, agents=tree_records(session.agents))
        await session.aclose()
        recorder.close()
    assert not (tmp_path / "outside.txt").exists()

    doc = stored_document(folder / f"{session.thread_id}.jsonl")
    assert doc.skipped == 0
    [call] = child_calls(doc.turns)
    assert call.status == "denied" and call.decision is not None
    markdown = render(doc, ".md")
    line = next(x for x in markdown.splitlines() if "outside.txt" in x and "·" in x)
    assert "denied" in line and "· done" not in line, line
    for suffix in (".html", ".ipynb"):
        assert "denied" in render(doc, suffix), suffix
    line = next(x for x in history.splitlines() if "outside.txt" in x)
    assert "denied" in line, history


async def test_a_failed_childs_error_reads_in_our_words_in_history_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    ws.mkdir()
    body = json.dumps({"error": {"message": "no such model here", "type": "invalid_request"}})
    scripts: dict[str, list[Turn]] = {
        PARENT: [[agent_call("spawn_agent", {"message": CHILD}, "s1")], wait_on_spawned],
        CHILD: [HttpFailure(400, body)] * 6,
    }
    settings: dict[str, Any] = {"shell_type": "unified_exec"}
    with ConversationsServer(scripts, final_text="parent done") as server:
        config = config_for(ws, server.base_url, allow_login_shell=False, **settings)
        session = session_for(ws, server.base_url, allow_login_shell=False, **settings)
        folder = sessions_folder(config) or tmp_path
        recorder = SessionRecorder(session, folder)
        await session.run_turn(PARENT)
        items = [i.wire() for i in session.history]
        history = history_text(items, agents=tree_records(session.agents))
        # (read before the session closes: closing shuts the helper down)
        markdown = render(stored_document(folder / f"{session.thread_id}.jsonl"), ".md")
        await session.aclose()
        recorder.close()
    ours = "The model server rejected the request (HTTP 400)"
    told = [i["output"] for i in items if i.get("call_id") == "w1" and "output" in i]
    assert told and ours not in told[0] and "errored" in told[0]  # the model: Codex's text
    assert ours in markdown
    assert ours in history and '"invalid_request"' not in history, history


async def test_a_message_sent_to_a_child_shows_in_its_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    ws.mkdir()
    more = "AND ALSO: count the lines"

    def send_then_wait(body: dict[str, Any]) -> list[dict[str, Any]]:
        said = {i["call_id"]: i["output"] for i in body["input"] if "output" in i}
        agent_id = json.loads(said["s1"])["agent_id"]
        return [
            agent_call("send_input", {"target": agent_id, "message": more}, "i1"),
            agent_call("wait_agent", {"targets": [agent_id]}, "w2"),
        ]

    scripts: dict[str, list[Turn]] = {
        PARENT: [
            [agent_call("spawn_agent", {"message": CHILD}, "s1")],
            wait_on_spawned,
            send_then_wait,
        ],
        CHILD: [[message("first answer")], [message("second answer")]],
    }
    settings: dict[str, Any] = {"shell_type": "unified_exec"}
    live = Transcript()
    with ConversationsServer(scripts, final_text="parent done") as server:
        config = config_for(ws, server.base_url, allow_login_shell=False, **settings)
        session = session_for(ws, server.base_url, allow_login_shell=False, **settings)
        folder = sessions_folder(config) or tmp_path
        recorder = SessionRecorder(session, folder)
        session.subscribe(live.apply)
        await session.run_turn(PARENT)
        items = [i.wire() for i in session.history]
        history = history_text(items, agents=tree_records(session.agents))
        await session.aclose()
        recorder.close()
    sent = f"Message sent to it: {more}"
    [run] = [r for b in live.blocks if isinstance(b, ToolBlock) for r in b.agents]
    texts = [getattr(b, "text", "") for b in run.transcript.blocks]
    assert texts.index(sent) < texts.index("second answer"), texts  # the live card's
    doc = stored_document(folder / f"{session.thread_id}.jsonl")
    for suffix in (".md", ".html", ".ipynb"):
        text = render(doc, suffix)
        assert text.index("first answer") < text.index(more) < text.index("second answer")
    lines = history.splitlines()
    assert lines.index(f"        sent: {more}") < lines.index("        agent: second answer")
