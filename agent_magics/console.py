"""The terminal front end: approvals asked on stdin, events told on stderr.

Shared by ``agent-magics exec``, ``agent-magics demo`` and ``%%agent`` in terminal
IPython. Every line made of text from the model, tools or servers goes through
:func:`~agent_magics.termsafe.terminal_safe`: escape sequences never reach the terminal.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TextIO

from agent_magics.events import (
    ApprovalDecided,
    Event,
    McpServerFailed,
    McpServerReady,
    RetryScheduled,
    ToolCallFinished,
    ToolCallProposed,
    TurnDiff,
)
from agent_magics.termsafe import terminal_safe
from agent_magics.tools.approval import ApprovalRequest, Approver, ReviewDecision

QUESTION_FALLBACK = "Allow this call?"
ANSWERS = {"y": "approved", "a": "approved_for_session", "q": "abort"}
MAX_ARGUMENTS_SHOWN = 200  # characters of a tool call's arguments in its report line


def question(request: ApprovalRequest) -> str:
    """The question a terminal asks, with the one-letter answers it takes."""
    session = "  [a] approve for session" if request.remember_allowed else ""
    return (
        f"\n{request.reason or QUESTION_FALLBACK}\n  {request.subject()}\n"
        f"[y] approve{session}  [n] deny  [q] abort turn: "
    )


def answer(request: ApprovalRequest, letter: str) -> ReviewDecision:
    """A one-letter terminal answer as a decision; anything else denies."""
    value = ANSWERS.get(letter.strip().lower()[:1])
    if value == "approved_for_session" and not request.remember_allowed:
        value = None
    return ReviewDecision(value) if value else ReviewDecision.DENIED


def read_answer(text: str) -> str:
    """Ask ``text`` on stderr; the first letter of the line typed ("n" when stdin fails;
    "" at its end, which denies)."""
    sys.stderr.write(terminal_safe(text))
    sys.stderr.flush()
    try:
        return sys.stdin.readline().strip().lower()[:1]
    except (OSError, ValueError):
        return "n"


def stdin_approver() -> Approver:
    """Ask on stdin: y approve, a approve for session, n deny, q abort the turn."""

    async def ask(request: ApprovalRequest) -> ReviewDecision:
        return answer(request, await asyncio.to_thread(read_answer, question(request)))

    return ask


def say(text: str, file: TextIO | None = None) -> None:
    """Print a line made of text from the model, tools or servers (stderr by default)."""
    print(terminal_safe(text), file=file or sys.stderr)


def report(event: Event) -> None:
    """One line on stderr for each event a terminal user follows a turn by."""
    if isinstance(event, ToolCallProposed):
        args = event.arguments
        if len(args) > MAX_ARGUMENTS_SHOWN:
            args = args[:MAX_ARGUMENTS_SHOWN] + "…"
        say(f"tool {event.tool_name} {args}")
    elif isinstance(event, ToolCallFinished):
        status = "ok" if event.success else "failed"
        say(f"tool {event.tool_name} {status} in {event.duration_s:.2f}s")
    elif isinstance(event, ApprovalDecided):
        how = " (remembered for the session)" if event.cached else ""
        say(f"approval {event.decision.value}{how}")
    elif isinstance(event, RetryScheduled):
        say(f"retry {event.attempt} in {event.delay_s:.1f}s: {event.reason}")
    elif isinstance(event, McpServerFailed):
        log = f" (log: {event.log_path})" if event.log_path else ""
        say(f"mcp server {event.server} failed: {event.reason}{log}")
    elif isinstance(event, McpServerReady):
        say(f"mcp server {event.server} ready: {', '.join(event.tools)}")
    elif isinstance(event, TurnDiff):
        changed = ", ".join(f"{f.path} ({f.status})" for f in event.files)
        say(f"files changed: {changed}")
