"""Parse apply_patch text into hunks, with the leniency of Codex's parser.

The whole text is trimmed, split into lines, checked for the ``*** Begin Patch`` /
``*** End Patch`` markers (a ``<<EOF`` heredoc wrapper is tolerated), and the lines in
between become Add / Delete / Update hunks. Line numbers in errors are 1-based with the
``*** Begin Patch`` line as line 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_magics.text.rust import RUST_WHITESPACE

__all__ = [
    "RUST_WHITESPACE",
    "AddFile",
    "DeleteFile",
    "Hunk",
    "Patch",
    "PatchError",
    "PatchParseError",
    "UpdateFile",
    "UpdateFileChunk",
    "parse_hunk",
    "parse_patch",
    "parse_update_chunk",
    "rust_lines",
    "rust_trim",
    "rust_trim_end",
]


BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File: "
DELETE_FILE = "*** Delete File: "
UPDATE_FILE = "*** Update File: "
MOVE_TO = "*** Move to: "
END_OF_FILE = "*** End of File"
CONTEXT_MARKER = "@@ "
EMPTY_CONTEXT_MARKER = "@@"
HEREDOC_OPENERS = ("<<EOF", "<<'EOF'", '<<"EOF"')

FIRST_LINE_ERROR = "The first line of the patch must be '*** Begin Patch'"
LAST_LINE_ERROR = "The last line of the patch must be '*** End Patch'"
EMPTY_CHUNK_ERROR = "Update hunk does not contain any lines"


def rust_trim(text: str) -> str:
    """``text`` without leading and trailing Unicode white space, like Rust's ``trim``."""
    return text.strip(RUST_WHITESPACE)


def rust_trim_end(text: str) -> str:
    """``text`` without trailing Unicode white space, like Rust's ``trim_end``."""
    return text.rstrip(RUST_WHITESPACE)


def rust_lines(text: str) -> list[str]:
    """Split like Rust's ``str::lines``: on ``\\n``, dropping a ``\\r`` right before it.

    A final line ending does not produce an empty last line; ``""`` has no lines.
    """
    if not text:
        return []
    pieces = text.split("\n")
    ends_with_newline = pieces[-1] == ""
    if ends_with_newline:
        pieces.pop()
    last = len(pieces) - 1
    return [
        piece[:-1] if piece.endswith("\r") and (index < last or ends_with_newline) else piece
        for index, piece in enumerate(pieces)
    ]


class PatchError(Exception):
    """Base of the errors raised by this package."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class PatchParseError(PatchError):
    """The patch text is malformed.

    ``line_number`` is ``None`` for an error about the whole patch (``invalid patch: …``)
    and the 1-based line of the offending hunk otherwise (``invalid hunk at line N, …``).
    """

    def __init__(self, message: str, line_number: int | None = None) -> None:
        super().__init__(message)
        self.line_number = line_number

    @property
    def kind(self) -> str:
        """``"invalid_patch"`` or ``"invalid_hunk"``."""
        return "invalid_patch" if self.line_number is None else "invalid_hunk"

    def __str__(self) -> str:
        if self.line_number is None:
            return f"invalid patch: {self.message}"
        return f"invalid hunk at line {self.line_number}, {self.message}"


@dataclass
class UpdateFileChunk:
    """One ``@@`` section of an Update File hunk."""

    change_context: str | None
    """Text after ``@@ ``: a line that must be found before ``old_lines``."""
    old_lines: list[str] = field(default_factory=list)
    """Lines to find (context and ``-`` lines)."""
    new_lines: list[str] = field(default_factory=list)
    """Lines that replace them (context and ``+`` lines)."""
    is_end_of_file: bool = False
    """``*** End of File`` followed the chunk: ``old_lines`` must end the file."""
    context_lines: list[tuple[int, int]] = field(default_factory=list)
    """For each context line, its index in ``old_lines`` and in ``new_lines``."""


@dataclass
class AddFile:
    """``*** Add File: path`` with the text of its ``+`` lines."""

    path: str
    contents: str

    @property
    def affected_path(self) -> str:
        """The path the summary line names."""
        return self.path


@dataclass
class DeleteFile:
    """``*** Delete File: path``."""

    path: str

    @property
    def affected_path(self) -> str:
        """The path the summary line names."""
        return self.path


@dataclass
class UpdateFile:
    """``*** Update File: path`` with an optional ``*** Move to:`` and its chunks."""

    path: str
    move_path: str | None
    chunks: list[UpdateFileChunk]

    @property
    def affected_path(self) -> str:
        """The path the summary line names: the move destination when there is one."""
        return self.move_path if self.move_path is not None else self.path


Hunk = AddFile | DeleteFile | UpdateFile


@dataclass
class Patch:
    """A parsed patch."""

    hunks: list[Hunk]
    text: str
    """The normalized patch: trimmed, heredoc wrapper removed, lines joined by ``\\n``."""


def parse_patch(text: str, *, strict: bool = False) -> Patch:
    """Parse ``text``; Codex always parses in the lenient (heredoc-tolerant) mode."""
    lines = rust_lines(rust_trim(text))
    patch_lines = _check_boundaries(lines) if strict else _check_boundaries_lenient(lines)
    hunks: list[Hunk] = []
    remaining = patch_lines[1:-1]
    line_number = 2
    while remaining:
        hunk, consumed = parse_hunk(remaining, line_number)
        hunks.append(hunk)
        line_number += consumed
        remaining = remaining[consumed:]
    return Patch(hunks=hunks, text="\n".join(patch_lines))


def _check_boundaries(lines: list[str]) -> list[str]:
    first = rust_trim(lines[0]) if lines else None
    last = rust_trim(lines[-1]) if lines else None
    if first == BEGIN_PATCH and last == END_PATCH:
        return lines
    if first is not None and first != BEGIN_PATCH:
        raise PatchParseError(FIRST_LINE_ERROR)
    raise PatchParseError(LAST_LINE_ERROR)


def _check_boundaries_lenient(lines: list[str]) -> list[str]:
    try:
        return _check_boundaries(lines)
    except PatchParseError:
        if len(lines) >= 4 and lines[0] in HEREDOC_OPENERS and lines[-1].endswith("EOF"):
            return _check_boundaries(lines[1:-1])
        raise


def parse_hunk(lines: list[str], line_number: int) -> tuple[Hunk, int]:
    """Parse the hunk that starts at ``lines[0]``; return it and how many lines it used."""
    header = rust_trim(lines[0])
    if header.startswith(ADD_FILE):
        contents: list[str] = []
        for line in lines[1:]:
            if not line.startswith("+"):
                break
            contents.append(line[1:] + "\n")
        return AddFile(header[len(ADD_FILE) :], "".join(contents)), 1 + len(contents)
    if header.startswith(DELETE_FILE):
        return DeleteFile(header[len(DELETE_FILE) :]), 1
    if header.startswith(UPDATE_FILE):
        return _parse_update_hunk(header[len(UPDATE_FILE) :], lines, line_number)
    raise PatchParseError(
        f"'{header}' is not a valid hunk header. Valid hunk headers: "
        "'*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'",
        line_number,
    )


def _parse_update_hunk(path: str, lines: list[str], line_number: int) -> tuple[Hunk, int]:
    consumed = 1
    move_path = None
    if len(lines) > 1 and lines[1].startswith(MOVE_TO):
        move_path = lines[1][len(MOVE_TO) :]
        consumed += 1
    chunks: list[UpdateFileChunk] = []
    while consumed < len(lines):
        line = lines[consumed]
        if not rust_trim(line):
            consumed += 1
            continue
        if line.startswith("*"):
            break
        chunk, used = parse_update_chunk(lines[consumed:], line_number + consumed, not chunks)
        chunks.append(chunk)
        consumed += used
    if not chunks:
        raise PatchParseError(f"Update file hunk for path '{path}' is empty", line_number)
    return UpdateFile(path, move_path, chunks), consumed


def parse_update_chunk(
    lines: list[str], line_number: int, allow_missing_context: bool
) -> tuple[UpdateFileChunk, int]:
    """Parse one chunk starting at ``lines[0]`` (its ``@@`` line, when present).

    ``allow_missing_context`` is true for the first chunk of a hunk, which may start
    directly with diff lines. Returns the chunk and the number of lines used.
    """
    if not lines:
        raise PatchParseError(EMPTY_CHUNK_ERROR, line_number)
    first = lines[0]
    if first == EMPTY_CONTEXT_MARKER:
        chunk, start = UpdateFileChunk(None), 1
    elif first.startswith(CONTEXT_MARKER):
        chunk, start = UpdateFileChunk(first[len(CONTEXT_MARKER) :]), 1
    elif allow_missing_context:
        chunk, start = UpdateFileChunk(None), 0
    else:
        raise PatchParseError(
            f"Expected update hunk to start with a @@ context marker, got: '{first}'",
            line_number,
        )
    if start >= len(lines):
        raise PatchParseError(EMPTY_CHUNK_ERROR, line_number + 1)
    parsed = 0
    for line in lines[start:]:
        if line == END_OF_FILE:
            if parsed == 0:
                raise PatchParseError(EMPTY_CHUNK_ERROR, line_number + 1)
            chunk.is_end_of_file = True
            parsed += 1
            break
        marker, rest = line[:1], line[1:]
        if marker in ("", " "):
            chunk.context_lines.append((len(chunk.old_lines), len(chunk.new_lines)))
            chunk.old_lines.append(rest)
            chunk.new_lines.append(rest)
        elif marker == "+":
            chunk.new_lines.append(rest)
        elif marker == "-":
            chunk.old_lines.append(rest)
        elif parsed == 0:
            raise PatchParseError(
                f"Unexpected line found in update hunk: '{line}'. Every line should start "
                "with ' ' (context line), '+' (added line), or '-' (removed line)",
                line_number + 1,
            )
        else:
            break
        parsed += 1
    return chunk, start + parsed
