"""A small Server-Sent Events parser over an async iterator of text lines."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerSentEvent:
    event: str
    data: str
    id: str | None = None


async def iter_sse(lines: AsyncIterator[str]) -> AsyncIterator[ServerSentEvent]:
    """Events from ``lines`` (as ``httpx.Response.aiter_lines`` yields them).

    Handles ``event:``, multi-line ``data:`` (joined with ``\\n``), ``id:``, comments and
    blank-line dispatch. ``retry:`` is ignored. An event without data is skipped.
    """
    event = ""
    data: list[str] = []
    last_id: str | None = None
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield ServerSentEvent(event or "message", "\n".join(data), last_id)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            last_id = value
    if data:
        yield ServerSentEvent(event or "message", "\n".join(data), last_id)
