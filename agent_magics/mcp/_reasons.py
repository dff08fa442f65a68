"""Why an MCP server failed, in a few words a person can act on.

The texts follow the server's name in the front end ("MCP server `time` failed: ...")
and in tool errors, so they do not repeat it.
"""

from __future__ import annotations

import signal
from pathlib import Path

import httpx2
from mcp import MCPError
from mcp.types import CONNECTION_CLOSED

from agent_magics.mcp.config import safe_url
from agent_magics.text.inert import terminal_safe

MAX_STDERR_LINE = 300


def seconds(value: float) -> str:
    """``10s``, ``0.5s``."""
    return f"{value:g}s"


def timed_out(startup_timeout_s: float) -> str:
    return f"timed out after {seconds(startup_timeout_s)} while starting"


def exited(returncode: int, stderr_line: str | None, *, starting: bool) -> str:
    """``exited with code 3 while starting: <its last stderr line>``."""
    if returncode >= 0:
        text = f"exited with code {returncode}"
    else:
        try:
            text = f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            text = f"was killed by signal {-returncode}"
    if starting:
        text += " while starting"
    return f"{text}: {stderr_line}" if stderr_line else text


def last_stderr_line(log_path: Path | None, offset: int) -> str | None:
    """The last non-blank line the server wrote to its log after ``offset``, without
    escape sequences or control characters."""
    if log_path is None:
        return None
    try:
        with log_path.open("rb") as log:
            size = log.seek(0, 2)
            log.seek(max(offset, size - 65536))
            data = log.read()
    except OSError:
        return None
    for line in reversed(data.decode("utf-8", "replace").splitlines()):
        line = terminal_safe(line).strip()  # it is printed, and a server wrote it
        if line:
            return line if len(line) <= MAX_STDERR_LINE else line[: MAX_STDERR_LINE - 1] + "…"
    return None


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, or ``exc`` itself."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def describe(exc: BaseException, *, command: str | None = None, url: str | None = None) -> str:
    """One line for an exception met while starting or talking to a server."""
    found: list[BaseException] = [e for e in leaves(exc) if isinstance(e, Exception)]
    meaningful = [e for e in found if not _connection_closed(e)]
    exc = (meaningful or found or [exc])[0]  # a cause rather than a cancellation
    if isinstance(exc, FileNotFoundError) and command is not None:
        return f"command not found: {command}"
    if isinstance(exc, PermissionError) and command is not None:
        return f"command could not be run (permission denied): {command}"
    where = f" {safe_url(url)}" if url else ""
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from{where or ' the server'}"
    if isinstance(exc, httpx2.ConnectError):
        return f"could not connect to{where or ' the server'}: {exc or type(exc).__name__}"
    if isinstance(exc, httpx2.HTTPError):
        return f"HTTP error{' from' + where if where else ''}: {exc or type(exc).__name__}"
    if _connection_closed(exc):
        return "the connection closed"
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _connection_closed(exc: BaseException) -> bool:
    return isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED
