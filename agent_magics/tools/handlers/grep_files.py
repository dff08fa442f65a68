"""``grep_files``: which files contain a regular expression, newest first, via ripgrep.

Codex asks ripgrep itself to sort (``--sortr=modified``), which forces ripgrep onto a
single thread. We run the same search without the sort, so ripgrep uses all its
threads, and order the matching files ourselves the way that sort would have:

* ripgrep reads every file's modification time (following symlinks) and sorts
  newest first with a stable sort; a file whose time cannot be read ranks after every
  readable time in the ascending order that ``--sortr`` reverses, so it comes *first*;
* a stable sort leaves files with equal times in the order its single-threaded walk
  found them: depth first, each folder's entries in the order the OS lists them.
  We rebuild that order by listing only the folders where tied files part ways.

Paths are read NUL-separated (``--null``) so that a name containing a newline cannot
be mistaken for two; the ordered paths are then joined with newlines and parsed
exactly as Codex parses ripgrep's own output. The stat calls and folder listings run
in a worker thread. ripgrep is killed if it outlives the timeout or the call is
cancelled.
"""

from __future__ import annotations

import asyncio
import os
from typing import Literal

from pydantic import BaseModel, Field

from agent_magics.errors import RespondToModel
from agent_magics.text.rust import RUST_WHITESPACE, U64_MAX, io_error_text
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.handlers.ripgrep import find_rg
from agent_magics.tools.sandbox.platform import off_limits, without_secrets
from agent_magics.tools.spec import FunctionSpec, ToolSpec, number, obj, string

GREP_FILES_DESCRIPTION = (
    "Search file contents with a regular expression (ripgrep syntax) and get back the "
    "paths of the files that contain a match, most recently modified first."
)


def grep_files_spec(config: ToolsConfig) -> ToolSpec:
    params = obj(
        {
            "pattern": string("Regular expression to look for in file contents."),
            "include": string(
                'Glob restricting which files are searched, such as "*.py" or "*.{js,jsx}".'
            ),
            "path": string(
                "File or folder to search; relative paths start at the working directory, "
                "which is also the default."
            ),
            "limit": number("Largest number of paths to return (100 when omitted)."),
        },
        ["pattern"],
    )
    return FunctionSpec("grep_files", GREP_FILES_DESCRIPTION, params)


DEFAULT_LIMIT = 100
MAX_LIMIT = 2000
TIMEOUT_SECONDS = 30
NO_MATCHES = "No matches found."


class GrepFilesArgs(BaseModel):
    pattern: str
    include: str | None = None
    path: str | None = None
    limit: int = Field(default=DEFAULT_LIMIT, ge=0, le=U64_MAX)


def join_path(cwd: str, path: str) -> str:
    """``path`` against ``cwd`` as Rust's ``Path::join`` spells it (no normalisation)."""
    if os.path.isabs(path):
        return path
    return cwd + path if cwd.endswith(os.sep) else cwd + os.sep + path


def rg_argv(rg: str, pattern: str, include: str | None, search_path: str) -> list[str]:
    """ripgrep's arguments: Codex's, minus ``--sortr=modified``, plus ``--null``."""
    argv = [rg, "--files-with-matches", "--null", "--regexp", pattern, "--no-messages"]
    if include is not None:
        argv += ["--glob", include]
    return [*argv, "--", search_path]


def parse_rg_output(stdout: bytes, limit: int) -> list[str]:
    """Non-empty, valid UTF-8 lines of ripgrep's output, at most ``limit`` of them."""
    results: list[str] = []
    for raw in stdout.split(b"\n"):
        if not raw:
            continue
        try:
            results.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            continue
        if len(results) == limit:
            break
    return results


_SEP = os.sep.encode()
# (the path's components below the search root, the path as ripgrep printed it)
_Entry = tuple[list[bytes], bytes]


class _Listing:
    """A folder's entry names in the order the OS lists them (as ripgrep's walk sees them)."""

    def __init__(self, folder: bytes) -> None:
        try:
            self.names = os.listdir(folder)
        except OSError:
            self.names = []
        self.lookups = 0
        self.index: dict[bytes, int] | None = None

    def rank(self, name: bytes) -> tuple[int, bytes]:
        """Where ``name`` is listed; names no longer there go last, by name."""
        self.lookups += 1
        if self.index is None and self.lookups > 8:  # many lookups: one pass, then O(1)
            self.index = dict(zip(self.names, range(len(self.names)), strict=True))
        if self.index is not None:
            return self.index.get(name, len(self.names)), name
        try:
            return self.names.index(name), name
        except ValueError:
            return len(self.names), name


def _walk_order(root: bytes, tied: list[_Entry], cache: dict[bytes, _Listing]) -> list[bytes]:
    """``tied`` in the order of ripgrep's single-threaded walk from ``root``.

    The walk is depth first and visits each folder's entries in listing order, so
    a folder is listed only where two of the paths part ways below it.
    """
    out: list[bytes] = []
    stack: list[tuple[bytes, list[_Entry], int]] = [(root, tied, 0)]
    while stack:
        folder, group, depth = stack.pop()
        if len(group) == 1:
            out.append(group[0][1])
            continue
        branches: dict[bytes, list[_Entry]] = {}
        for entry in group:
            if len(entry[0]) == depth:  # the search path itself (a file)
                out.append(entry[1])
            else:
                branches.setdefault(entry[0][depth], []).append(entry)
        names = list(branches)
        if len(names) > 1:
            listing = cache.get(folder)
            if listing is None:
                listing = cache[folder] = _Listing(folder)
            names.sort(key=listing.rank)
        for name in reversed(names):
            stack.append((folder + name + _SEP, branches[name], depth + 1))
    return out


def _mtime_ns(path: bytes) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except (OSError, ValueError):
        return None


def order_like_rg(paths: list[bytes], search_path: str, limit: int) -> list[bytes]:
    """The first of ``paths`` in the order ``rg --sortr=modified`` prints them.

    ``paths`` are ripgrep's matches in any order. The result stops once it holds
    enough paths for ``limit`` output lines (see ``parse_rg_output``).
    """
    root = os.fsencode(search_path)
    root = root if root.endswith(_SEP) else root + _SEP
    # Newest first. ripgrep ranks an unreadable time after every readable one and then
    # reverses the whole order, so files without a time come first.
    timed = sorted(
        ((_mtime_ns(path), path) for path in paths),
        key=lambda item: (0, 0) if item[0] is None else (1, -item[0]),
    )
    cache: dict[bytes, _Listing] = {}
    ordered: list[bytes] = []
    lines = 0
    start = 0
    while start < len(timed) and lines < limit:
        end = start + 1
        while end < len(timed) and timed[end][0] == timed[start][0]:
            end += 1
        group = [path for _, path in timed[start:end]]
        if len(group) > 1:
            entries = [
                (path[len(root) :].split(_SEP) if path.startswith(root) else [], path)
                for path in group
            ]
            group = _walk_order(root, entries, cache)
        for path in group:
            ordered.append(path)
            lines += len(parse_rg_output(path, U64_MAX))
            if lines >= limit:
                break
        start = end
    return ordered


def _launch_error(detail: str) -> RespondToModel:
    return RespondToModel(
        f"failed to launch rg: {detail}. Ensure ripgrep is installed and on PATH."
    )


async def run_rg(argv: list[str], cwd: str, timeout: float = TIMEOUT_SECONDS) -> tuple[int, bytes]:
    """Run ripgrep; (exit code, stdout). Errors are raised in the words Codex uses."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except (OSError, ValueError) as exc:
        raise _launch_error(io_error_text(exc)) from None
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        raise RespondToModel(f"rg timed out after {TIMEOUT_SECONDS} seconds") from None
    finally:
        if proc.returncode is None:
            proc.kill()
            await asyncio.shield(proc.wait())
    code = proc.returncode
    if code not in (0, 1):
        raise RespondToModel(f"rg failed: {stderr.decode('utf-8', 'replace')}")
    return code, stdout


class GrepFilesHandler:
    """The ``grep_files`` tool."""

    name = "grep_files"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return grep_files_spec(config)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(GrepFilesArgs, inv)
        pattern = args.pattern.strip(RUST_WHITESPACE)
        if not pattern:
            raise RespondToModel("pattern must not be empty")
        if args.limit == 0:
            raise RespondToModel("limit must be greater than zero")
        limit = min(args.limit, MAX_LIMIT)
        cwd = str(inv.turn.cwd)
        search_path = cwd if args.path is None else join_path(cwd, args.path)
        if (why := off_limits(inv.turn.cwd, search_path)) is not None:
            raise RespondToModel(f"unable to access `{search_path}`: {why}")
        include = (args.include or "").strip(RUST_WHITESPACE) or None
        try:
            await asyncio.to_thread(os.stat, search_path)
        except (OSError, ValueError) as exc:
            raise RespondToModel(
                f"unable to access `{search_path}`: {io_error_text(exc)}"
            ) from None
        argv = rg_argv(find_rg() or "rg", pattern, include, search_path)
        code, stdout = await run_rg(argv, cwd)
        results: list[str] = []
        if code == 0:
            found = [path for path in stdout.split(b"\0") if path]
            ordered = await asyncio.to_thread(order_like_rg, found, search_path, limit)
            results = without_secrets(inv.turn.cwd, parse_rg_output(b"\n".join(ordered), limit))
        if not results:
            return ToolOutput(NO_MATCHES, success=False)
        return ToolOutput("\n".join(results))
