"""The thread's goal as a card shows it, beside the plan: objective, status, budget, usage.

One wording for the live cell, the saved notebook, the Markdown export and the terminal,
so a goal reads the same wherever it is seen. The objective is the model's text: it is
made visible (no hidden characters) and escaped for HTML; Markdown gets it as inline code.
"""

from __future__ import annotations

import html

from agent_magics.events import GoalUpdated
from agent_magics.text.markdown import inline_code
from agent_magics.text.visible import visible

STATUS_WORDS = {
    "active": "active",
    "paused": "paused",
    "blocked": "blocked",
    "usageLimited": "stopped at the usage limit",
    "budgetLimited": "budget spent",
    "complete": "complete",
}
STATUS_COLORS = {"complete": "#1a7f37", "blocked": "#cf222e", "budgetLimited": "#9a6700"}


def usage_words(goal: GoalUpdated) -> str:
    """``1,200 of 5,000 tokens · 42s``: what the goal has used (and of what budget)."""
    used = f"{goal.tokens_used:,}"
    tokens = f"{used} of {goal.token_budget:,} tokens" if goal.token_budget else f"{used} tokens"
    return f"{tokens} · {goal.seconds_used}s"


def status_words(goal: GoalUpdated) -> str:
    return STATUS_WORDS.get(goal.status, visible(goal.status))


def goal_line(goal: GoalUpdated) -> str:
    """One plain line (the terminal's)."""
    return f"goal ({status_words(goal)}): {visible(goal.objective)} · {usage_words(goal)}"


def goal_markdown(goal: GoalUpdated) -> str:
    return (
        f"**Goal** ({status_words(goal)}): {inline_code(visible(goal.objective))} · "
        f"{usage_words(goal)}"
    )


def goal_html(goal: GoalUpdated) -> str:
    color = STATUS_COLORS.get(goal.status)
    status = html.escape(status_words(goal))
    shown = f'<span style="color:{color}">{status}</span>' if color else status
    objective = html.escape(visible(goal.objective))
    return f"<div>🎯 <b>Goal</b> ({shown}): {objective} · {usage_words(goal)}</div>"
