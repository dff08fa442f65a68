"""The goal a create_goal or update_goal call left, beside the plan: in the saved
notebook's HTML, the Markdown export and the terminal's lines, from a real session's
events (a scripted model on 127.0.0.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.transcript.markdown import transcript_markdown
from agent_magics.transcript.model import Transcript
from agent_magics.transcript.static_html import transcript_html
from agent_magics.transcript.terminal import Style, TerminalLines
from tests.helpers.sessions import session_for

SCRIPT: list[Any] = [
    [function_call("create_goal", {"objective": "make `x` <b>", "token_budget": 50}, "g1")],
    [function_call("update_goal", {"status": "complete"}, "g2")],
    [message("Done.")],
]


async def goal_transcript(
    tmp_path: Path, script: list[Any] = SCRIPT
) -> tuple[Transcript, list[str]]:
    transcript = Transcript()
    terminal = TerminalLines(Style(False), interactive=False)
    lines: list[str] = []

    def show(event: object) -> None:
        lines.extend(terminal.lines(transcript.apply(event)))  # type: ignore[arg-type]

    with ScriptedResponsesServer(script) as server:
        session = session_for(tmp_path, server.base_url)
        session.subscribe(show)
        await session.run_turn("work on a goal")
        await session.aclose()
    return transcript, lines


async def test_exports_and_terminal_show_the_goal(tmp_path: Path) -> None:
    transcript, lines = await goal_transcript(tmp_path)
    md = transcript_markdown(transcript)
    assert "**Goal** (active): ``make `x` <b>`` · 0 of 50 tokens · 0s" in md
    assert "**Goal** (complete): ``make `x` <b>`` · 15 of 50 tokens · 0s" in md
    html = transcript_html(transcript)
    assert "🎯 <b>Goal</b> (active): make `x` &lt;b&gt; · 0 of 50 tokens · 0s" in html
    complete = '<span style="color:#1a7f37">complete</span>'
    assert f"🎯 <b>Goal</b> ({complete}): make `x` &lt;b&gt; · 15 of 50 tokens" in html
    assert "  goal (active): make `x` <b> · 0 of 50 tokens · 0s" in lines
    assert "  goal (complete): make `x` <b> · 15 of 50 tokens · 0s" in lines


SPENDING: list[Any] = [
    [function_call("create_goal", {"objective": "tidy up", "token_budget": 20}, "b1")],
    [function_call("get_goal", {}, "b2")],
    [function_call("get_goal", {}, "b3")],
    [message("Out of budget.")],
]


async def test_the_cell_follows_the_goal_to_its_spent_budget(tmp_path: Path) -> None:
    # each scripted response uses 15 tokens: the third spends the budget of 20
    transcript, lines = await goal_transcript(tmp_path, SPENDING)
    shown = [line for line in lines if line.startswith("  goal (active): tidy up · ")]
    assert [line.split(" · ")[1] for line in shown] == [  # create_goal's, get_goal's cards
        "0 of 20 tokens",
        "0 of 20 tokens",
        "15 of 20 tokens",
    ]
    spent = [line for line in lines if "goal (budget spent): tidy up · 30 of 20 tokens" in line]
    assert len(spent) == 1, lines
    assert "goal (budget spent): tidy up · 30 of 20 tokens" in transcript_markdown(transcript)
    assert "goal (budget spent): tidy up · 30 of 20 tokens" in transcript_html(transcript)
