"""A patch's changes as ACP diffs: each file's text before and after.

Worked out before the patch runs (a permission question shows them, and a client shows
a completed edit by them): the file as it is now, and the patch applied to it in memory
by the same parser and matcher that will apply it. Only files inside the working folder
are read, and only up to :data:`MAX_DIFF_BYTES`; a patch that does not apply, or a file
that cannot be read, gives no diff (the call's own output says what went wrong).
"""

from __future__ import annotations

import os
from pathlib import Path

from acp.schema import FileEditToolCallContent, ToolCallLocation

from agent_magics.apply_patch.content import PatchApplyError, derive_new_contents
from agent_magics.apply_patch.fsops import resolve_patch_path
from agent_magics.apply_patch.parser import AddFile, DeleteFile, PatchError, UpdateFile, parse_patch

MAX_DIFF_BYTES = 1_000_000
"""Largest file whose text a diff carries (larger ones are named, not shown)."""


def patch_diffs(patch: str, cwd: Path) -> list[FileEditToolCallContent]:
    """The diffs of ``patch`` against the files under ``cwd`` as they are now."""
    try:
        hunks = parse_patch(patch).hunks
    except PatchError:
        return []
    found: list[FileEditToolCallContent] = []
    for hunk in hunks:
        path = resolve_patch_path(cwd, hunk.path)
        if not _inside(path, cwd):
            continue
        if isinstance(hunk, AddFile):
            found.append(_diff(path, None, hunk.contents))
            continue
        old = _read(path)
        if old is None:
            continue
        if isinstance(hunk, DeleteFile):
            found.append(_diff(path, old, ""))
        elif isinstance(hunk, UpdateFile):
            try:
                new = derive_new_contents(str(path), old, hunk.chunks)
            except PatchApplyError:
                continue
            target = resolve_patch_path(cwd, hunk.move_path) if hunk.move_path else path
            found.append(_diff(target, old, new))
    return found


def locations(diffs: list[FileEditToolCallContent]) -> list[ToolCallLocation]:
    return [ToolCallLocation(path=d.path) for d in diffs]


def _diff(path: Path, old: str | None, new: str) -> FileEditToolCallContent:
    return FileEditToolCallContent(type="diff", path=str(path), old_text=old, new_text=new)


def _inside(path: Path, cwd: Path) -> bool:
    root = os.path.realpath(cwd)
    return os.path.commonpath([root, os.path.realpath(path)]) == root


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_DIFF_BYTES:
            return None
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
