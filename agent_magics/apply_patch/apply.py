"""The standalone applier: what Codex's ``apply_patch`` program does with a patch.

Hunks are applied one after the other; the first failure stops the run and whatever was
already written stays on disk. Messages name files exactly as the patch spells them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from agent_magics.text.rust import io_error_text

from .content import PatchApplyError, derive_new_contents
from .fsops import read_utf8, rust_parent, write_text
from .parser import AddFile, DeleteFile, Hunk, PatchParseError, UpdateFile, parse_patch

__all__ = [
    "NO_FILES_MODIFIED",
    "StandaloneResult",
    "apply_hunks_to_disk",
    "apply_patch_to_disk",
    "format_summary",
    "standalone_parse_error",
]

NO_FILES_MODIFIED = "No files were modified."


@dataclass(frozen=True)
class StandaloneResult:
    """Exit status and output of one run of the standalone program."""

    exit_code: int
    stdout: str
    stderr: str


def format_summary(added: Sequence[str], modified: Sequence[str], deleted: Sequence[str]) -> str:
    """``Success. Updated the following files:`` then the A, M and D lines, in that order."""
    lines = ["Success. Updated the following files:"]
    lines += [f"A {path}" for path in added]
    lines += [f"M {path}" for path in modified]
    lines += [f"D {path}" for path in deleted]
    return "\n".join(lines) + "\n"


def summary_for(hunks: Sequence[Hunk]) -> str:
    """The success summary for ``hunks``, naming paths as the patch writes them."""
    return format_summary(
        [hunk.path for hunk in hunks if isinstance(hunk, AddFile)],
        [hunk.affected_path for hunk in hunks if isinstance(hunk, UpdateFile)],
        [hunk.path for hunk in hunks if isinstance(hunk, DeleteFile)],
    )


def standalone_parse_error(error: PatchParseError) -> str:
    """How the standalone program reports a parse error on stderr (without the newline)."""
    if error.line_number is None:
        return f"Invalid patch: {error.message}"
    return f"Invalid patch hunk on line {error.line_number}: {error.message}"


def apply_patch_to_disk(patch_text: str, cwd: str | os.PathLike[str]) -> StandaloneResult:
    """Parse and apply ``patch_text`` with relative paths taken from ``cwd``."""
    try:
        patch = parse_patch(patch_text)
    except PatchParseError as error:
        return StandaloneResult(1, "", standalone_parse_error(error) + "\n")
    try:
        summary = apply_hunks_to_disk(patch.hunks, cwd)
    except PatchApplyError as error:
        return StandaloneResult(1, "", f"{error}\n")
    return StandaloneResult(0, summary, "")


def apply_hunks_to_disk(hunks: Sequence[Hunk], cwd: str | os.PathLike[str]) -> str:
    """Apply ``hunks`` in order and return the summary; raise on the first failure."""
    if not hunks:
        raise PatchApplyError(NO_FILES_MODIFIED)
    base = os.fspath(cwd)
    for hunk in hunks:
        target = os.path.join(base, hunk.path)
        if isinstance(hunk, AddFile):
            _write_with_parents(base, hunk.path, hunk.contents)
        elif isinstance(hunk, DeleteFile):
            try:
                os.remove(target)
            except (OSError, ValueError):
                raise PatchApplyError(f"Failed to delete file {hunk.path}") from None
        else:
            try:
                original = read_utf8(target)
            except (OSError, ValueError) as exc:
                raise PatchApplyError(
                    f"Failed to read file to update {hunk.path}: {io_error_text(exc)}"
                ) from None
            new_text = derive_new_contents(hunk.path, original, hunk.chunks)
            if hunk.move_path is None:
                _write(os.path.join(base, hunk.path), hunk.path, new_text)
                continue
            _write_with_parents(base, hunk.move_path, new_text)
            try:
                os.remove(target)
            except (OSError, ValueError):
                raise PatchApplyError(f"Failed to remove original {hunk.path}") from None
    return summary_for(hunks)


def _write_with_parents(base: str, path: str, text: str) -> None:
    parent = rust_parent(path)
    if parent:
        try:
            os.makedirs(os.path.join(base, parent), exist_ok=True)
        except (OSError, ValueError):
            raise PatchApplyError(f"Failed to create parent directories for {path}") from None
    _write(os.path.join(base, path), path, text)


def _write(target: str, shown: str, text: str) -> None:
    try:
        write_text(target, text)
    except (OSError, ValueError):
        raise PatchApplyError(f"Failed to write file {shown}") from None
