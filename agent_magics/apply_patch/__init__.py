"""Codex's apply_patch format in pure Python: grammar, parser, matcher and appliers.

* :func:`parse_patch` turns patch text into :class:`AddFile`, :class:`DeleteFile` and
  :class:`UpdateFile` hunks (raising :class:`PatchParseError`);
* :func:`seek_sequence` finds lines in a file the way Codex does (four passes);
* :func:`derive_new_contents` computes a file's new text from Update chunks;
* :func:`apply_patch_to_disk` is the standalone program (``python -m
  agent_magics.apply_patch``): hunks in order, earlier changes stay on a failure;
* :func:`verify_patch` / :meth:`VerifiedPatch.apply` are the model-facing tool's path:
  everything checked first, then written all or nothing, through :class:`PlainFiles` or
  :class:`ConfinedFiles` (writes that a path swapped meanwhile cannot lead out of the
  writable roots).
"""

from __future__ import annotations

from .apply import StandaloneResult, apply_hunks_to_disk, apply_patch_to_disk, format_summary
from .content import PatchApplyError, derive_new_contents, unified_diff
from .files import ConfinedFiles, OutsideWritableRoots, PlainFiles
from .fsops import resolve_patch_path
from .grammar import LARK_GRAMMAR
from .parser import (
    AddFile,
    DeleteFile,
    Hunk,
    Patch,
    PatchError,
    PatchParseError,
    UpdateFile,
    UpdateFileChunk,
    parse_patch,
)
from .seek import seek_sequence
from .verified import FileChange, PatchVerificationError, VerifiedPatch, verify_patch

__all__ = [
    "LARK_GRAMMAR",
    "AddFile",
    "ConfinedFiles",
    "DeleteFile",
    "FileChange",
    "Hunk",
    "OutsideWritableRoots",
    "Patch",
    "PatchApplyError",
    "PatchError",
    "PatchParseError",
    "PatchVerificationError",
    "PlainFiles",
    "StandaloneResult",
    "UpdateFile",
    "UpdateFileChunk",
    "VerifiedPatch",
    "apply_hunks_to_disk",
    "apply_patch_to_disk",
    "derive_new_contents",
    "format_summary",
    "parse_patch",
    "resolve_patch_path",
    "seek_sequence",
    "unified_diff",
    "verify_patch",
]
