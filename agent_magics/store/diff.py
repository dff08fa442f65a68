"""A file's state (content and mode, or absence) and the unified diff between two states."""

from __future__ import annotations

import difflib
import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_DIFF_CHARS = 40_000
"""A file's diff is cut past this many characters (the files themselves are kept whole)."""
CONTEXT_LINES = 3
NO_NEWLINE = "\\ No newline at end of file\n"


@dataclass(frozen=True)
class FileState:
    """A regular file's bytes and permission bits, or its absence (``data is None``)."""

    data: bytes | None
    mode: int = 0

    @property
    def digest(self) -> str | None:
        return None if self.data is None else hashlib.sha256(self.data).hexdigest()


ABSENT = FileState(None)


def read_state(path: Path, limit: int) -> FileState | None:
    """The state of ``path`` without following a symlink at its end: ``ABSENT`` when
    nothing is there, ``None`` when it is not a regular file or is larger than ``limit``."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ABSENT
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return ABSENT
    except OSError:
        return None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or opened.st_size > limit:
            return None
        chunks = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
        return FileState(b"".join(chunks), stat.S_IMODE(opened.st_mode))
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            return None
        raise
    finally:
        os.close(fd)


def _text(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n" + NO_NEWLINE
    return lines


def cut(diff: str, limit: int = MAX_DIFF_CHARS) -> str:
    """``diff`` whole, or its head up to ``limit`` characters with a line saying how many
    lines were left out."""
    if len(diff) <= limit:
        return diff
    head = diff[: diff.rfind("\n", 0, limit) + 1]
    left = diff.count("\n") - head.count("\n")
    return head + f"... diff cut: {left} more lines\n"


def file_diff(shown: str, before: FileState | None, after: FileState) -> tuple[str, str]:
    """``(status, diff)`` for a file shown as ``shown`` going from ``before`` (``None``:
    not kept) to ``after``: git's header lines, then a unified diff of the text, or a
    line saying why there is none."""
    if before is not None and before.data is None:
        status = "added"
    elif after.data is None:
        status = "deleted"
    else:
        status = "modified"
    old = f"a/{shown}" if status != "added" else "/dev/null"
    new = f"b/{shown}" if status != "deleted" else "/dev/null"
    head = f"diff --git a/{shown} b/{shown}\n"
    if status == "added":
        head += f"new file mode 100{after.mode:o}\n"
    elif status == "deleted" and before is not None:
        head += f"deleted file mode 100{before.mode:o}\n"
    elif before is not None and before.mode != after.mode:
        head += f"old mode 100{before.mode:o}\nnew mode 100{after.mode:o}\n"
    if before is None:
        return status, head + f"{shown}: changed; it was too large to keep, so no diff\n"
    a = _text(before.data or b"")
    b = _text(after.data or b"")
    if a is None or b is None:
        return status, head + f"Binary file {shown} {status}\n"
    body = "".join(
        difflib.unified_diff(_lines(a), _lines(b), old, new, n=CONTEXT_LINES, lineterm="\n")
    )
    return status, cut(head + body)
