"""The terminal's approval question and one-letter answers (agent-magics exec, IPython)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_magics.console import answer, question
from agent_magics.tools.approval import ApprovalRequest, ReviewDecision

EXEC = ApprovalRequest("c", "exec_command", "exec", Path("."), command=("rm", "-r", "build"))
MCP = ApprovalRequest(
    "c",
    "mcp__git__commit",
    "mcp",
    Path("."),
    reason="The MCP tool may change things.",
    server="git",
    mcp_tool="commit",
    arguments='{"message":"x"}',
    remember_allowed=False,
)


def test_questions_show_what_would_run_and_the_answers_on_offer() -> None:
    assert question(EXEC) == (
        "\nAllow this call?\n  rm -r build\n"
        "[y] approve  [a] approve for session  [n] deny  [q] abort turn: "
    )
    assert question(MCP) == (
        '\nThe MCP tool may change things.\n  git · commit {"message":"x"}\n'
        "[y] approve  [n] deny  [q] abort turn: "
    )


@pytest.mark.parametrize(
    ("request_", "letter", "decision"),
    [
        (EXEC, "y", ReviewDecision.APPROVED),
        (EXEC, " Yes", ReviewDecision.APPROVED),
        (EXEC, "a", ReviewDecision.APPROVED_FOR_SESSION),
        (EXEC, "q", ReviewDecision.ABORT),
        (EXEC, "", ReviewDecision.DENIED),
        (EXEC, "x", ReviewDecision.DENIED),
        (MCP, "a", ReviewDecision.DENIED),  # not on offer for an always-ask tool
        (MCP, "y", ReviewDecision.APPROVED),
    ],
)
def test_answers(request_: ApprovalRequest, letter: str, decision: ReviewDecision) -> None:
    assert answer(request_, letter) is decision
