"""``list_dir``: a breadth-first listing of a directory, a few levels deep, one page at a time.

Every entry is keyed by its path relative to the listed directory; all keys are sorted
together byte-wise (so ``a-b`` and ``a.txt`` sort between ``a/`` and ``a``'s children, as
in Codex) and printed indented by their depth, with ``/`` for directories, ``@`` for
symbolic links (never followed) and ``?`` for anything that is neither file nor folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import compress, islice
from operator import attrgetter
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
CHUNK = 256  # directory entries held at a time while a folder is read
INDENT = "  "  # per level of nesting
_name = attrgetter("name")


class ListDirArgs(BaseModel):
    dir_path: str
    offset: int = Field(default=DEFAULT_OFFSET, ge=0, le=U64_MAX)
    limit: int = Field(default=DEFAULT_LIMIT, ge=0, le=U64_MAX)
    depth: int = Field(default=DEFAULT_DEPTH, ge=0, le=U64_MAX)


@dataclass
class Listing:
    """Every entry within the depth, in the order read: breadth first, the folders of a
    level in the order of their keys, each folder's entries as the system gave them.

    A key is the UTF-8 of the entry's relative path, as Codex keys it: decoded (bytes
    that are not UTF-8 replaced), ``\\`` turned to ``/``, cut to MAX_ENTRY_BYTES on a
    character boundary. Byte order is code point order, as Codex compares."""

    keys: list[bytes] = field(default_factory=list)
    names: list[bytes] = field(default_factory=list)  # each entry's own name, as read
    where: list[int] = field(default_factory=list)  # each entry's folder in ``folders``
    folders: list[tuple[bytes, int]] = field(default_factory=list)  # path, level

    def line(self, i: int) -> str:
        folder, level = self.folders[self.where[i]]
        raw = self.names[i]
        name = cut_at_char_boundary(raw.decode("utf-8", "replace"), MAX_ENTRY_BYTES)
        return f"{INDENT * level}{name}{_suffix(os.path.join(folder, raw))}"


def _suffix(path: bytes) -> str:
    """The mark of a shown entry's kind, read once the page is known (only the folders
    among all entries were kept)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        raise RespondToModel(f"failed to inspect entry: {io_error_text(exc)}") from None
    if stat.S_ISLNK(mode):
        return "@"
    if stat.S_ISDIR(mode):
        return "/"
    return "" if stat.S_ISREG(mode) else "?"


def _read_dir(path: bytes) -> tuple[list[bytes], list[bool]]:
    """A folder's names, and which of them are folders (links are not followed).

    Entries are read CHUNK at a time, so that the next ones reuse their memory. Like
    Codex, every entry's kind is read: one that cannot be inspected fails the call."""
    names: list[bytes] = []
    folders: list[bool] = []
    try:
        entries = os.scandir(path)
    except (OSError, ValueError) as exc:
        raise RespondToModel(f"failed to read directory: {io_error_text(exc)}") from None
    with entries:
        while chunk := _chunk(entries):
            names += map(_name, chunk)
            try:
                folders += [entry.is_dir(follow_symlinks=False) for entry in chunk]
            except OSError as exc:
                raise RespondToModel(f"failed to inspect entry: {io_error_text(exc)}") from None
    return names, folders


def _chunk(entries: Iterator[os.DirEntry[bytes]]) -> list[os.DirEntry[bytes]]:
    try:
        return list(islice(entries, CHUNK))
    except OSError as exc:
        raise RespondToModel(f"failed to read directory: {io_error_text(exc)}") from None


def _key_names(raw: list[bytes]) -> list[bytes]:
    """A folder's names as keys: themselves when they are UTF-8 without ``\\``, as
    most are (checked on all of them joined by NUL, which no name holds, so that the
    decoding of one name cannot reach into the next)."""
    joined = b"\0".join(raw)
    if b"\\" not in joined:
        if joined.isascii():
            return raw
        with contextlib.suppress(UnicodeDecodeError):
            joined.decode("utf-8")
            return raw
    text = joined.decode("utf-8", "replace").replace("\\", "/")
    return text.encode("utf-8").split(b"\0")


def _cut(keys: list[bytes]) -> list[bytes]:
    if max(map(len, keys)) <= MAX_ENTRY_BYTES:
        return keys
    return [k[:MAX_ENTRY_BYTES].decode("utf-8", "ignore").encode("utf-8") for k in keys]


def collect_entries(root: str, depth: int) -> Listing:
    """Every entry within ``depth`` levels of ``root``."""
    listing = Listing()
    queue: deque[tuple[bytes, bytes, int, int]] = deque([(os.fsencode(root), b"", 0, depth)])
    while queue:
        folder, prefix, level, remaining = queue.popleft()
        names, folders = _read_dir(folder)
        if not names:
            continue
        paths = _key_names(names)
        if prefix:
            paths = [prefix + path for path in paths]
        keys = _cut(paths)
        if remaining > 1:
            found = sorted(compress(range(len(names)), folders), key=keys.__getitem__)
            queue.extend(
                (os.path.join(folder, names[i]), paths[i] + b"/", level + 1, remaining - 1)
                for i in found
            )
        listing.keys += keys
        listing.names += names
        listing.where += [len(listing.folders)] * len(names)
        listing.folders.append((folder, level))
    return listing


def page(listing: Listing, offset: int, limit: int) -> list[str]:
    """The lines of one page of the entries sorted by key (entries of equal keys in the
    order read), with the "More than" note when entries remain.

    The keys alone are sorted (sorting entries by key costs half as much again); the
    entries holding the page's keys, sorted by key, then hold the page, from the rank of
    its first key on."""
    keys = listing.keys
    total = len(keys)
    if not total:
        return []
    start = offset - 1
    if start >= total:
        raise RespondToModel("offset exceeds directory entry count")
    ranked = sorted(keys)
    page_keys = ranked[start : start + limit]
    wanted = set(page_keys)
    holders = sorted(compress(range(total), map(wanted.__contains__, keys)), key=keys.__getitem__)
    skip = start - bisect_left(ranked, page_keys[0])
    shown = holders[skip : skip + len(page_keys)]
    lines = [listing.line(i) for i in shown]
    if start + len(shown) < total:
        lines.append(f"More than {len(shown)} entries found")
    return lines


def list_page(root: str, depth: int, offset: int, limit: int) -> list[str]:
    return page(collect_entries(root, depth), offset, limit)


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
        lines = await asyncio.to_thread(
            list_page, args.dir_path, args.depth, args.offset, args.limit
        )
        return ToolOutput("\n".join([f"Absolute path: {args.dir_path}", *lines]))
