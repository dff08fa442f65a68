"""``grep_files``: which files contain a regular expression, newest first, via ripgrep.

ripgrep runs as a subprocess with the same arguments Codex passes it, so matching rules
(regex dialect, ``.gitignore`` handling, hidden files, binary files) are ripgrep's own.
It runs on the event loop's subprocess machinery and is killed if it outlives the
timeout or the call is cancelled.
"""

from __future__ import annotations

import asyncio
import os
from typing import Literal

from pydantic import BaseModel, Field

from agent_magics.apply_patch.oserror import io_error_text
from agent_magics.errors import RespondToModel
from agent_magics.tools.args import decode_args
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import FunctionPayload, ToolInvocation, ToolOutput
from agent_magics.tools.handlers.read_file import RUST_WHITESPACE, U64_MAX
from agent_magics.tools.rg import find_rg
from agent_magics.tools.spec import FunctionSpec, ToolSpec, number, obj, string

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
    argv = [rg, "--files-with-matches", "--sortr=modified", "--regexp", pattern, "--no-messages"]
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


_DESCRIPTION = (
    "Search file contents with a regular expression (ripgrep syntax) and get back the "
    "paths of the files that contain a match, most recently modified first."
)


class GrepFilesHandler:
    """The ``grep_files`` tool."""

    name = "grep_files"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def spec(self, config: ToolsConfig) -> ToolSpec:
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
        return FunctionSpec(self.name, _DESCRIPTION, params)

    def is_mutating(self, inv: ToolInvocation) -> bool:
        return False

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        if not isinstance(inv.payload, FunctionPayload):
            raise RespondToModel("grep_files handler received unsupported payload")
        args = decode_args(GrepFilesArgs, inv.payload.arguments)
        pattern = args.pattern.strip(RUST_WHITESPACE)
        if not pattern:
            raise RespondToModel("pattern must not be empty")
        if args.limit == 0:
            raise RespondToModel("limit must be greater than zero")
        limit = min(args.limit, MAX_LIMIT)
        cwd = str(inv.turn.cwd)
        search_path = cwd if args.path is None else join_path(cwd, args.path)
        include = (args.include or "").strip(RUST_WHITESPACE) or None
        try:
            await asyncio.to_thread(os.stat, search_path)
        except (OSError, ValueError) as exc:
            raise RespondToModel(
                f"unable to access `{search_path}`: {io_error_text(exc)}"
            ) from None
        argv = rg_argv(find_rg() or "rg", pattern, include, search_path)
        code, stdout = await run_rg(argv, cwd)
        results = parse_rg_output(stdout, limit) if code == 0 else []
        if not results:
            return ToolOutput(NO_MATCHES, success=False)
        return ToolOutput("\n".join(results))
