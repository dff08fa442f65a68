"""Sub-agents in the session file: their spawns, statuses and history items.

The parent's history already holds what resume needs (a child's answers are the
outputs of the parent's spawn_agent and wait_agent calls). These records are for
reading the session back: exports and ``%agent history`` show each child's own
transcript inside the card of the call that spawned it. They are written through the
session's log like every other line (redacted, sealed), so reading the file checks them
as it checks the rest. ``path`` is the chain of agents above the one recorded (empty
for the main agent's own children).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent_magics.events import (
    AgentEvent,
    AgentSpawned,
    AgentStatusChanged,
    ApprovalDecided,
    Event,
)

if TYPE_CHECKING:
    from agent_magics.agent.session import Session
    from agent_magics.agent.subagents import AgentNode

AGENT_SPAWNED, AGENT_STATUS, AGENT_ITEM = "agent_spawned", "agent_status", "agent_item"
CALLS = ("function_call", "custom_tool_call", "local_shell_call")
AGENT_DECISION = "agent_decision"  # a child's approval answer: its history does not hold it


def unwrapped(event: Event) -> tuple[list[str], Event]:
    """The agents an event came through, and the event itself."""
    path: list[str] = []
    while isinstance(event, AgentEvent):
        path.append(event.agent_id)
        event = event.event
    return path, event


class AgentRecords:
    """Turns the parent's sub-agent events into records, and writes each child's history
    items as they join it (``write`` adds a record to the session file)."""

    def __init__(self, session: Session, write: Callable[[dict[str, Any]], None]) -> None:
        self.session = session
        self.write = write
        self._written: dict[str, int] = {}

    def on_event(self, event: Event) -> None:
        path, inner = unwrapped(event)
        if isinstance(inner, AgentSpawned):
            self.write(
                {
                    "type": AGENT_SPAWNED,
                    "path": path,
                    "call_id": inner.call_id,
                    "agent_id": inner.agent_id,
                    "nickname": inner.nickname,
                    "depth": inner.depth,
                    "prompt": inner.prompt,
                }
            )
            self._follow(path, inner.agent_id)
        elif isinstance(inner, AgentStatusChanged):
            record = {"type": AGENT_STATUS, "path": path, "agent_id": inner.agent_id}
            self.write(record | {"status": inner.status, "final_text": inner.final_text})
            self._follow(path, inner.agent_id)  # a resumed child has a new session
            self._sync(path, inner.agent_id)
        elif isinstance(inner, ApprovalDecided) and path:
            # As the parent's ``decision`` lines: without it a denied call reads "done".
            self._sync(path[:-1], path[-1])  # its call first, so the answer finds it
            self.write(decision_record(path[:-1], path[-1], inner))

    def _follow(self, path: list[str], agent_id: str) -> None:
        child = self.session.agents.control.open.get(agent_id)
        if child is None or child.session is None:
            return
        child.session.on_history = lambda: self._sync(path, agent_id)

    def _sync(self, path: list[str], agent_id: str) -> None:
        child = self.session.agents.control.open.get(agent_id)
        if child is None or child.session is None:
            return
        history = child.session.history
        start = self._written.get(agent_id, child.recorded)  # (a resumed child's are in)
        for item in history[start:]:
            record = {"type": AGENT_ITEM, "path": path, "agent_id": agent_id}
            self.write(record | {"item": item.wire()})
        self._written[agent_id] = len(history)


def decision_record(path: list[str], agent_id: str, decided: ApprovalDecided) -> dict[str, Any]:
    """A child's answer to one of its calls' approvals, as the parent's are written."""
    by = "policy" if decided.cached else "user"
    ident = {"type": AGENT_DECISION, "path": path, "agent_id": agent_id}
    return ident | {"call_id": decided.call_id, "decision": decided.decision.value, "by": by}


def tree_records(node: AgentNode, path: list[str] | None = None) -> list[dict[str, Any]]:
    """The records a live session's sub-agents would have in its file, from the agents
    themselves (``%agent history`` nests them under their spawn calls, as exports do):
    each child's spawn, its history items, its status, then its own children's."""
    path = path or []
    records: list[dict[str, Any]] = []
    for child in node.kept():
        ident = {"path": path, "agent_id": child.agent_id}
        spawned = {"call_id": child.call_id, "nickname": child.nickname, "prompt": child.prompt}
        records.append({"type": AGENT_SPAWNED, **ident, **spawned, "depth": node.depth + 1})
        history = child.session.history if child.session is not None else child.saved
        for item in history:
            records.append({"type": AGENT_ITEM, **ident, "item": item.wire()})
            decided = child.decided.get(str(getattr(item, "call_id", "")))
            if decided is not None and item.wire().get("type") in CALLS:  # after its call
                records.append(decision_record(path, child.agent_id, decided))
        status = {"status": child.status, "final_text": child.shown_text}  # as the file
        records.append({"type": AGENT_STATUS, **ident, **status})
        if child.node is not None:
            records.extend(tree_records(child.node, [*path, child.agent_id]))
    return records
