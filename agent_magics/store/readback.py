"""A session file read back, whoever wrote it.

A line that does not parse (a torn last line after a kill) is skipped and reported, and
the history is rebuilt from the ``item`` records that still make valid items (from the
last ``compacted`` record on, whose replacement history stands for all before it). Whose
lines they are is checked against this user's key (:mod:`.signing`): lines not written
by this user never speak as instructions (their developer, system and unknown items are
dropped, and their ``rollback`` and ``compacted`` records are ignored), and only a file
that is wholly this user's gives settings.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_magics.protocol.items import (
    AnyItem,
    CustomToolCallOutput,
    FunctionCallOutput,
    MalformedItem,
    Message,
    UnknownItem,
    server_item,
)
from agent_magics.store.lines import (
    COMPACTED,
    REPLACEMENT,
    append_point,
    parse_lines,
    parse_record,
    parse_since_compaction,
    parse_with_lines,
    remember_checked,
)
from agent_magics.store.signing import Provenance, provenance, session_key

__all__ = [
    "COMPACTED",
    "META",
    "REPLACEMENT",
    "ROLLBACK",
    "SETTINGS",
    "SUFFIX",
    "UNFINISHED_CALL_OUTPUT",
    "LoadedSession",
    "answer_unfinished_calls",
    "append_point",
    "parse_lines",
    "parse_record",
    "read_session",
]

SUFFIX = ".jsonl"
META = "session_meta"
SETTINGS = "settings"
"""A record of the settings a session's turns run with from then on (``config``: the
fields a resumed session takes), written when they change between turns."""
ROLLBACK = "rollback"
UNFINISHED_CALL_OUTPUT = (
    "aborted: the session stopped before this call finished, so its result is unknown"
)
"""What a resumed history tells the model about a call whose output was never written."""


# The settings a resume restores (and a settings line records when they change).
RESUMED_SETTINGS = (
    "model",
    "provider",
    "base_url",
    "approval_policy",
    "sandbox_mode",
    "cwd",
    "reasoning_effort",
    "instructions",
    "apply_patch_tool_type",
    "experimental_supported_tools",
    "shell_type",
    "allow_login_shell",
    "tool_output_token_limit",
    "parallel_tool_calls",
    "supports_images",
    "mcp_servers",
)


@dataclass
class LoadedSession:
    """A session file read back. ``meta``: the last ``session_meta`` line this user's
    agent_magics wrote, else the first one; ``saved``: the settings its lines of ours
    give, the latest last (``session_meta``, then each ``settings`` line after it);
    ``verified``: every line of the file is this user's (see :mod:`.signing`);
    ``foreign``: how many lines are not; ``interleaved``: lines of ours that do not
    follow one another as written; ``dropped``: items of the foreign lines left out
    (developer, system, unknown); ``history``: the items, with a made-up output for
    each call that never got one; ``damaged``: one sentence when something was
    skipped."""

    path: Path
    meta: dict[str, Any] | None
    verified: bool
    records: list[dict[str, Any]]
    history: list[AnyItem] = field(default_factory=list)
    damaged: str | None = None
    foreign: int = 0
    interleaved: bool = False
    dropped: int = 0
    saved: dict[str, Any] = field(default_factory=dict)
    provenance: Provenance = field(default_factory=lambda: Provenance(()))
    """Whose each record is, as checked when the file was read."""

    @property
    def id(self) -> str:
        return self.path.name.removesuffix(SUFFIX)

    @property
    def config(self) -> dict[str, Any]:
        """The latest saved settings, only when the whole file is this user's."""
        return self.saved if self.verified else {}


def read_session(path: Path, *, key: bytes | None = None, whole: bool = True) -> LoadedSession:
    """Read a session file; never raises for its content (OSError if it cannot be
    opened; a symlink is refused). Not ``whole`` (to resume it): the ``item`` records
    of ours before the last compaction of ours are checked but not parsed, since its
    replacement stands for them; in ``records`` they hold only their type and ``prev``."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        data = handle.read()
    key = key if key is not None else session_key()
    if whole:
        records, lines, bad, torn = parse_with_lines(data)
        found = provenance(records, key, lines)
    else:
        records, lines, bad, torn, digests = parse_since_compaction(data, key)
        found = provenance(records, key, lines, digests)
    remember_checked(data, key, found)
    metas = [(r, mine) for r, mine in zip(records, found.ours, strict=True) if r["type"] == META]
    ours = [r for r, mine in metas if mine]
    meta = ours[-1] if ours else (metas[0][0] if metas else None)
    saved = _settings(records, found)
    kept, dropped = _items(records, found)
    skipped = kept.count(None)
    history = answer_unfinished_calls([item for item in kept if item is not None])
    return LoadedSession(
        Path(path),
        meta,
        found.yours,
        records,
        history,
        _damage(bad, torn, skipped),
        found.foreign,
        found.breaks > 0,
        dropped,
        saved,
        found,
    )


def _settings(records: list[dict[str, Any]], found: Provenance) -> dict[str, Any]:
    """The settings the records of ours give, in the order written: a ``session_meta``
    sets them all, a ``settings`` record the fields it holds. Lines not ours give none."""
    saved: dict[str, Any] = {}
    for record, mine in zip(records, found.ours, strict=True):
        config = record.get("config")
        if not mine or not isinstance(config, dict):
            continue
        if record["type"] == META:
            saved = dict(config)
        elif record["type"] == SETTINGS:
            saved.update(config)
    return saved


def _items(records: list[dict[str, Any]], found: Provenance) -> tuple[list[AnyItem | None], int]:
    """The history the ``item``, ``rollback`` and ``compacted`` records make (None: an
    item that is not a valid item), and how many items of lines not ours were dropped
    because they could speak as instructions.

    The history starts at the last ``compacted`` record of ours, with its
    ``replacement_history``: what came before it is gone from the conversation, so it is
    not rebuilt. A ``rollback`` after it takes back items written after it only: the
    replacement is one record, never taken back in part. A ``compacted`` record not ours
    is ignored whole (it would replace the history with words of its own)."""
    start = _last_compaction(records, found)
    kept: list[AnyItem | None] = []
    floor = 0  # items a rollback cannot take back
    if start is not None:
        kept = [_item_or_none(wire) for wire in records[start][REPLACEMENT]]
        floor = len(kept)
    dropped = 0
    begin = 0 if start is None else start + 1
    for record, mine in zip(records[begin:], found.ours[begin:], strict=True):
        taken = record.get("items") if record["type"] == ROLLBACK else None
        if isinstance(taken, int) and not isinstance(taken, bool) and taken > 0 and mine:
            del kept[max(floor, len(kept) - taken) :]
        if record["type"] != "item":
            continue
        item = _item_or_none(record.get("item"))
        if item is not None and not mine and _instructs(item):
            dropped += 1
            continue
        kept.append(item)
    return kept, dropped


def _last_compaction(records: list[dict[str, Any]], found: Provenance) -> int | None:
    """Where the last ``compacted`` record of ours is (one whose replacement is a list)."""
    for index in range(len(records) - 1, -1, -1):
        record, mine = records[index], found.ours[index]
        if mine and record["type"] == COMPACTED and isinstance(record.get(REPLACEMENT), list):
            return index
    return None


def _item_or_none(data: Any) -> AnyItem | None:
    try:
        return server_item(data)
    except MalformedItem:
        return None


def _instructs(item: AnyItem) -> bool:
    """An item that speaks above the user (a developer or system message) or whose
    meaning is unknown: from a line not ours, it is not sent."""
    if isinstance(item, UnknownItem):
        return True
    return isinstance(item, Message) and item.role not in ("user", "assistant")


def answer_unfinished_calls(history: list[AnyItem]) -> list[AnyItem]:
    """``history`` where every tool call has an output (the model server refuses a call
    left unanswered) and no output names a call that is not there."""
    wire = [item.wire() for item in history]
    calls = {_call_id(w) for w in wire if w.get("type") in _CALLS}
    answered = {_call_id(w) for w in wire if w.get("type") in _OUTPUTS}
    out: list[AnyItem] = []
    for item, w in zip(history, wire, strict=True):
        call_id = _call_id(w)
        if w.get("type") in _OUTPUTS and "call_id" in w and call_id not in calls:
            continue  # (one with no call id at all is Codex's goal_objective: kept)
        out.append(item)
        if w.get("type") in _CALLS and call_id not in answered:
            kind = CustomToolCallOutput if w["type"] == "custom_tool_call" else FunctionCallOutput
            out.append(kind(call_id=call_id, output=UNFINISHED_CALL_OUTPUT))
    return out


_CALLS = ("function_call", "custom_tool_call", "local_shell_call")


def _call_id(wire: dict[str, Any]) -> str:
    """The id a call and its output are paired by (a ``local_shell_call`` may have only
    an ``id``)."""
    found = wire.get("call_id")
    if not found and wire.get("type") == "local_shell_call":
        found = wire.get("id")
    return str(found)


_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _damage(bad: list[int], torn: bool, skipped: int) -> str | None:
    parts = []
    if bad:
        where = (
            "the last one, cut off mid-line"
            if torn and len(bad) == 1
            else "lines " + (", ".join(map(str, bad[:5])) + (" ..." if len(bad) > 5 else ""))
        )
        parts.append(f"{len(bad)} unreadable line{'s' if len(bad) > 1 else ''} ({where})")
    if skipped:
        parts.append(f"{skipped} item{'s' if skipped > 1 else ''} that are not valid history")
    return "skipped " + " and ".join(parts) if parts else None
