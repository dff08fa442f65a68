"""The names MCP tools are offered under: ``mcp__<server>__<tool>``, as Codex makes them.

Characters outside ``[A-Za-z0-9_-]`` become ``_``; a name longer than 64 characters
keeps its first 24 characters and ends with the SHA-1 of the raw (unsanitised) name.
A tool whose raw name, or final name, was already taken is skipped: the first wins.
The server's own names are what a call sends.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

MAX_TOOL_NAME_LENGTH = 64
DELIMITER = "__"


def sanitize_tool_name(name: str) -> str:
    """``name`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``."""
    cleaned = "".join(c if (c.isascii() and c.isalnum()) or c in "_-" else "_" for c in name)
    return cleaned or "_"


def qualify_tools(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """``(qualified, server, tool)`` for each ``(server, tool)`` that gets a name, in
    input order."""
    seen_raw: set[str] = set()
    used: set[str] = set()
    out: list[tuple[str, str, str]] = []
    for server, tool in pairs:
        raw = f"mcp{DELIMITER}{server}{DELIMITER}{tool}"
        if raw in seen_raw:
            continue
        seen_raw.add(raw)
        name = sanitize_tool_name(raw)
        if len(name) > MAX_TOOL_NAME_LENGTH:
            digest = hashlib.sha1(raw.encode("utf-8"), usedforsecurity=False).hexdigest()
            name = name[: MAX_TOOL_NAME_LENGTH - len(digest)] + digest
        if name in used:
            continue
        used.add(name)
        out.append((name, server, tool))
    return out
