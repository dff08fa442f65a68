"""``read_file``: numbered lines of a local file, as a plain range or as an indented block.

Slice mode streams the file in large binary chunks and counts newlines per chunk, so a
window deep inside a huge file costs one sequential scan and a bounded amount of memory.
Indentation mode reads every line, then grows a window around an anchor line following
indentation, the way Codex does (quirks included; see the reference, section 3.5).
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from typing import Literal

from pydantic import BaseModel, Field

from agent_magics.errors import RespondToModel
from agent_magics.text.rust import RUST_WHITESPACE, U64_MAX, cut_at_char_boundary, io_error_text
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.sandbox.platform import off_limits
from agent_magics.tools.spec import (
    FunctionSpec,
    JsonSchema,
    ToolSpec,
    boolean,
    number,
    obj,
    string,
)

READ_FILE_DESCRIPTION = (
    "Show lines of a local text file, each prefixed with its 1-based line number "
    "(`L<n>: `). In the default slice mode you get `limit` lines starting at `offset`; "
    "indentation mode instead returns the code block around an anchor line, widening "
    "to enclosing blocks as configured."
)


def _read_file_parameters() -> JsonSchema:
    indentation = obj(
        {
            "anchor_line": number("Line to build the block around; `offset` when omitted."),
            "max_levels": number(
                "Number of enclosing (less indented) levels to include; 0 means no limit."
            ),
            "include_siblings": boolean(
                "Also return neighbouring blocks indented like the anchor's block."
            ),
            "include_header": boolean(
                "Keep comment lines (doc comments, attributes) right above the block."
            ),
            "max_lines": number("Upper bound on the lines returned in indentation mode."),
        }
    )
    return obj(
        {
            "file_path": string("Absolute path of the file to read."),
            "offset": number("1-based number of the first line to return (at least 1)."),
            "limit": number("Largest number of lines to return."),
            "mode": string(
                'Either "slice" (a plain line range, the default) or "indentation" '
                "(the block around an anchor line)."
            ),
            "indentation": indentation,
        },
        ["file_path"],
    )


def read_file_spec(config: ToolsConfig) -> ToolSpec:
    return FunctionSpec("read_file", READ_FILE_DESCRIPTION, _read_file_parameters())


DEFAULT_OFFSET = 1
DEFAULT_LIMIT = 2000
MAX_LINE_BYTES = 500  # a displayed line is cut to this many UTF-8 bytes
TAB_WIDTH = 4  # a tab counts as this many columns of indentation
COMMENT_PREFIXES = ("#", "//", "--")
CHUNK_BYTES = 1 << 20  # slice mode reads the file this many bytes at a time
# Raw bytes kept per line: the lossy decoding of a line never has fewer bytes than the
# raw line, so 500 displayed bytes come from at most 500 raw ones; the rest is margin
# for a character that straddles the cut.
KEEP_BYTES = 2 * MAX_LINE_BYTES


class IndentationOptions(BaseModel):
    anchor_line: int | None = Field(default=None, ge=0, le=U64_MAX)
    max_levels: int = Field(default=0, ge=0, le=U64_MAX)
    include_siblings: bool = False
    include_header: bool = True
    max_lines: int | None = Field(default=None, ge=0, le=U64_MAX)


class ReadFileArgs(BaseModel):
    file_path: str
    offset: int = Field(default=DEFAULT_OFFSET, ge=0, le=U64_MAX)
    limit: int = Field(default=DEFAULT_LIMIT, ge=0, le=U64_MAX)
    mode: Literal["slice", "indentation"] = "slice"
    indentation: IndentationOptions | None = None


def _render(number: int, raw: bytearray, full_len: int, terminated: bool) -> str:
    """Render a line of which ``raw`` holds the first bytes (all of it if it is short)."""
    if terminated and full_len == len(raw) and raw.endswith(b"\r"):
        del raw[-1]
    text = cut_at_char_boundary(raw.decode("utf-8", "replace"), MAX_LINE_BYTES)
    return f"L{number}: {text}"


def read_slice(
    path: str,
    offset: int,
    limit: int,
    chunk_bytes: int = CHUNK_BYTES,
) -> list[str]:
    """Lines ``offset .. offset+limit-1`` of ``path``, rendered; reads no further. The
    newlines before the window are counted a chunk at a time (``bytes.count``: about
    0.3 s for 1 GiB)."""
    out: list[str] = []
    buf = bytearray(chunk_bytes)
    view = memoryview(buf)
    to_skip = offset - 1  # newlines to pass before the first wanted line starts
    number = 0  # lines completed so far
    line = bytearray()  # first KEEP_BYTES bytes of the line being read
    line_len = 0  # its full length so far
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            pos = 0
            if to_skip:
                passed = buf.count(b"\n", 0, n)
                if passed < to_skip:
                    to_skip -= passed
                    number += passed
                    continue
                for _ in range(to_skip):
                    pos = buf.index(b"\n", pos, n) + 1
                number += to_skip
                to_skip = 0
            while pos < n:
                nl = buf.find(b"\n", pos, n)
                end = n if nl < 0 else nl
                room = KEEP_BYTES - len(line)
                if room > 0:
                    line += view[pos : min(end, pos + room)]
                line_len += end - pos
                if nl < 0:
                    break
                number += 1
                out.append(_render(number, line, line_len, True))
                if len(out) >= limit:
                    return out
                line = bytearray()
                line_len = 0
                pos = nl + 1
    if line_len and not to_skip:
        out.append(_render(number + 1, line, line_len, False))
    if not out:
        raise RespondToModel("offset exceeds file length")
    return out


def _split_lines(data: bytes) -> list[bytes]:
    """Lines as Codex sees them: split on LF, one CR before each LF dropped."""
    if not data:
        return []
    parts = data.split(b"\n")
    last = parts.pop()
    lines = [p[:-1] if p.endswith(b"\r") else p for p in parts]
    if last:
        lines.append(last)
    return lines


def _indent(text: str) -> int:
    """Leading indentation: a space counts 1, a tab ``TAB_WIDTH``; anything else stops."""
    lead = text[: len(text) - len(text.lstrip(" \t"))]
    return len(lead) + (TAB_WIDTH - 1) * lead.count("\t")


def _expand(
    effective: list[int],
    is_comment: list[bool],
    a: int,
    min_indent: int,
    final_limit: int,
    options: IndentationOptions,
) -> deque[int]:
    """Grow the window around line ``a`` one line up, one line down, per round."""
    count = len(effective)
    siblings, header = options.include_siblings, options.include_header
    out = deque([a])
    up, down = a - 1, a + 1
    up_hits = down_hits = 0
    while len(out) < final_limit:
        progressed = 0
        if up >= 0:
            i = up
            if effective[i] < min_indent:
                up = -1
            else:
                out.appendleft(i)
                progressed += 1
                up -= 1
                if effective[i] == min_indent and not siblings:
                    if (header and is_comment[i]) or up_hits == 0:
                        up_hits += 1
                    else:  # a second sibling at the outer level: give it back, stop
                        out.popleft()
                        progressed -= 1
                        up = -1
                if len(out) >= final_limit:
                    break
        if down < count:
            j = down
            if effective[j] < min_indent:
                down = count
            else:
                out.append(j)
                progressed += 1
                down += 1
                if effective[j] == min_indent and not siblings:
                    if down_hits > 0:  # only the first outer-level line (a closer) is kept
                        out.pop()
                        progressed -= 1
                        down = count
                    down_hits += 1
        if not progressed:
            break
    return out


def read_block(path: str, offset: int, limit: int, options: IndentationOptions) -> list[str]:
    """Indentation mode: the block around the anchor line (reference §3.5)."""
    anchor = options.anchor_line if options.anchor_line is not None else offset
    if anchor == 0:
        raise RespondToModel("anchor_line must be a 1-indexed line number")
    guard = options.max_lines if options.max_lines is not None else limit
    if guard == 0:
        raise RespondToModel("max_lines must be greater than zero")
    with open(path, "rb") as f:
        texts = [r.decode("utf-8", "replace") for r in _split_lines(f.read())]
    count = len(texts)
    if count == 0 or anchor > count:
        raise RespondToModel("anchor_line exceeds file length")
    stripped = [t.strip(RUST_WHITESPACE) for t in texts]
    effective: list[int] = []
    previous = 0  # a blank line takes the indentation of the last non-blank one
    for text, bare in zip(texts, stripped, strict=True):
        if bare:
            previous = _indent(text)
        effective.append(previous)
    a = anchor - 1
    levels = options.max_levels
    min_indent = 0 if levels == 0 else max(0, effective[a] - levels * TAB_WIDTH)
    final_limit = min(limit, guard, count)
    if final_limit == 1:
        window: deque[int] = deque([a])
    else:
        is_comment = [bare.startswith(COMMENT_PREFIXES) for bare in stripped]
        window = _expand(effective, is_comment, a, min_indent, final_limit, options)
        while window and not stripped[window[0]]:
            window.popleft()
        while window and not stripped[window[-1]]:
            window.pop()
    return [f"L{i + 1}: {cut_at_char_boundary(texts[i], MAX_LINE_BYTES)}" for i in window]


class ReadFileHandler:
    """The ``read_file`` tool."""

    name = "read_file"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return read_file_spec(config)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(ReadFileArgs, inv)
        if args.offset == 0:
            raise RespondToModel("offset must be a 1-indexed line number")
        if args.limit == 0:
            raise RespondToModel("limit must be greater than zero")
        if not os.path.isabs(args.file_path):
            raise RespondToModel("file_path must be an absolute path")
        if (why := off_limits(inv.turn.cwd, args.file_path)) is not None:
            raise RespondToModel(f"failed to read file: {why}")
        path, offset, limit = args.file_path, args.offset, args.limit
        options = args.indentation or IndentationOptions()
        try:
            if args.mode == "slice":
                lines = await asyncio.to_thread(read_slice, path, offset, limit)
            else:
                lines = await asyncio.to_thread(read_block, path, offset, limit, options)
        except (OSError, ValueError) as exc:
            raise RespondToModel(f"failed to read file: {io_error_text(exc)}") from None
        return ToolOutput("\n".join(lines))
