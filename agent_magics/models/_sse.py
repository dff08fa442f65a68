"""A small Server-Sent Events parser: over text lines, or incrementally over raw bytes."""

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
    parser = SseParser()
    async for raw in lines:
        for event in parser.feed(raw.rstrip("\r\n").encode() + b"\n"):
            yield event
    for event in parser.close():
        yield event


class SseParser:
    """Turns chunks of bytes, cut anywhere, into events.

    The clients read the body in network-sized chunks and parse them here without an
    await per line, which keeps a long stream of small deltas cheap. Lines end with
    ``\\n`` or ``\\r\\n``; a lone ``\\r`` is not treated as a line end.
    """

    __slots__ = ("_data", "_event", "_id", "_tail")

    def __init__(self) -> None:
        self._tail = b""
        self._event = ""
        self._data: list[bytes] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if self._tail:
            chunk = self._tail + chunk
        lines = chunk.split(b"\n")
        self._tail = lines.pop()
        out: list[ServerSentEvent] = []
        for line in lines:
            self._line(line[:-1] if line.endswith(b"\r") else line, out)
        return out

    def close(self) -> list[ServerSentEvent]:
        """Events still pending when the body ended (a last event without a blank line)."""
        out: list[ServerSentEvent] = []
        if self._tail:
            self._line(self._tail.rstrip(b"\r"), out)
            self._tail = b""
        self._line(b"", out)
        return out

    def _line(self, line: bytes, out: list[ServerSentEvent]) -> None:
        if not line:
            if self._data:
                data = b"\n".join(self._data).decode("utf-8", "replace")
                out.append(ServerSentEvent(self._event or "message", data, self._id))
            self._event, self._data = "", []
            return
        if line[0] == 0x3A:  # ":" starts a comment (keep-alives)
            return
        name, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            self._id = value.decode("utf-8", "replace")
