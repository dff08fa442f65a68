"""The conformance server's script per conversation (tests/conformance/agents.py), over real
HTTP on 127.0.0.1: a sub-agent's requests interleave with its parent's, so each request must be
answered from the script of the conversation it belongs to, or the recordings of Codex's
sub-agents would show answers meant for another agent. Also checks the recorded sub-agent
cases are complete, since the sub-agent work reads them as its facts."""

from __future__ import annotations

import http.client
import importlib
import json
import socket
from pathlib import Path
from typing import Any

from tests.helpers.conformance import harness, mock_server
from tests.helpers.paths import CONFORMANCE as CONF

agents: Any = importlib.import_module("agents")
MULTI = CONF / "extra-0.171" / "multi_agent"


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _post(port: int, inp: list[dict[str, Any]]) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.connect()
    assert conn.sock is not None
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.request("POST", "/v1/responses", json.dumps({"input": inp}), {"x-openai-subagent": "t"})
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    return resp.status, body


def _items(sse: str) -> list[dict[str, Any]]:
    events = [json.loads(line[6:]) for line in sse.splitlines() if line.startswith("data: ")]
    return [e["item"] for e in events if e["type"] == "response.output_item.done"]


def _spawn(cid: str, args: dict[str, Any]) -> dict[str, Any]:
    item = {"type": "function_call", "id": f"fc_{cid}", "call_id": cid, "name": "spawn_agent"}
    item["arguments"] = json.dumps(args)
    return {"call_id": cid, "type": "raw", "item": item}


def test_each_conversation_gets_its_own_script(tmp_path: Path) -> None:
    wait = {"targets": ["{{agent:s1}}"]}
    case = {
        "prompt": "PARENT",
        "agents": {
            "PARENT": [[_spawn("s1", {"message": "CHILD"})], [_spawn("w1", wait)]],
            "CHILD": [{"http_status": 400}, {"broken": True}, {"final": "child answer"}],
        },
    }
    provider = agents.make_agents_provider(
        case,
        str(tmp_path),
        dict(harness.DEFAULT_CONFIG),
        harness.build_turns,
        harness.make_turn_provider,
    )
    server = mock_server.MockResponsesServer(provider).start()
    try:
        env = _user("<environment_context>x</environment_context>")
        status, sse = _post(server.port, [env, _user("PARENT")])
        assert (status, [i["call_id"] for i in _items(sse)]) == (200, ["s1"])
        status, body = _post(server.port, [env, _user("CHILD")])
        assert status == 400 and "scripted failure" in body
        status, sse = _post(server.port, [env, _user("CHILD")])
        assert status == 200 and "response.created" in sse and "response.completed" not in sse
        # a forked child carries its parent's prompt first: its own message decides
        status, sse = _post(server.port, [env, _user("PARENT"), _user("CHILD")])
        assert _items(sse)[0]["content"][0]["text"] == "child answer"
        spawned = {"type": "function_call_output", "call_id": "s1"}
        spawned["output"] = json.dumps({"agent_id": "0192-abc", "nickname": "N"})
        status, sse = _post(server.port, [env, _user("PARENT"), spawned])
        assert json.loads(_items(sse)[0]["arguments"]) == {"targets": ["0192-abc"]}
        status, sse = _post(server.port, [env, _user("PARENT")])
        assert _items(sse)[0]["content"][0]["text"] == "PARENT: done"
        status, sse = _post(server.port, [env, _user("STRANGER")])
        assert _items(sse)[0]["content"][0]["text"] == "unrouted: done"
    finally:
        server.stop()
    got = agents.collect_conversations(case, server.requests, provider.routed, lambda o: o)
    assert got["request_order"] == [
        "PARENT",
        "CHILD",
        "CHILD",
        "CHILD",
        "PARENT",
        "PARENT",
        "unrouted",
    ]
    assert [r["turn"] for r in got["conversations"]["CHILD"]] == [0, 1, 2]
    assert got["conversations"]["PARENT"][1]["new_input"] == [spawned]
    assert got["conversations"]["PARENT"][0]["headers"] == {"x-openai-subagent": "t"}


def test_every_sub_agent_case_was_recorded_from_codex_0_171() -> None:
    cases = sorted((MULTI / "cases").glob("*.json"))
    assert len(cases) >= 29
    for path in cases:
        golden = json.loads((MULTI / "goldens" / path.name).read_text())
        assert golden["codex_exit_code"] == 0 and not golden["timed_out"], path.name
        if "agents" in json.loads(path.read_text()):
            assert golden["codex_version"] == "codex-cli 0.171.0", path.name
            assert set(golden["conversations"]) <= {*json.loads(path.read_text())["agents"]}
