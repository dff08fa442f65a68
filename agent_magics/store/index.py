"""The sessions of a folder, listed cheaply: each file's head (its settings line and
first prompt) and tail (its last turn and token count), not the whole file.

Whose a file is, is checked on every line when the file is small enough to be read
whole, else on its first and last lines only (a file made of our first and last lines
around planted ones passes that): what resumes a session checks every line again
(:mod:`.resume`)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_magics.store.readback import META, SUFFIX, parse_lines
from agent_magics.store.signing import MIXED, PREV, START, provenance, sealed, session_key

HEAD_BYTES = 64 * 1024
"""How much of a file's start is read for its settings line and first prompt (more, up
to :data:`MAX_HEAD_BYTES`, when the settings line is longer)."""
MAX_HEAD_BYTES = 4 * 1024 * 1024
TAIL_BYTES = 64 * 1024
"""How much of a file's end is read for its last turn and token count."""


@dataclass(frozen=True)
class SessionInfo:
    """One line of the list of sessions."""

    id: str
    path: Path
    started: str
    """When the session started (its file's first line)."""
    resumed: str
    """When a person last resumed it ("" never, or not in the part of the file read)."""
    model: str
    first_prompt: str
    turns: int
    tokens: int
    verified: bool
    """Written by this user's agent_magics, every line (see the module's docstring)."""
    mtime: float
    answered: bool = True
    """The model answered in it (in the part of the file read): a session whose every
    turn failed before an answer holds nothing to go on from."""


def _head(handle: Any, size: int) -> bytes:
    data: bytes = handle.read(min(size, HEAD_BYTES))
    while b"\n" not in data and len(data) < min(size, MAX_HEAD_BYTES):
        more = handle.read(HEAD_BYTES)
        if not more:
            break
        data += more
    return data


def session_info(path: Path, key: bytes) -> SessionInfo | None:
    """What the list shows of one file; None when it is not a readable session file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None
        head = _head(handle, st.st_size)
        whole = st.st_size <= len(head) + TAIL_BYTES
        if not whole:
            handle.seek(st.st_size - TAIL_BYTES)
            tail = handle.read().split(b"\n", 1)[-1]  # from the first whole line
        else:
            tail = head[head.rfind(b"\n") + 1 :] + handle.read()
    first, last = parse_lines(head)[0], parse_lines(tail)[0]
    records = first + last
    metas = [r for r in records if r["type"] == META]
    if not metas:
        return None
    if whole:
        ours = provenance(records, key).yours
    else:
        ours = bool(first) and _looks_ours(first[0], records[-1], key)
    signed = [m for m in metas if sealed(m, key)]
    meta = signed[-1] if signed else metas[0]
    saved = meta.get("config")
    config: dict[str, Any] = saved if isinstance(saved, dict) else {}
    prompts = [r.get("prompt") for r in records if r["type"] == "turn_started"]
    turns = [r["turn"] for r in records if isinstance(r.get("turn"), int)]
    ended = [r for r in records if r["type"] == "turn_ended"]
    tokens = ended[-1].get("session_tokens", 0) if ended else 0
    resumes = [m for m in metas if m.get("resume") is True]
    return SessionInfo(
        id=path.name.removesuffix(SUFFIX),
        path=path,
        started=str(metas[0].get("started", "")),
        resumed=str(resumes[-1].get("started", "")) if resumes else "",
        model=str(config.get("model", "")),
        first_prompt=str(prompts[0]) if prompts else "",
        turns=max(turns, default=0),
        tokens=tokens if isinstance(tokens, int) else 0,
        verified=ours,
        mtime=st.st_mtime,
        answered=any(_answers(r) for r in records),
    )


def _answers(record: dict[str, Any]) -> bool:
    """A record of the model's part of the conversation: an item it sent (a message, a
    call) or a compaction (a summary of what it did)."""
    if record["type"] == "compacted":
        return True
    item = record.get("item") if record["type"] == "item" else None
    if not isinstance(item, dict):
        return False
    return item.get("type") != "message" or item.get("role") == "assistant"


def _looks_ours(first: dict[str, Any], last: dict[str, Any], key: bytes) -> bool:
    """The first line opens a file of ours and the last one is ours, written after no
    foreign line."""
    opens = sealed(first, key) and first.get(PREV) == START
    return opens and sealed(last, key) and last.get(MIXED) is not True


def list_sessions(folder: Path, *, key: bytes | None = None) -> list[SessionInfo]:
    """The sessions in ``folder``, the most recently written first."""
    try:
        paths = [p for p in folder.iterdir() if p.name.endswith(SUFFIX)]
    except OSError:
        return []
    key = key if key is not None else session_key()
    found = [info for info in (session_info(p, key) for p in paths) if info is not None]
    return sorted(found, key=lambda s: (s.mtime, s.started), reverse=True)
