"""A saved session's sub-agent records folded as the live events were.

The session file holds a child's spawn, its statuses and its history items
(``agent_spawned``, ``agent_status``, ``agent_item``, and ``agent_decision`` for its
approval answers; see
:mod:`agent_magics.store.agent_records`). Each becomes the event the live session
emitted, wrapped in :class:`~agent_magics.events.AgentEvent` for every agent it came
through, and is applied to the parent's turn: the transcript model nests it in the card
of the call that spawned the child, as it did live.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent_magics.events import (
    AgentEvent,
    AgentSpawned,
    AgentStatusChanged,
    ApprovalDecided,
    AssistantMessage,
    Event,
    ToolCallFinished,
    ToolCallProposed,
    TurnStarted,
)
from agent_magics.protocol.approval import ReviewDecision
from agent_magics.transcript.model import Transcript

AGENT_RECORDS = ("agent_spawned", "agent_status", "agent_item", "agent_decision")


class AgentFolder:
    """Folds one session's sub-agent records (a child's call ids are its own)."""

    def __init__(self) -> None:
        self._names: dict[tuple[str, str], str] = {}  # (agent, call id) -> tool name
        self._refused: set[tuple[str, str]] = set()  # calls denied or aborted: not run

    def record(self, turn: Transcript, record: Mapping[str, Any]) -> bool:
        """Apply ``record`` to ``turn``; False when its shape is not one written."""
        path, agent_id = record.get("path"), record.get("agent_id")
        if not isinstance(path, list) or not all(isinstance(p, str) for p in path):
            return False
        if not isinstance(agent_id, str):
            return False
        events = self._events(record, agent_id)
        if events is None:
            return False
        for event in events:
            for outer in reversed(path):
                event = AgentEvent(outer, event)
            turn.apply(event)
        return True

    def _events(self, record: Mapping[str, Any], agent_id: str) -> list[Event] | None:
        kind = record.get("type")
        if kind == "agent_spawned":
            call_id, nickname, prompt = (record.get(k) for k in ("call_id", "nickname", "prompt"))
            depth = record.get("depth")
            if not (isinstance(call_id, str) and isinstance(nickname, str)):
                return None
            prompt = prompt if isinstance(prompt, str) else ""
            depth = depth if isinstance(depth, int) and not isinstance(depth, bool) else 1
            return [AgentSpawned(call_id, agent_id, nickname, depth, prompt)]
        if kind == "agent_status":
            status, text = record.get("status"), record.get("final_text")
            if not isinstance(status, str):
                return None
            return [AgentStatusChanged(agent_id, status, text if isinstance(text, str) else None)]
        if kind == "agent_decision":
            try:
                decision = ReviewDecision(str(record.get("decision")))
            except ValueError:
                return None
            cached, call_id = record.get("by") == "policy", str(record.get("call_id"))
            if decision in (ReviewDecision.DENIED, ReviewDecision.ABORT):
                self._refused.add((agent_id, call_id))
            decided = ApprovalDecided(call_id, decision, cached)
            return [AgentEvent(agent_id, decided)]
        item = record.get("item")
        if kind != "agent_item" or not isinstance(item, dict):
            return None
        return [AgentEvent(agent_id, e) for e in self._item_events(agent_id, item)]

    def _item_events(self, agent_id: str, item: Mapping[str, Any]) -> list[Event]:
        kind = item.get("type")
        if kind == "message" and item.get("role") == "assistant":
            return [AssistantMessage(_text(item.get("content")))]
        if kind == "message" and item.get("role") == "user":
            text = _text(item.get("content"))  # its task, or a message sent to it later
            return [] if text.startswith("<") else [TurnStarted(text)]  # (not context)
        if kind in ("function_call", "custom_tool_call"):
            call_id, name = str(item.get("call_id")), item.get("name")
            name = name if isinstance(name, str) else "(no name)"
            raw = item.get("arguments" if kind == "function_call" else "input", "")
            self._names[agent_id, call_id] = name
            payload = "custom" if kind == "custom_tool_call" else "function"
            raw = raw if isinstance(raw, str) else json.dumps(raw)
            return [ToolCallProposed(call_id, name, raw, payload)]
        if kind in ("function_call_output", "custom_tool_call_output"):
            call_id = str(item.get("call_id"))
            name = self._names.get((agent_id, call_id))
            if name is None:
                return []
            ran = (agent_id, call_id) not in self._refused  # (as a parent's refused call)
            return [ToolCallFinished(call_id, name, item.get("output"), ran, 0.0)]
        return []


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = (
        [c.get("text") for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    )
    return "\n".join(p for p in parts if isinstance(p, str))
