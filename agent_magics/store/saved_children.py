"""The sub-agents a saved session leaves behind, for a resumed session to reopen.

Codex keeps each sub-agent's thread, so ``resume_agent`` brings a closed one back with
its history. Here a child's history is in its parent's file (``agent_item`` records,
:mod:`.agent_records`, written redacted and sealed), and a resumed session gets the
main agent's children back as closed agents. A child's history goes to the model as
that child's own conversation, so it is taken only from lines this user's agent_magics
wrote, each still following the line it followed when written: a child with any record
that is not (planted, edited, or moved in from another file) is left out whole, and its
id stays unknown to the tools. Children of children are not kept (a child reopened
starts with no children of its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from agent_magics.protocol.items import AnyItem, MalformedItem, server_item
from agent_magics.store.agent_records import AGENT_ITEM, AGENT_SPAWNED, AGENT_STATUS
from agent_magics.store.readback import answer_unfinished_calls
from agent_magics.store.signing import Provenance


@dataclass
class SavedChild:
    """One child as its records left it: its spawn, its history and last status."""

    agent_id: str
    nickname: str
    prompt: str
    call_id: str
    history: list[AnyItem] = field(default_factory=list)
    status: str = "shutdown"
    final_text: str | None = None


@dataclass
class SavedChildren:
    """The children to restore, and the ids of those left out (records not ours)."""

    children: list[SavedChild] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def saved_children(records: Sequence[dict[str, Any]], checked: Provenance) -> SavedChildren:
    """The main agent's children in ``records`` (a session file read back), by whose
    each record is and whether it follows the record before it (``checked``)."""
    found: dict[str, SavedChild] = {}
    refused: list[str] = []
    for record, mine, linked in zip(records, checked.ours, checked.linked, strict=True):
        agent_id, kind = record.get("agent_id"), record["type"]
        if kind not in (AGENT_SPAWNED, AGENT_STATUS, AGENT_ITEM) or not isinstance(agent_id, str):
            continue
        if record.get("path") != []:
            continue  # a grandchild, or a shape not written
        if not (mine and linked):
            if agent_id not in refused:
                refused.append(agent_id)
            continue
        _apply(found, agent_id, record)
    kept = [c for c in found.values() if c.agent_id not in refused]
    for child in kept:
        child.history = answer_unfinished_calls(child.history)
    return SavedChildren(kept, refused)


def _apply(found: dict[str, SavedChild], agent_id: str, record: dict[str, Any]) -> None:
    kind = record["type"]
    if kind == AGENT_SPAWNED:
        nickname, prompt, call_id = (record.get(k) for k in ("nickname", "prompt", "call_id"))
        if isinstance(nickname, str) and isinstance(prompt, str) and isinstance(call_id, str):
            found.setdefault(agent_id, SavedChild(agent_id, nickname, prompt, call_id))
        return
    child = found.get(agent_id)
    if child is None:
        return  # (no spawn record before it: not a child of this file)
    if kind == AGENT_STATUS:
        status, text = record.get("status"), record.get("final_text")
        if isinstance(status, str):
            child.status, child.final_text = status, text if isinstance(text, str) else None
        return
    with suppress(MalformedItem):  # as the main history does: a non-item is skipped
        child.history.append(server_item(record.get("item")))
