"""The lines a transcript shows about the session's machinery rather than the model's
work: a compaction, no sandbox here or what it cannot hold, the model's window, an MCP
server up or down (the live fold and a saved session read back word them alike)."""

from __future__ import annotations

from agent_magics.events import (
    ContextCompacted,
    ContextWindowNoted,
    McpServerFailed,
    McpServerReady,
    SandboxUnavailable,
    SandboxWeakness,
)
from agent_magics.transcript.blocks import NoticeBlock

PHASES = {
    "mid_turn": "during the turn",
    "pre_turn": "before the turn",
    "post_turn": "after the turn",
    "overflow": "the server found the request too long; it was sent again",
    "standalone_turn": "as asked",
}


def compacted_line(event: ContextCompacted) -> str:
    """``Context compacted (...)``: when, the sizes, what was kept (when and the sizes
    only when known: a history read without its session file does not say them)."""
    when = f" ({PHASES.get(event.phase, event.phase)})" if event.phase else ""
    size = ""
    if event.tokens_before:
        size = f" {event.tokens_before:,} → about {event.tokens_after:,} tokens"
        if event.window:
            size += f" of a {event.window:,}-token window"
        size += ";"
    kept = len(event.kept)
    line = f"Context compacted{when}:{size} kept {kept} of your message(s) and a summary."
    if event.trimmed:
        line += f" The {event.trimmed} oldest item(s) were left out so the summary request fit."
    return line


def server_notice(
    event: SandboxUnavailable
    | SandboxWeakness
    | ContextWindowNoted
    | McpServerFailed
    | McpServerReady,
) -> NoticeBlock:
    """A line about the session's machinery: no sandbox here or what it cannot hold, the
    model's window, an MCP server up or down."""
    if isinstance(event, (SandboxUnavailable, SandboxWeakness)):
        return NoticeBlock("error", event.message, logged=True)
    if isinstance(event, ContextWindowNoted):
        return NoticeBlock("info", event.message, logged=True)
    if isinstance(event, McpServerFailed):
        log = f" Its log: {event.log_path}" if event.log_path else ""
        return NoticeBlock(
            "error",
            f"MCP server '{event.server}' is not available: {event.reason.rstrip('.')}."
            f" Its tools answer the model with an error.{log}",
        )
    n = len(event.tools)
    return NoticeBlock(
        "info", f"MCP server '{event.server}' is ready: {n} tool{'' if n == 1 else 's'}."
    )


SERVER_NOTICES = (
    SandboxUnavailable,
    SandboxWeakness,
    ContextWindowNoted,
    McpServerFailed,
    McpServerReady,
)
