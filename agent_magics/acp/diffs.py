"""A patch's changes as ACP diffs: each file's text before and after.

Worked out before the patch runs (a permission question shows them, and a client shows
a completed edit by them): the file as it is now, and the patch applied to it in memory
by the same parser and matcher that will apply it. Every file the patch names gets a
diff, since a client may show the diffs alone: one that cannot be shown whole (outside
the working folder, unreadable, larger than :data:`MAX_DIFF_BYTES`, not text, or a hunk
that does not apply) shows the patch's own lines for it, with the reason.

A patch that adds a file over one that is there, or moves one onto another, shows the
file it replaces as the old text; a move also shows its source going. A file is read
only inside the working folder, as what it really is when opened (a
link swapped in after the check, a FIFO or a device is not read: the open does not
follow a last link and does not block, and the opened file must be a regular one inside
the folder), and every text goes through the session's redactor before it leaves.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from acp.schema import FileEditToolCallContent, ToolCallLocation

from agent_magics.apply_patch.content import PatchApplyError, derive_new_contents
from agent_magics.apply_patch.fsops import resolve_patch_path
from agent_magics.apply_patch.parser import (
    AddFile,
    DeleteFile,
    PatchError,
    UpdateFile,
    UpdateFileChunk,
    parse_patch,
)

MAX_DIFF_BYTES = 1_000_000
"""Largest file whose text a diff carries (a larger one shows the patch's lines)."""
OUTSIDE = "outside the working folder: its text is not shown"
UNREADABLE = "not shown: it cannot be read as text here"
NOT_APPLYING = "the patch does not apply to it as it is now"


def patch_diffs(
    patch: str, cwd: Path, redact: Callable[[str], str] = str
) -> list[FileEditToolCallContent]:
    """The diffs of ``patch`` against the files under ``cwd`` as they are now."""
    try:
        hunks = parse_patch(patch).hunks
    except PatchError:
        return []
    found: list[FileEditToolCallContent] = []
    for hunk in hunks:
        path = resolve_patch_path(cwd, hunk.path)
        inside = _inside(path, cwd)
        if isinstance(hunk, AddFile):  # over a file that is there, it replaces it
            text = hunk.contents if inside else _noted(OUTSIDE, hunk.contents)
            found.append(_diff(path, _there(path, cwd), text, redact))
            continue
        old = _read(path, cwd) if inside else None
        why = UNREADABLE if inside else OUTSIDE
        if isinstance(hunk, DeleteFile):
            found.append(_diff(path, old if old is not None else f"[{why}]", "", redact))
        elif isinstance(hunk, UpdateFile):
            target = resolve_patch_path(cwd, hunk.move_path) if hunk.move_path else path
            new = None
            if old is not None:
                try:
                    new = derive_new_contents(str(path), old, hunk.chunks)
                except PatchApplyError:
                    why = NOT_APPLYING
            replaced = _there(target, cwd) if target != path else old
            if old is None or new is None:
                found.append(_diff(target, replaced, _noted(why, _lines(hunk.chunks)), redact))
            else:
                found.append(_diff(target, replaced, new, redact))
            if target != path:  # a move: the file it came from goes
                found.append(_diff(path, old if old is not None else f"[{why}]", "", redact))
    return found


def locations(diffs: list[FileEditToolCallContent]) -> list[ToolCallLocation]:
    return [ToolCallLocation(path=d.path) for d in diffs]


def _diff(
    path: Path, old: str | None, new: str, redact: Callable[[str], str]
) -> FileEditToolCallContent:
    return FileEditToolCallContent(
        type="diff",
        path=redact(str(path)),
        old_text=redact(old) if old is not None else None,
        new_text=redact(new),
    )


def _noted(why: str, text: str) -> str:
    return f"[{why}; the patch's lines for it:]\n{text}"


def _lines(chunks: list[UpdateFileChunk]) -> str:
    """An update's hunks as the patch wrote them."""
    out: list[str] = []
    for chunk in chunks:
        out.append(f"@@ {chunk.change_context}" if chunk.change_context else "@@")
        out += [f"-{line}" for line in chunk.old_lines]
        out += [f"+{line}" for line in chunk.new_lines]
    return "\n".join(out) + "\n"


def _there(path: Path, cwd: Path) -> str | None:
    """The text of a file a patch writes over (None: there is none); one that cannot be
    shown says so."""
    if not os.path.lexists(path):
        return None
    if not _inside(path, cwd):
        return f"[{OUTSIDE}]"
    text = _read(path, cwd)
    return text if text is not None else f"[{UNREADABLE}]"


def _within(path: str, root: str) -> bool:
    return os.path.commonpath([root, path]) == root


def _inside(path: Path, cwd: Path) -> bool:
    return _within(os.path.realpath(path), os.path.realpath(cwd))


def _read(path: Path, cwd: Path) -> str | None:
    """The text of the regular file ``path`` really is, inside ``cwd`` (None: not one,
    not there, too large or not UTF-8)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(os.path.realpath(path), flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_DIFF_BYTES:
            return None
        opened = os.readlink(f"/proc/self/fd/{fd}") if os.path.isdir("/proc/self/fd") else None
        if opened is not None and not _within(opened, os.path.realpath(cwd)):
            return None  # a folder on the way was swapped for a link meanwhile
        chunks: list[bytes] = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
            if sum(map(len, chunks)) > MAX_DIFF_BYTES:
                return None  # it grew meanwhile
        return b"".join(chunks).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)
