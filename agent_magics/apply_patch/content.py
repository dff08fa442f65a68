"""Compute a file's new text from Update File chunks, and a unified diff for display.

Two behaviours exist in Codex and both are reproduced:

* the standalone ``apply_patch`` program (``preserve_line_endings=False``): the file is
  split on ``\\n`` (a ``\\r`` stays part of its line), each matched region is replaced by
  the chunk's new lines, a pure-addition chunk goes before a final blank line, and the
  result always ends with exactly the ``\\n`` handling described in
  :func:`derive_new_contents`;
* the model-facing tool (``preserve_line_endings=True``): every line keeps its own
  ending, lines written from the patch get the file's first line ending, context lines
  are kept exactly as they are in the file, and a pure-addition chunk goes at the very
  end.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from .parser import PatchError, UpdateFileChunk
from .seek import seek_sequence

__all__ = ["PatchApplyError", "derive_new_contents", "unified_diff"]

Replacement = tuple[int, int, list[str]]


class PatchApplyError(PatchError):
    """A hunk could not be applied; ``str()`` is Codex's message."""


def derive_new_contents(
    path: str,
    original_text: str,
    chunks: Sequence[UpdateFileChunk],
    *,
    preserve_line_endings: bool = False,
) -> str:
    """The text of the file at ``path`` after applying ``chunks`` to ``original_text``.

    ``path`` is only used in error messages. Raises :class:`PatchApplyError` with
    ``Failed to find context '…' in <path>`` or
    ``Failed to find expected lines in <path>:\\n<old lines>``.
    """
    if preserve_line_endings:
        return _derive_preserving_endings(path, original_text, chunks)
    lines = original_text.split("\n")
    if lines[-1] == "":
        lines.pop()
    for start, old_len, new in reversed(_replacements(lines, path, chunks, legacy=True)):
        lines[start : start + old_len] = new
    if not lines or lines[-1] != "":
        lines.append("")
    return "\n".join(lines)


def _derive_preserving_endings(path: str, text: str, chunks: Sequence[UpdateFileChunk]) -> str:
    pieces = text.split("\n")
    texts: list[str] = []
    endings: list[str] = []
    for piece in pieces[:-1]:
        crlf = piece.endswith("\r")
        texts.append(piece[:-1] if crlf else piece)
        endings.append("\r\n" if crlf else "\n")
    if pieces[-1]:
        texts.append(pieces[-1])
        endings.append("")
    # The first line ending in the file is the one new lines get (as rustfmt and Ruff do).
    preferred = endings[0] if endings and endings[0] else "\n"
    new_texts: list[str] = []
    new_endings: list[str] = []
    cursor = 0
    for start, old_len, new in _replacements(texts, path, chunks, legacy=False):
        new_texts += texts[cursor:start] + new
        new_endings += endings[cursor:start] + [preferred] * len(new)
        cursor = start + old_len
    new_texts += texts[cursor:]
    new_endings += endings[cursor:]
    return "".join(
        body + (ending or preferred) for body, ending in zip(new_texts, new_endings, strict=True)
    )


def _replacements(
    lines: list[str], path: str, chunks: Sequence[UpdateFileChunk], *, legacy: bool
) -> list[Replacement]:
    replacements: list[Replacement] = []
    cursor = 0
    for chunk in chunks:
        if chunk.change_context is not None:
            found = seek_sequence(lines, [chunk.change_context], cursor, False)
            if found is None:
                raise PatchApplyError(f"Failed to find context '{chunk.change_context}' in {path}")
            cursor = found + 1
        if not chunk.old_lines:
            at_end = len(lines)
            if legacy and lines and lines[-1] == "":
                at_end -= 1
            replacements.append((at_end, 0, list(chunk.new_lines)))
            continue
        pattern, new = chunk.old_lines, chunk.new_lines
        found = seek_sequence(lines, pattern, cursor, chunk.is_end_of_file)
        if found is None and pattern[-1] == "":
            pattern = pattern[:-1]
            if new and new[-1] == "":
                new = new[:-1]
            found = seek_sequence(lines, pattern, cursor, chunk.is_end_of_file)
        if found is None:
            old = "\n".join(chunk.old_lines)
            raise PatchApplyError(f"Failed to find expected lines in {path}:\n{old}")
        if legacy:
            replacements.append((found, len(pattern), list(new)))
        else:
            replacements += _split_around_context(found, pattern, new, chunk.context_lines)
        cursor = found + len(pattern)
    replacements.sort(key=lambda item: item[0])
    return replacements


def _split_around_context(
    found: int, pattern: list[str], new: list[str], context: list[tuple[int, int]]
) -> list[Replacement]:
    """Replace only the changed runs between context lines, leaving the context as is."""
    result: list[Replacement] = []
    old_start = new_start = 0
    for old_index, new_index in context:
        if old_index >= len(pattern) or new_index >= len(new):
            break
        if old_start != old_index or new_start != new_index:
            result.append((found + old_start, old_index - old_start, new[new_start:new_index]))
        old_start, new_start = old_index + 1, new_index + 1
    if old_start != len(pattern) or new_start != len(new):
        result.append((found + old_start, len(pattern) - old_start, new[new_start:]))
    return result


def _diff_lines(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+", text)


def _hunk_range(start: int, end: int) -> str:
    length = end - start
    if length == 1:
        return str(start + 1)
    return f"{start + (1 if length else 0)},{length}"


def unified_diff(old_text: str, new_text: str, context: int = 1) -> str:
    """A header-less unified diff of two texts, for display (Codex shows 1 context line)."""
    old, new = _diff_lines(old_text), _diff_lines(new_text)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    out: list[str] = []
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_hunk_range(first[1], last[2])} +{_hunk_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [_diff_line(" ", line) for line in old[i1:i2]]
                continue
            out += [_diff_line("-", line) for line in old[i1:i2]]
            out += [_diff_line("+", line) for line in new[j1:j2]]
    return "".join(out)


def _diff_line(sign: str, line: str) -> str:
    if line.endswith("\n"):
        return sign + line
    return f"{sign}{line}\n\\ No newline at end of file\n"
