"""A scripted parent that spawns a helper and sets a goal in one response: the requests
after it carry create_goal's ``goal_objective`` output, which answers no call, and the
test helpers that read tool outputs by call id skip it (a real session, a scripted model
on 127.0.0.1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_magics.testing import ConversationsServer, function_call, message
from tests.helpers.agents import agent_call, deciding, outputs, spawned_ids
from tests.helpers.sessions import session_for

PARENT, CHILD = "PARENT: delegate and set a goal", "CHILD: do the work"


def parent(body: dict[str, Any]) -> list[dict[str, Any]]:
    said = outputs(body)
    if "s1" not in said:
        goal = function_call("create_goal", {"objective": "ship it"}, "g1")
        return [agent_call("spawn_agent", {"message": CHILD}, "s1"), goal]
    if "w1" not in said:
        return [agent_call("wait_agent", {"targets": spawned_ids(body, "s1")}, "w1")]
    return [message("all done")]


async def test_a_parent_that_sets_a_goal_and_waits_on_a_helper(tmp_path: Path) -> None:
    scripts = {PARENT: deciding(parent), CHILD: [[message("child finished")]]}
    with ConversationsServer(scripts) as server:
        session = session_for(tmp_path, server.base_url, request_max_retries=0)
        result = await session.run_turn(PARENT)
        await session.aclose()
    assert result.final_text == "all done"
    last = server.requests.index(server.by_conversation[PARENT][-1])
    said = server.outputs(last)
    assert set(said) == {"s1", "g1", "w1"}  # the goal_objective output is left out
    assert "goal_objective" in json.dumps(server.requests[last]["input"])
    [status] = json.loads(said["w1"])["status"].values()
    assert status == {"completed": "child finished"}
