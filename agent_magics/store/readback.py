"""A session file read back, whoever wrote it.

A line that does not parse (a torn last line after a kill) is skipped and reported, and
the history is rebuilt from the ``item`` records that still make valid items. Whose
lines they are is checked against this user's key (:mod:`.signing`): lines not written
by this user never speak as instructions (their developer, system and unknown items are
dropped, and their ``rollback`` records are ignored), and only a file that is wholly
this user's gives settings.
"""

from __future__ import annotations

import json
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
from agent_magics.store.signing import Provenance, provenance, session_key

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

    @property
    def id(self) -> str:
        return self.path.name.removesuffix(SUFFIX)

    @property
    def config(self) -> dict[str, Any]:
        """The latest saved settings, only when the whole file is this user's."""
        return self.saved if self.verified else {}


def parse_lines(data: bytes) -> tuple[list[dict[str, Any]], list[int], bool]:
    """Records, the numbers of the lines that are not records, and whether the last
    line is torn (no newline at its end)."""
    lines = data.split(b"\n")
    torn = bool(lines[-1].strip())
    records: list[dict[str, Any]] = []
    bad: list[int] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            record = None
        if isinstance(record, dict) and isinstance(record.get("type"), str):
            records.append(record)
        else:
            bad.append(number)
    return records, bad, torn


def read_session(path: Path, *, key: bytes | None = None) -> LoadedSession:
    """Read a session file; never raises for its content (OSError if it cannot be
    opened; a symlink is refused)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        data = handle.read()
    records, bad, torn = parse_lines(data)
    found = provenance(records, key if key is not None else session_key())
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
    """The history the ``item`` and ``rollback`` records make (None: an item record that
    is not a valid item), and how many items of lines not ours were dropped because
    they could speak as instructions."""
    kept: list[AnyItem | None] = []
    dropped = 0
    for record, mine in zip(records, found.ours, strict=True):
        taken = record.get("items") if record["type"] == ROLLBACK else None
        if isinstance(taken, int) and not isinstance(taken, bool) and taken > 0 and mine:
            del kept[-taken:]
        if record["type"] != "item":
            continue
        try:
            item = server_item(record.get("item"))
        except MalformedItem:
            kept.append(None)
            continue
        if not mine and _instructs(item):
            dropped += 1
            continue
        kept.append(item)
    return kept, dropped


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
