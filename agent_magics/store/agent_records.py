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

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agent_magics.events import (
    AgentEvent,
    AgentSpawned,
    AgentStatusChanged,
    ApprovalDecided,
    Event,
)

if TYPE_CHECKING:
    from agent_magics.protocol.items import AnyItem

AGENT_SPAWNED, AGENT_STATUS, AGENT_ITEM = "agent_spawned", "agent_status", "agent_item"
CALLS = ("function_call", "custom_tool_call", "local_shell_call")
AGENT_DECISION = "agent_decision"  # a child's approval answer: its history does not hold it


class ChildHistory(Protocol):
    """A sub-agent's session as its records read it: its history, and who is told
    when items join it."""

    history: list[AnyItem]
    on_history: Callable[[], None] | None


class AgentRecord(Protocol):
    """A sub-agent as its records tell it (:class:`~agent_magics.agent.subagents.Child`
    is the one): who it is, the call that spawned it, its history (its session's, or the
    saved one a resume gave back), how much of it the file holds, its approval answers,
    its status and, when a resume_agent call reopened it, that call and how it ended
    before."""

    agent_id: str
    nickname: str
    prompt: str
    call_id: str
    saved: list[AnyItem]
    recorded: int
    decided: dict[str, ApprovalDecided]
    status: str
    shown_text: str | None
    reopened: tuple[str, str, str | None] | None

    @property
    def session(self) -> ChildHistory | None: ...
    @property
    def node(self) -> AgentTree | None: ...
    @property
    def parent(self) -> AgentTree: ...


class OpenAgents(Protocol):
    @property
    def open(self) -> Mapping[str, AgentRecord]: ...


class AgentTree(Protocol):
    """One session's place in its tree of agents (:class:`~agent_magics.agent.subagents.AgentNode`
    is the one): its depth, the tree's open agents by id, and the children it keeps."""

    @property
    def depth(self) -> int: ...
    @property
    def control(self) -> OpenAgents: ...
    def kept(self) -> Sequence[AgentRecord]: ...


class WithAgents(Protocol):
    @property
    def agents(self) -> AgentTree: ...


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

    def __init__(self, session: WithAgents, write: Callable[[dict[str, Any]], None]) -> None:
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


def tree_records(node: AgentTree, path: list[str] | None = None) -> list[dict[str, Any]]:
    """The records a live session's sub-agents would have in its file, from the agents
    themselves (``%agent history`` nests them under their spawn calls, as exports do):
    each child's spawn, its history items, its status, then its own children's. A saved
    child that resume_agent reopened reads as it did: its saved past under the call that
    spawned it, ending as it ended, then its new work under the resume_agent call."""
    path = path or []
    records: list[dict[str, Any]] = []
    for child in node.kept():
        history = child.session.history if child.session is not None else child.saved
        now = (child.status, child.shown_text)
        if child.reopened is not None:
            call_id, *before = child.reopened
            records.extend(_run(path, child, child.call_id, history[: child.recorded], before))
            records.extend(_run(path, child, call_id, history[child.recorded :], now))
        else:
            records.extend(_run(path, child, child.call_id, history, now))
        if child.node is not None:
            records.extend(tree_records(child.node, [*path, child.agent_id]))
    return records


def _run(
    path: list[str],
    child: AgentRecord,
    call_id: str,
    items: Sequence[AnyItem],
    ended: Sequence[Any],
) -> list[dict[str, Any]]:
    """One stretch of a child's life under ``call_id``: its spawn, ``items`` (each call's
    approval answer after it) and the status it ``ended`` with (status, text)."""
    ident = {"path": path, "agent_id": child.agent_id}
    spawned = {"call_id": call_id, "nickname": child.nickname, "prompt": child.prompt}
    depth = child.parent.depth + 1
    records: list[dict[str, Any]] = [{"type": AGENT_SPAWNED, **ident, **spawned, "depth": depth}]
    for item in items:
        records.append({"type": AGENT_ITEM, **ident, "item": item.wire()})
        decided = child.decided.get(str(getattr(item, "call_id", "")))
        if decided is not None and item.wire().get("type") in CALLS:  # after its call
            records.append(decision_record(path, child.agent_id, decided))
    status, text = ended
    records.append({"type": AGENT_STATUS, **ident, "status": status, "final_text": text})
    return records
