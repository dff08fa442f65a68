"""How a sub-agent is named wherever a transcript shows it: the header of its nested
transcript (the live widget's title, the saved document's summary) and the line that
says how it ended."""

from __future__ import annotations

from agent_magics.transcript.model import AgentRun

STATUS_WORDS = {
    "pending_init": "starting",
    "running": "running",
    "completed": "completed",
    "errored": "errored",
    "shutdown": "shut down",
    "not_found": "not found",
}
TASK_CHARS = 80
"""How much of the task's first line a header shows."""


def status_word(run: AgentRun) -> str:
    return STATUS_WORDS.get(run.status, run.status)


def agent_header(run: AgentRun) -> str:
    """``sub-agent <nickname> · <status> · <first line of its task>``, as plain text."""
    task = run.task_line
    if len(task) > TASK_CHARS:
        task = task[: TASK_CHARS - 1] + "…"
    name = run.nickname or run.agent_id
    parts = [f"sub-agent {name}", status_word(run)]
    if task:
        parts.append(task)
    return " · ".join(parts)


def ending_text(run: AgentRun) -> str | None:
    """What the header cannot hold: an errored agent's error (a completed one's answer
    is in its transcript)."""
    if run.status == "errored" and run.final_text:
        return f"Errored: {run.final_text}"
    return None
