"""A sub-agent has its own window: a helper whose conversation outgrows the limit is
compacted in its own conversation, through its own summary request, and goes on; the
parent's conversation, small, is not touched. Real sessions against a scripted model on
127.0.0.1 that counts each request's tokens (four bytes each) as usage, one script per
conversation; a real command under the sandbox makes the helper's long output."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_magics.events import AgentEvent, ContextCompacted, Event
from agent_magics.testing import conversation_of, function_call, message
from tests.helpers.scenario_server import ScenarioServer, usage
from tests.helpers.sessions import session_for

PARENT, CHILD = "PARENT: delegate the counting", "CHILD: count to three thousand"
SUMMARY = "SUMMARY: the helper printed the numbers up to 3000."
LIMIT = 2_000  # tokens: the helper passes it with its long output (~4,700), the parent never

Script = list[Callable[[dict[str, Any]], list[dict[str, Any]]]]


def agent_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return function_call(name, arguments, call_id) | {"namespace": "multi_agent_v1"}


def outputs(body: dict[str, Any]) -> dict[str, str]:
    return {i["call_id"]: i["output"] for i in body["input"] if i["type"] == "function_call_output"}


def spawned(body: dict[str, Any]) -> str:
    agent_id: str = json.loads(outputs(body)["s1"])["agent_id"]
    return agent_id


def asks_for_summary(body: dict[str, Any]) -> bool:
    return not body.get("tools")


class Conversations:
    """Each conversation's requests, and the answer its script gives the next one."""

    def __init__(self, scripts: dict[str, Script]) -> None:
        self.scripts = scripts
        self.seen: dict[str, list[dict[str, Any]]] = {k: [] for k in scripts}
        self.lock = threading.Lock()

    def reply(self, index: int, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            key = conversation_of(body, list(self.scripts))
            assert key is not None, body
            self.seen[key].append(body)
            step = self.scripts[key][len(self.seen[key]) - 1]
        size = len(json.dumps([body.get("instructions"), body.get("input")])) // 4
        return {"items": step(body), "usage": usage(size)}


async def test_a_helper_compacts_in_its_own_window(tmp_path: Path) -> None:
    count = function_call("exec_command", {"cmd": "seq 1 3000"}, "c1")
    conversations = Conversations(
        {
            PARENT: [
                lambda body: [agent_call("spawn_agent", {"message": CHILD}, "s1")],
                lambda body: [agent_call("wait_agent", {"targets": [spawned(body)]}, "w1")],
                lambda body: [message("The helper counted.")],
            ],
            CHILD: [
                lambda body: [count],
                lambda body: [function_call("exec_command", {"cmd": "echo more"}, "c2")],
                lambda body: [message(SUMMARY)],
                lambda body: [message("Counted to 3000.")],
            ],
        }
    )
    server = ScenarioServer(conversations.reply)
    seen: list[Event] = []
    try:
        session = session_for(
            tmp_path,
            server.base_url,
            shell_type="unified_exec",
            allow_login_shell=False,
            approval_policy="never",
            model_auto_compact_token_limit=LIMIT,
        )
        session.subscribe(seen.append)
        result = await session.run_turn(PARENT)
        await session.aclose()
    finally:
        server.close()
    assert result.final_text == "The helper counted."
    child, parent = conversations.seen[CHILD], conversations.seen[PARENT]
    # the response to the long output says the helper's window passed the limit: its
    # conversation is compacted before its next request
    assert [asks_for_summary(b) for b in child] == [False, False, True, False]
    assert "2999" in json.dumps(child[2]["input"])  # the summary request saw it all
    last = json.dumps(child[3]["input"])
    assert SUMMARY in last and "2999" not in last  # the helper went on from its summary
    assert not any(asks_for_summary(b) for b in parent)
    theirs = [e.event for e in seen if isinstance(e, AgentEvent)]
    [compacted] = [e for e in theirs if isinstance(e, ContextCompacted)]
    assert compacted.phase == "mid_turn" and compacted.summary == SUMMARY
    assert not [e for e in seen if isinstance(e, ContextCompacted)]  # none of the parent's own
    assert "Counted to 3000." in outputs(parent[-1])["w1"]
