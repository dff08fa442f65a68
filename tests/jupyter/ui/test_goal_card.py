"""The live cell follows the goal: a get_goal card shows the goal as it is, and the cell
says so when a response spends the goal's token budget (a real session on a scripted
model on 127.0.0.1, drawn by the live transcript view; no kernel, no browser)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_magics.jupyter.ui.throttle import loop_scheduler
from agent_magics.jupyter.ui.widgets import TranscriptView
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.sessions import session_for

SCRIPT = [  # each scripted response uses 15 tokens: the third spends the budget of 20
    [function_call("create_goal", {"objective": "tidy <up>", "token_budget": 20}, "g1")],
    [function_call("get_goal", {}, "g2")],
    [function_call("get_goal", {}, "g3")],
    [message("Out of budget.")],
]


async def test_the_cell_shows_the_goal_as_it_is_up_to_its_spent_budget(tmp_path: Path) -> None:
    view = TranscriptView(loop_scheduler(asyncio.get_running_loop()))
    with ScriptedResponsesServer(SCRIPT) as server:
        session = session_for(tmp_path, server.base_url)
        session.subscribe(view)
        await session.run_turn("work on a goal")
        await session.aclose()
    asked = view.cards["g3"].extra.children[0].value
    assert asked.startswith("<div>🎯 <b>Goal</b> (active): tidy &lt;up&gt; · 15 of 20 tokens · ")
    shown = [getattr(child, "value", "") for child in view.body.children]
    spent = [v for v in shown if "goal (budget spent): tidy &lt;up&gt; · 30 of 20 tokens" in v]
    assert len(spent) == 1, shown
