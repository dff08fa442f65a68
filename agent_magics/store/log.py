"""A session written to disk as it happens: one JSONL file, one record a line.

The first line (and one more each time the session is resumed) is ``session_meta``: the
settings the session runs with, minus secrets, signed with this user's key (see
:mod:`.signing`). Then ``turn_started``, ``item`` (each history item, its wire JSON, as it
joins the history), ``decision``, ``tool_finished``, ``turn_ended`` and the records other
parts add through :meth:`SessionLog.write`. A ``rollback`` record takes back the last
``items`` items written (a turn that failed before the model answered leaves the history
as it was).

Each line goes to the operating system with one ``write`` as soon as it is made, so a
killed process loses at most the line being written. ``fsync``, which only guards
against the machine itself crashing, costs about 150 times a small line's write (3 ms
against 20 us, ``bench/session_log_bench.py``), so it runs once a turn, at its end
(:meth:`SessionLog.sync`), not once a line. Every string of every record passes the session's
redactor first; the API key is not a field of the dumped settings at all.

:func:`read_session` reads any file back, whoever wrote it: a line that does not parse (a
torn last line after a kill) is skipped and reported, and the history is rebuilt from the
``item`` records that still make valid items.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from agent_magics.config import SessionConfig
from agent_magics.models.secret import REDACTED
from agent_magics.protocol import FunctionCallOutput, MalformedItem, server_item
from agent_magics.protocol.items import AnyItem, CustomToolCallOutput
from agent_magics.redaction import looks_secret
from agent_magics.store.signing import SIGNATURE, session_key, sign, verify

FORMAT_VERSION = 1
FILE_MODE = 0o600
SUFFIX = ".jsonl"
META = "session_meta"
ROLLBACK = "rollback"
UNFINISHED_CALL_OUTPUT = (
    "aborted: the session stopped before this call finished, so its result is unknown"
)
"""What a resumed history tells the model about a call whose output was never written."""

_log = logging.getLogger("agent_magics")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def config_record(config: SessionConfig) -> dict[str, Any]:
    """The settings as saved: the API key is excluded by its field; an MCP server's
    environment values and headers whose name looks secret are replaced."""
    data = config.model_dump(mode="json")
    for server in data.get("mcp_servers", {}).values():
        for table in ("env", "http_headers"):
            server[table] = {
                name: REDACTED if looks_secret(name) else value
                for name, value in server.get(table, {}).items()
            }
    return data


def scrub(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` (JSON-like) with ``redact`` applied to every string, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(k)): scrub(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v, redact) for v in value]
    return value


class SessionLog:
    """The file of one session, open for appending. Writing never raises: a failing
    disk is logged once and the session goes on without its file."""

    def __init__(self, path: Path, fd: int, redact: Callable[[str], str]) -> None:
        self.path = path
        self._fd: int | None = fd
        self._redact = redact
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return self.path.name.removesuffix(SUFFIX)

    @classmethod
    def open(
        cls,
        folder: Path,
        session_id: str,
        config: SessionConfig,
        redact: Callable[[str], str],
        *,
        key: bytes | None = None,
    ) -> SessionLog:
        """Create ``folder/<session_id>.jsonl`` (0600), or append to it when it exists
        (a resumed session), and write a signed ``session_meta`` line. Raises OSError
        when the file cannot be opened (a symlink is refused)."""
        try:
            folder.mkdir(parents=True, mode=0o700)
        except FileExistsError:
            pass
        else:  # transcripts are not for the repository the folder may sit in
            (folder / ".gitignore").write_text("*\n")
        path = folder / f"{session_id}{SUFFIX}"
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                os.write(fd, b"\n")  # end a torn line, so it stays one bad line
        except OSError:
            os.close(fd)
            raise
        log = cls(path, fd, redact)
        meta: dict[str, Any] = {
            "type": META,
            "version": FORMAT_VERSION,
            "id": session_id,
            "started": now_iso(),
            "cwd": str(config.cwd),
            "config": config_record(config),
            "agent_magics_version": _version(),
        }
        if size:
            meta["resumed"] = True
        meta = scrub(meta, redact)
        meta[SIGNATURE] = sign(meta, key if key is not None else session_key())
        log._write_line(meta)
        return log

    def write(self, record: dict[str, Any]) -> None:
        """Append one record (a dict whose ``type`` names it), its strings redacted."""
        self._write_line(scrub(record, self._redact))

    def _write_line(self, record: dict[str, Any]) -> None:
        data = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()
        with self._lock:
            if self._fd is None:
                return
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError as exc:
                _log.warning("Session file %s: %s; the session is no longer saved.", self.path, exc)
                self._close()

    def sync(self) -> None:
        """Ask the operating system to put what was written on the disk (a turn's end)."""
        with self._lock:
            if self._fd is not None:
                try:
                    os.fsync(self._fd)
                except OSError as exc:
                    _log.warning("Session file %s: %s.", self.path, exc)

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _version() -> str:
    try:
        return metadata.version("agent-magics")
    except metadata.PackageNotFoundError:
        return "unknown"


# -- reading --------------------------------------------------------------------------------


@dataclass
class LoadedSession:
    """A session file read back. ``meta``: the last settings line that carries this
    user's signature, else the first one (``verified`` says which); ``history``: the
    items, with a made-up output for each call that never got one; ``damaged``: one
    sentence when something was skipped."""

    path: Path
    meta: dict[str, Any] | None
    verified: bool
    records: list[dict[str, Any]]
    history: list[AnyItem] = field(default_factory=list)
    damaged: str | None = None

    @property
    def id(self) -> str:
        return self.path.name.removesuffix(SUFFIX)

    @property
    def config(self) -> dict[str, Any]:
        """The saved settings, only when this user's agent_magics wrote them."""
        saved = self.meta.get("config") if self.meta and self.verified else None
        return saved if isinstance(saved, dict) else {}


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
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    records, bad, torn = parse_lines(data)
    key = key if key is not None else session_key()
    metas = [r for r in records if r["type"] == META]
    signed = [m for m in metas if verify(m, key)]
    meta = signed[-1] if signed else (metas[0] if metas else None)
    kept: list[AnyItem | None] = []  # None: an item record that is not a valid item
    for record in records:
        taken = record.get("items") if record["type"] == ROLLBACK else None
        if isinstance(taken, int) and not isinstance(taken, bool) and taken > 0:
            del kept[-taken:]
        if record["type"] != "item":
            continue
        try:
            kept.append(server_item(record.get("item")))
        except MalformedItem:
            kept.append(None)
    skipped = kept.count(None)
    history = answer_unfinished_calls([item for item in kept if item is not None])
    return LoadedSession(
        Path(path), meta, bool(signed), records, history, _damage(bad, torn, skipped)
    )


def answer_unfinished_calls(history: list[AnyItem]) -> list[AnyItem]:
    """``history`` where every tool call has an output (the model server refuses a call
    left unanswered) and no output is without its call."""
    wire = [item.wire() for item in history]
    calls = {str(w.get("call_id")) for w in wire if w.get("type") in _CALLS}
    answered = {str(w.get("call_id")) for w in wire if w.get("type") in _OUTPUTS}
    out: list[AnyItem] = []
    for item, w in zip(history, wire, strict=True):
        call_id = str(w.get("call_id"))
        if w.get("type") in _OUTPUTS and call_id not in calls:
            continue
        out.append(item)
        if w.get("type") in _CALLS and call_id not in answered:
            kind = CustomToolCallOutput if w["type"] == "custom_tool_call" else FunctionCallOutput
            out.append(kind(call_id=call_id, output=UNFINISHED_CALL_OUTPUT))
    return out


_CALLS = ("function_call", "custom_tool_call")
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
