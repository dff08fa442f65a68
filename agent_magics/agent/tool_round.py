"""One round of a turn's tool calls: announced, the folder scanned first when a call may
change it (for the turn's diff and undo), run side by side where the tools allow, and
their outputs (redacted, truncated to the turn's policy) and the notes they left for the
model joined to the history, also when a stop cut the round short."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent_magics.agent.tool_outputs import output_items
from agent_magics.protocol.items import Message
from agent_magics.tools.context import ToolOutput, TurnContext
from agent_magics.tools.router import ToolCall
from agent_magics.tools.runtime import CallsInterrupted, run_calls

if TYPE_CHECKING:
    from agent_magics.agent.session_parts import TurnSession


async def run_round(session: TurnSession, calls: list[ToolCall], turn: TurnContext) -> None:
    for call in calls:
        session.router.announce(call)
    names = [c.name for c in calls]
    if session.changes.needs_scan(names):  # the folder as it was, before a command runs
        await asyncio.to_thread(session.changes.scan)

    def job(call: ToolCall) -> Callable[[], Any]:
        return lambda: session.router.dispatch(call, turn)

    jobs = [(c.name, session.router.is_parallel(c), job(c)) for c in calls]
    try:
        outputs = await run_calls(jobs)
    except CallsInterrupted as stopped:
        _record(session, calls, stopped.outputs, turn)
        raise stopped.cause from None
    _record(session, calls, outputs, turn)


def _record(
    session: TurnSession, calls: list[ToolCall], outputs: list[ToolOutput], turn: TurnContext
) -> None:
    redact, policy = session.redact.output, turn.truncation
    session.history.extend(output_items(calls, outputs, redact, policy, session.services))
    take_pending(session)


def take_pending(session: TurnSession) -> None:
    """Notes for the model (a warning, a sub-agent's end) join the history now."""
    pending = session.services.pending_user_messages
    while pending:
        session.history.append(Message.user(pending.pop(0)))
    if session.on_history is not None:
        session.on_history()
