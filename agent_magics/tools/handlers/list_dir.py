"""``list_dir``: a breadth-first listing of a directory, a few levels deep, one page at a time.

Every entry is keyed by its path relative to the listed directory; all keys are sorted
together byte-wise (so ``a-b`` and ``a.txt`` sort between ``a/`` and ``a``'s children, as
in Codex) and printed indented by their depth, with ``/`` for directories, ``@`` for
symbolic links (never followed) and ``?`` for anything that is neither file nor folder.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from agent_magics.errors import RespondToModel
from agent_magics.text.rust import U64_MAX, cut_at_char_boundary, io_error_text
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.sandbox.platform import off_limits
from agent_magics.tools.spec import FunctionSpec, ToolSpec, number, obj, string

LIST_DIR_DESCRIPTION = (
    "List what a local folder contains, recursing a few levels. Output starts with the "
    "folder's absolute path, then one entry per line, indented two spaces per level; "
    "folders end in `/`, symbolic links in `@`, other special files in `?`. Use `offset` "
    "and `limit` to page through long listings."
)


def list_dir_spec(config: ToolsConfig) -> ToolSpec:
    params = obj(
        {
            "dir_path": string("Absolute path of the folder to list."),
            "offset": number("1-based number of the first entry to show (at least 1)."),
            "limit": number("Largest number of entries to show."),
            "depth": number("How many levels to descend; 1 lists only direct children."),
        },
        ["dir_path"],
    )
    return FunctionSpec("list_dir", LIST_DIR_DESCRIPTION, params)


DEFAULT_OFFSET = 1
DEFAULT_LIMIT = 25
DEFAULT_DEPTH = 2
MAX_ENTRY_BYTES = 500  # names and sort keys are cut to this many UTF-8 bytes
INDENT = "  "  # per level of nesting


class ListDirArgs(BaseModel):
    dir_path: str
    offset: int = Field(default=DEFAULT_OFFSET, ge=0, le=U64_MAX)
    limit: int = Field(default=DEFAULT_LIMIT, ge=0, le=U64_MAX)
    depth: int = Field(default=DEFAULT_DEPTH, ge=0, le=U64_MAX)


@dataclass(frozen=True)
class Entry:
    key: str  # relative path with "/" separators, the sort key
    name: str  # the entry's own name as displayed
    level: int  # how many folders deep below the listed one
    suffix: str  # "/", "@", "?" or ""

    def line(self) -> str:
        return f"{INDENT * self.level}{self.name}{self.suffix}"


def _text(raw: bytes) -> str:
    return cut_at_char_boundary(raw.decode("utf-8", "replace"), MAX_ENTRY_BYTES)


def _suffix(entry: os.DirEntry[bytes]) -> str:
    try:
        if entry.is_symlink():
            return "@"
        if entry.is_dir(follow_symlinks=False):
            return "/"
        if entry.is_file(follow_symlinks=False):
            return ""
    except OSError as exc:
        raise RespondToModel(f"failed to inspect entry: {io_error_text(exc)}") from None
    return "?"


def _read_dir(path: bytes) -> list[os.DirEntry[bytes]]:
    try:
        with os.scandir(path) as it:
            return list(it)
    except (OSError, ValueError) as exc:
        raise RespondToModel(f"failed to read directory: {io_error_text(exc)}") from None


def collect_entries(root: str, depth: int) -> list[Entry]:
    """Every entry within ``depth`` levels of ``root``, sorted by relative path."""
    entries: list[Entry] = []
    queue: deque[tuple[bytes, bytes | None, int, int]] = deque(
        [(os.fsencode(root), None, 0, depth)]
    )
    while queue:
        folder, prefix, level, remaining = queue.popleft()
        found: list[tuple[Entry, bytes, bytes]] = []
        for item in _read_dir(folder):
            rel = item.name if prefix is None else prefix + b"/" + item.name
            key = _text(rel.replace(b"\\", b"/"))
            found.append((Entry(key, _text(item.name), level, _suffix(item)), item.path, rel))
        found.sort(key=lambda f: f[0].key)
        for entry, path, rel in found:
            if entry.suffix == "/" and remaining > 1:
                queue.append((path, rel, level + 1, remaining - 1))
            entries.append(entry)
    entries.sort(key=lambda e: e.key)
    return entries


def page(entries: list[Entry], offset: int, limit: int) -> list[str]:
    """The lines of one page, with the "More than" note when entries remain."""
    if not entries:
        return []
    start = offset - 1
    if start >= len(entries):
        raise RespondToModel("offset exceeds directory entry count")
    shown = entries[start : start + limit]
    lines = [e.line() for e in shown]
    if start + len(shown) < len(entries):
        lines.append(f"More than {len(shown)} entries found")
    return lines


class ListDirHandler:
    """The ``list_dir`` tool."""

    name = "list_dir"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return list_dir_spec(config)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(ListDirArgs, inv)
        if args.offset == 0:
            raise RespondToModel("offset must be a 1-indexed entry number")
        if args.limit == 0:
            raise RespondToModel("limit must be greater than zero")
        if args.depth == 0:
            raise RespondToModel("depth must be greater than zero")
        if not os.path.isabs(args.dir_path):
            raise RespondToModel("dir_path must be an absolute path")
        if (why := off_limits(inv.turn.cwd, args.dir_path)) is not None:
            raise RespondToModel(f"failed to read directory: {why}")
        entries = await asyncio.to_thread(collect_entries, args.dir_path, args.depth)
        lines = page(entries, args.offset, args.limit)
        return ToolOutput("\n".join([f"Absolute path: {args.dir_path}", *lines]))
