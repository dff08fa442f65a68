"""The model-facing tool's path: verify every hunk first, then apply all or nothing.

:func:`verify_patch` parses the patch, resolves its paths against the turn's working
directory, reads the files and computes their new text without writing anything; any
problem raises :class:`PatchVerificationError`, whose ``str()`` is what Codex puts after
``apply_patch verification failed: ``. :meth:`VerifiedPatch.apply` then writes the
changes in patch order and, if a write fails, puts back what it had already changed.
Updates keep each line's ending (CRLF files stay CRLF) and leave context lines as they
are in the file, as the tool in Codex 0.169.0 does.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agent_magics.text.rust import NUL_IN_PATH, io_error_text, rust_os_error

from .apply import NO_FILES_MODIFIED, summary_for
from .content import PatchApplyError, derive_new_contents, unified_diff
from .files import OutsideWritableRoots, PlainFiles
from .fsops import PLAIN, read_utf8, resolve_patch_path, write_text
from .parser import (
    AddFile,
    DeleteFile,
    Hunk,
    PatchError,
    PatchParseError,
    UpdateFile,
    parse_patch,
)
from .rollback import Journal

__all__ = ["FileChange", "PatchVerificationError", "VerifiedPatch", "verify_patch"]

MAX_PATH_BYTES = 4096
"""Longest absolute path a patch may name, in bytes (Linux's ``PATH_MAX``)."""
MAX_SHOWN_PATH = 200
"""Characters of an over-long path shown in its error."""


class PatchVerificationError(PatchError):
    """The patch cannot be applied; nothing was written.

    ``str()`` is the text Codex shows after ``apply_patch verification failed: ``.
    """


@dataclass(frozen=True)
class FileChange:
    """What one hunk will do, with absolute paths (for approval cards and events)."""

    kind: Literal["add", "delete", "update"]
    path: Path
    """The file added, deleted or updated (for a move: the source)."""
    patch_path: str
    """``path`` as the patch writes it."""
    old_content: str | None
    """Current text: the deleted or updated file, or the file an Add overwrites."""
    new_content: str | None
    """Text after the change (``None`` for a delete)."""
    unified_diff: str = ""
    """For an update: unified diff with 1 line of context."""
    move_path: Path | None = None
    patch_move_path: str | None = None


@dataclass
class VerifiedPatch:
    """A patch whose every hunk was checked against the files on disk."""

    patch: str
    """The normalized patch text (trimmed, heredoc wrapper removed)."""
    cwd: Path
    hunks: list[Hunk]
    changes: list[FileChange] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        """True when the patch has no hunks (Codex answers ``patch rejected: empty patch``)."""
        return not self.hunks

    @property
    def touched_paths(self) -> list[Path]:
        """Every absolute path the patch writes or removes, move destinations included."""
        seen: dict[Path, None] = {}
        for change in self.changes:
            seen[change.path] = None
            if change.move_path is not None:
                seen[change.move_path] = None
        return list(seen)

    def summary(self) -> str:
        """The text :meth:`apply` returns on success."""
        return summary_for(self.hunks)

    def apply(self, files: PlainFiles = PLAIN) -> str:
        """Write every change in patch order and return the summary.

        ``files`` makes the writes (:class:`~.files.ConfinedFiles` keeps them inside the
        writable roots). On a failure everything already changed is restored and
        :class:`PatchApplyError` is raised.
        """
        if not self.hunks:
            raise PatchApplyError(NO_FILES_MODIFIED)
        journal = Journal(files)
        try:
            for hunk, change in zip(self.hunks, self.changes, strict=True):
                _apply_change(hunk, change, journal, files)
        except (PatchApplyError, OSError, ValueError) as error:
            message = error.message if isinstance(error, PatchApplyError) else io_error_text(error)
            problems = journal.rollback()
            if problems:
                message += "\nRollback incomplete: " + "; ".join(problems)
            raise PatchApplyError(message) from error
        return self.summary()


def verify_patch(patch_text: str, cwd: str | os.PathLike[str]) -> VerifiedPatch:
    """Parse ``patch_text`` and check every hunk against the files under ``cwd``."""
    _check_text(patch_text)
    try:
        patch = parse_patch(patch_text)
    except PatchParseError as error:
        raise PatchVerificationError(str(error)) from error
    base = Path(os.path.abspath(os.fspath(cwd)))
    sources = [resolve_patch_path(base, hunk.path) for hunk in patch.hunks]
    for hunk, source in zip(patch.hunks, sources, strict=True):
        _check_path(source)
        move = hunk.move_path if isinstance(hunk, UpdateFile) else None
        if move is not None:
            _check_path(resolve_patch_path(base, move))
    seen: set[Path] = set()
    for source in sources:
        if source in seen:
            raise PatchVerificationError(f"invalid patch: multiple operations target {source}")
        seen.add(source)
    verified = VerifiedPatch(patch=patch.text, cwd=base, hunks=patch.hunks)
    for hunk, source in zip(patch.hunks, sources, strict=True):
        verified.changes.append(_verify_hunk(hunk, source, base))
    return verified


def _check_text(patch_text: str) -> None:
    """Refuse text no file could hold: a lone surrogate is not UTF-8 (JSON lets one in)."""
    try:
        patch_text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PatchVerificationError(
            f"patch is not valid UTF-8: lone surrogate at character {exc.start}"
        ) from None


def _check_path(path: Path) -> None:
    """Refuse a path the OS cannot take, before any file is touched."""
    text = str(path)
    if "\0" in text:
        raise PatchVerificationError(f"Failed to read {text!r}: {NUL_IN_PATH}")
    if len(text.encode("utf-8")) >= MAX_PATH_BYTES:
        too_long = rust_os_error(OSError(errno.ENAMETOOLONG, ""))
        raise PatchVerificationError(f"Failed to read {text[:MAX_SHOWN_PATH]}...: {too_long}")


def _verify_hunk(hunk: Hunk, source: Path, base: Path) -> FileChange:
    if isinstance(hunk, AddFile):
        try:
            overwritten: str | None = read_utf8(source)
        except (OSError, ValueError):
            overwritten = None
        return FileChange("add", source, hunk.path, overwritten, hunk.contents)
    if isinstance(hunk, DeleteFile):
        try:
            content = read_utf8(source)
        except (OSError, ValueError) as exc:
            raise PatchVerificationError(f"Failed to read {source}: {io_error_text(exc)}") from None
        return FileChange("delete", source, hunk.path, content, None)
    original = _read_for_update(source, PatchVerificationError)
    try:
        new_text = derive_new_contents(
            str(source), original, hunk.chunks, preserve_line_endings=True
        )
    except PatchApplyError as error:
        raise PatchVerificationError(error.message) from None
    move = None if hunk.move_path is None else resolve_patch_path(base, hunk.move_path)
    return FileChange(
        "update",
        source,
        hunk.path,
        original,
        new_text,
        unified_diff(original, new_text),
        move,
        hunk.move_path,
    )


def _read_for_update(path: Path, error_type: type[PatchError], files: PlainFiles = PLAIN) -> str:
    try:
        return read_utf8(path, files)
    except (OSError, ValueError) as exc:
        raise error_type(f"Failed to read file to update {path}: {io_error_text(exc)}") from None


def _apply_change(hunk: Hunk, change: FileChange, journal: Journal, files: PlainFiles) -> None:
    path = str(change.path)
    if isinstance(hunk, AddFile):
        _write_new(path, hunk.contents, journal, files)
    elif isinstance(hunk, DeleteFile):
        journal.remember(path)
        _remove(path, "Failed to delete file", files)
    else:
        # Read again: an earlier hunk (a move) may have written this file.
        current = _read_for_update(change.path, PatchApplyError, files)
        new_text = derive_new_contents(path, current, hunk.chunks, preserve_line_endings=True)
        if change.move_path is None:
            journal.remember(path)
            _write(path, new_text, files)
            return
        _write_new(str(change.move_path), new_text, journal, files)
        journal.remember(path)
        _remove(path, "Failed to remove original", files)


def _failed(what: str, path: str, error: BaseException) -> PatchApplyError:
    """The error of a failed write; a write out of the writable roots says why."""
    if isinstance(error, OutsideWritableRoots):
        return PatchApplyError(f"Failed to write file {path}: {rust_os_error(error)}")
    return PatchApplyError(f"{what} {path}")


def _remove(path: str, what: str, files: PlainFiles) -> None:
    try:
        files.remove(path)
    except (OSError, ValueError) as exc:
        raise _failed(what, path, exc) from None


def _write_new(path: str, text: str, journal: Journal, files: PlainFiles) -> None:
    journal.remember(path)
    try:
        journal.make_parents(path)
    except (OSError, ValueError) as exc:
        raise _failed("Failed to create parent directories for", path, exc) from None
    _write(path, text, files)


def _write(path: str, text: str, files: PlainFiles) -> None:
    try:
        write_text(path, text, files)
    except (OSError, ValueError) as exc:
        raise _failed("Failed to write file", path, exc) from None
