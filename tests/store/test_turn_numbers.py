"""One count of a conversation's turns: a resumed session's next turn is numbered after
the file's, in the file and in its undo copies alike (the undo folder's ``turn-1`` was
once overwritten by the first turn after a resume, whose tracker counted from 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent_magics.store import read_session
from tests.helpers.scenario_server import ScenarioServer, usage


def write(name: str, n: int) -> dict[str, Any]:
    arguments = json.dumps({"cmd": f"echo {name} > {name}.txt"})
    call = {"type": "function_call", "call_id": f"c{n}", "name": "exec_command"}
    return {"items": [{**call, "arguments": arguments}], "usage": usage(100)}


def answer(text: str) -> dict[str, Any]:
    item = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }
    return {"items": [item], "usage": usage(100)}


def test_a_resumed_turn_is_numbered_after_the_files_turns(tmp_path: Path) -> None:
    replies = iter([write("one", 1), answer("wrote one"), write("two", 2), answer("wrote two")])
    server = ScenarioServer(lambda index, body: next(replies))
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_MAGICS_"))}
    env |= {"HOME": str(home), "OPENAI_API_KEY": "sk-test"}
    base = [sys.executable, "-m", "agent_magics", "exec", "--base-url", server.base_url]
    base += ["-a", "never", "-s", "danger-full-access"]
    try:
        for extra in ([], ["--resume", "last"]):
            run = subprocess.run(
                [*base, *extra, "write a file"], cwd=ws, env=env, capture_output=True, text=True
            )
            assert run.returncode == 0, run.stderr
    finally:
        server.close()
    [session] = (ws / ".agent_magics" / "sessions").glob("*.jsonl")
    records = read_session(session).records
    assert [r["turn"] for r in records if r["type"] == "turn_started"] == [1, 2]
    undo = session.with_suffix(".undo")
    manifests = {p.parent.name: p.read_text() for p in undo.glob("turn-*/manifest.json")}
    assert sorted(manifests) == ["turn-1", "turn-2"]
    assert "one.txt" in manifests["turn-1"] and "two.txt" not in manifests["turn-1"]
    assert "two.txt" in manifests["turn-2"]
