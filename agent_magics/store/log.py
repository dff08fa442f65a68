"""A session written to disk as it happens: one JSONL file, one record a line.

The first line (and one more each time the file is opened again) is ``session_meta``: the
settings the session runs with, minus secrets, and ``started``, when the file was opened:
the first one's is when the session started, a later one's is when it was opened again
(``resumed``), by ``%agent resume`` when it says ``resume`` (not by new settings for the
same conversation); a ``settings`` line before a turn whose
settings (those a resumed session takes) differ from the last ones written. Then
``turn_started``, ``item`` (each
history item, its wire JSON, as it joins the history), ``decision``, ``tool_finished``,
``turn_ended`` and the records other parts add through :meth:`SessionLog.write`. A
``rollback`` record takes back the last ``items`` items written (a turn that failed
before the model answered leaves the history as it was); a ``compacted`` record replaces
the history written so far with its ``replacement_history``.

Every line is sealed with this user's key and chained to the line before it (see
:mod:`.signing`), so reading a file back tells the lines we wrote from the others. The
writer holds an advisory lock (``flock``) on the file while its session lives: a second
kernel that opens the same session gets :class:`SessionInUse` instead of interleaving
its lines with the first one's. The file is opened through the sessions folder's
descriptor, never through a symlink (:mod:`.folder`).

Each line goes to the operating system with one ``write`` as soon as it is made, so a
killed process loses at most the line being written. ``fsync``, which only guards
against the machine itself crashing, costs about 150 times a small line's write (3 ms
against 20 us, ``bench/session_log_bench.py``), so it runs once a turn, at its end
(:meth:`SessionLog.sync`), not once a line. Every string of every record passes the
session's redactor first; the API key is not a field of the dumped settings at all.

Reading a file back is :mod:`.readback`'s (its names are imported here too).
"""

from __future__ import annotations

import fcntl
import logging
import os
import stat
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from agent_magics.config import SessionConfig, looks_secret
from agent_magics.models.secret import REDACTED
from agent_magics.store.folder import FILE_MODE, open_file, open_sessions_folder
from agent_magics.store.readback import (
    COMPACTED,
    META,
    ROLLBACK,
    SETTINGS,
    SUFFIX,
    UNFINISHED_CALL_OUTPUT,
    LoadedSession,
    append_point,
    parse_lines,
    read_session,
)
from agent_magics.store.signing import START, seal_line, session_key

__all__ = [
    "COMPACTED",
    "META",
    "ROLLBACK",
    "SETTINGS",
    "SUFFIX",
    "UNFINISHED_CALL_OUTPUT",
    "LoadedSession",
    "SessionInUse",
    "SessionLog",
    "parse_lines",
    "read_session",
]

FORMAT_VERSION = 2

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
    """``value`` (JSON-like) with ``redact`` applied to every string, keys included, as
    plain JSON values: what is neither a container, a number, a bool nor None becomes
    its (redacted) text, so the record sealed is the record read back."""
    if isinstance(value, str):
        return str(redact(value))
    if isinstance(value, dict):
        return {str(redact(str(k))): scrub(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v, redact) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return str(redact(str(value)))


LOCK_TRIES, LOCK_WAIT_S = 10, 0.05  # up to half a second for a brief holder to let go


class SessionInUse(OSError):
    """Another process (or another session of this one) is writing the session's file."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"session {path.name.removesuffix(SUFFIX)} is being written by another kernel "
            "or session right now; two writers would mix their histories in one file"
        )


class SessionLog:
    """The file of one session, open for appending and locked. Writing never raises: a
    failing disk is logged once and the session goes on without its file."""

    def __init__(
        self,
        path: Path,
        fd: int,
        redact: Callable[[str], str],
        key: bytes,
        prev: str = START,
        mixed: bool = False,
    ) -> None:
        self.path = path
        self._fd: int | None = fd
        self._redact = redact
        self._key = key
        self._prev = prev
        self._mixed = mixed
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
        resume: bool = False,
    ) -> SessionLog:
        """Create ``folder/<session_id>.jsonl`` (0600), or append to it when it exists
        (a resumed session), and write a ``session_meta`` line (saying ``resume`` when a
        person resumed the session). Raises OSError when the
        file cannot be opened (a symlink, a folder on the way that is one, a file with
        other names), :class:`SessionInUse` when another writer holds it."""
        key = key if key is not None else session_key()
        path = folder / f"{session_id}{SUFFIX}"
        fd = _open_locked(folder, path)
        try:
            data = _read_all(fd)
            if data and not data.endswith(b"\n"):
                os.write(fd, b"\n")  # end a torn line, so it stays one bad line
        except OSError:
            os.close(fd)
            raise
        last, untrusted = append_point(data, key)
        # Lines we did not write stay unvouched: what we add after them says so.
        log = cls(path, fd, redact, key, last, untrusted)
        meta: dict[str, Any] = {
            "type": META,
            "version": FORMAT_VERSION,
            "id": session_id,
            "started": now_iso(),
            "cwd": str(config.cwd),
            "config": config_record(config),
            "agent_magics_version": _version(),
        }
        if data:
            meta["resumed"] = True
            if resume:
                meta["resume"] = True
        log.write(meta)
        return log

    def write(self, record: dict[str, Any]) -> None:
        """Append one record (a dict whose ``type`` names it), its strings redacted."""
        self._write_line(scrub(record, self._redact))

    def _write_line(self, record: dict[str, Any]) -> None:
        with self._lock:
            if self._fd is None:
                return
            line, after = seal_line(record, self._prev, self._key, mixed=self._mixed)
            data = line + b"\n"
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
                self._prev = after
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


def _open_locked(folder: Path, path: Path) -> int:
    """The session file open for appending (made when missing), a regular file with no
    other name, locked for this writer."""
    where = open_sessions_folder(folder)
    try:
        fd = open_file(where, path.name, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    finally:
        os.close(where)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise OSError(f"{path} is not a plain file of its own (a link?)")
        _lock_for_writing(fd, path)
        os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd


def _lock_for_writing(fd: int, path: Path) -> None:
    """Take the writer's lock, waiting a moment for a brief holder: a reader checking
    :func:`in_use`, or a process the kernel is starting that holds a copy of the
    descriptor until it runs its program. A writer still holding it then is another
    session: :class:`SessionInUse`."""
    for attempt in range(LOCK_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if attempt == LOCK_TRIES - 1:
                raise SessionInUse(path) from None
            time.sleep(LOCK_WAIT_S)


def _read_all(fd: int) -> bytes:
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def in_use(path: Path) -> bool:
    """Whether a writer holds the session file at ``path`` now."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing drops a lock taken here
    return False


def _version() -> str:
    try:
        return metadata.version("agent-magics")
    except metadata.PackageNotFoundError:
        return "unknown"
