"""The session's notices about its machinery, each said once: no sandbox here or what it
cannot hold, the model's window, an MCP server up or down. Events like any other
(:mod:`agent_magics.events`, which names them all); a view shows each as a line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SandboxUnavailable:
    """No sandbox mechanism works here: every command will wait for a person's approval."""

    message: str


@dataclass(frozen=True)
class SandboxWeakness:
    """Something the sandbox that works here cannot hold (said once per session), e.g. a
    parent process whose environment a confined command can still read."""

    message: str


@dataclass(frozen=True)
class ContextWindowNoted:
    """Something about the model's context window a person should know (said once per
    session): that it is unknown, so nothing compacts in time, or that the part every
    request repeats (instructions and tools) takes much of it."""

    message: str


@dataclass(frozen=True)
class McpServerReady:
    """An MCP server started (or was reached) and listed its tools."""

    server: str
    transport: str
    tools: Sequence[str] = ()


@dataclass(frozen=True)
class McpServerFailed:
    """An MCP server could not start, timed out or died; its tools answer an error.

    ``log_path``: where its stderr went (stdio servers)."""

    server: str
    reason: str
    log_path: str | None = None
