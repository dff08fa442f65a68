"""Sub-agents in the session file: a real session with a child that runs a command, its
file read back and verified, resumed (the parent's history with the child's results
goes to the model again) and exported (the child's transcript inside the spawn card)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_magics.store import read_session
from agent_magics.store.paths import sessions_folder
from agent_magics.store.recorder import SessionRecorder
from agent_magics.store.resume import continue_in, load_resume
from agent_magics.testing import ConversationsServer, Turn, function_call, message
from agent_magics.transcript.export import render, stored_document
from tests.helpers.sessions import KEY, config_for, session_for

PARENT, CHILD, AGAIN = "PARENT: delegate", "CHILD: count the files", "PARENT: and then?"


def agent_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return function_call(name, arguments, call_id) | {"namespace": "multi_agent_v1"}


def wait_on_spawned(body: dict[str, Any]) -> list[dict[str, Any]]:
    said = {i["call_id"]: i["output"] for i in body["input"] if i["type"] == "function_call_output"}
    agent_id = json.loads(said["s1"])["agent_id"]
    return [agent_call("wait_agent", {"targets": [agent_id]}, "w1")]


async def test_children_are_saved_resumed_and_exported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    ws.mkdir()
    command = {"cmd": f"echo child-ran {KEY}"}
    scripts: dict[str, list[Turn]] = {
        PARENT: [[agent_call("spawn_agent", {"message": CHILD}, "s1")], wait_on_spawned],
        CHILD: [[function_call("exec_command", command, "c1")], [message("three files")]],
        AGAIN: [[message("as the child said")]],
    }
    settings: dict[str, Any] = {"shell_type": "unified_exec", "approval_policy": "never"}
    with ConversationsServer(scripts, final_text="parent done") as server:
        config = config_for(ws, server.base_url, allow_login_shell=False, **settings)
        session = session_for(ws, server.base_url, allow_login_shell=False, **settings)
        folder = sessions_folder(config) or tmp_path
        recorder = SessionRecorder(session, folder)
        await session.run_turn(PARENT)
        await session.aclose()
        recorder.close()

        path = folder / f"{session.thread_id}.jsonl"
        loaded = read_session(path)
        assert loaded.verified and loaded.damaged is None  # the new records are sealed too
        kinds = [r["type"] for r in loaded.records]
        assert {"agent_spawned", "agent_status", "agent_item"} <= set(kinds)
        assert KEY.encode() not in path.read_bytes()  # a child's output is redacted too
        assert [i.wire() for i in loaded.history] == [i.wire() for i in session.history]

        resumed = session_for(ws, server.base_url, allow_login_shell=False, **settings)
        continue_in(resumed, load_resume(folder, session.thread_id))
        await resumed.run_turn(AGAIN)
        await resumed.aclose()
    [again] = server.by_conversation[AGAIN]
    outputs = [i["output"] for i in again["input"] if i["type"] == "function_call_output"]
    assert any('{"completed":"three files"}' in o for o in outputs)  # the child's result

    doc = stored_document(path)
    markdown = render(doc, ".md")
    assert "child-ran" in markdown and "three files" in markdown
    nickname = json.loads(outputs[0])["nickname"]
    for suffix in (".md", ".html", ".ipynb"):
        text = render(doc, suffix)
        assert f"sub-agent {nickname}" in text and "child-ran" in text, suffix
    del markdown
    assert doc.skipped == 0
