"""A small Server-Sent Events parser: over text lines, or incrementally over raw bytes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from itertools import pairwise

from agent_magics.models.base import StreamFailed


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


MAX_EVENT_BYTES = 16 << 20
"""The most bytes one event (or one line) may take before its end arrives. A stream
that goes past it ends, not retried, with :data:`EVENT_TOO_LARGE`: the parser holds no
more than this plus one network read, and reads each byte a bounded number of times."""
EVENT_TOO_LARGE = (
    f"the model server sent an event larger than {MAX_EVENT_BYTES >> 20} MiB, "
    "so the stream was stopped"
)


class SseParser:
    """Turns chunks of bytes, cut anywhere, into events.

    The clients read the body in network-sized chunks and parse them here without an
    await per line, which keeps a long stream of small deltas cheap. Lines end with
    ``\\n`` or ``\\r\\n``; a lone ``\\r`` is not treated as a line end. An unfinished
    event is kept as a list of the chunks it came in, so a long one costs linear time;
    past :data:`MAX_EVENT_BYTES` it raises :class:`StreamFailed`.
    """

    __slots__ = ("_data", "_event", "_held", "_id", "_lines_only", "_tail")

    def __init__(self) -> None:
        self._tail: list[bytes] = []  # the chunks since the last event (or line) ended
        self._held = 0  # bytes in _tail and _data
        self._event = ""
        self._data: list[bytes] = []
        self._id: str | None = None
        self._lines_only = False

    def feed_data(self, chunk: bytes) -> list[bytes]:
        """Only the ``data`` of the events completed by ``chunk``: :meth:`feed_region`,
        then :func:`region_data`; streams with ``\\r`` line ends take the line-by-line
        path."""
        region = self.feed_region(chunk)
        if region is None:
            return [e.data.encode() for e in self.feed(chunk)]
        return region_data(region) if region else []

    def feed_region(self, chunk: bytes) -> bytes | None:
        """The events ``chunk`` completes, as the bytes they were sent in (up to and
        with the last blank line; empty if none ended). ``None`` once the stream has
        used a ``\\r``: such a stream is read by :meth:`feed` from then on (``chunk``
        included)."""
        if self._lines_only or b"\r" in chunk:
            self._lines_only = True
            return None
        end = chunk.rfind(b"\n\n") + 2  # where the last complete event ends
        if end < 2:
            if chunk[:1] != b"\n" or not self._tail or self._tail[-1][-1:] != b"\n":
                self._hold(chunk)
                return b""
            end = 1  # the blank line began in the last chunk
        region = b"".join([*self._tail, chunk[:end]])
        self._tail, self._held = [], 0
        if end < len(chunk):
            self._hold(chunk[end:])
        return region

    def _hold(self, part: bytes) -> None:
        self._held += len(part)
        if self._held > MAX_EVENT_BYTES:
            raise StreamFailed(EVENT_TOO_LARGE, retryable=False)
        self._tail.append(part)

    def close_data(self) -> list[bytes]:
        """The data of a last event the body ended without a blank line after."""
        if self._lines_only:
            return [e.data.encode() for e in self.close()]
        tail, self._tail, self._held = b"".join(self._tail), [], 0
        parser = SseParser()
        events = parser.feed(tail) + parser.close() if tail else []
        return [e.data.encode() for e in events]

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if b"\n" not in chunk:
            self._hold(chunk)
            return []
        if self._tail:
            chunk = b"".join([*self._tail, chunk])
            self._held -= sum(map(len, self._tail))
            self._tail = []
        lines = chunk.split(b"\n")
        last = lines.pop()
        out: list[ServerSentEvent] = []
        for line in lines:
            self._line(line[:-1] if line.endswith(b"\r") else line, out)
        if last:
            self._hold(last)
        return out

    def close(self) -> list[ServerSentEvent]:
        """Events still pending when the body ended (a last event without a blank line)."""
        out: list[ServerSentEvent] = []
        if self._tail:
            self._line(b"".join(self._tail).rstrip(b"\r"), out)
            self._tail = []
        self._line(b"", out)
        return out

    def _line(self, line: bytes, out: list[ServerSentEvent]) -> None:
        if not line:
            if self._data:
                data = b"\n".join(self._data).decode("utf-8", "replace")
                out.append(ServerSentEvent(self._event or "message", data, self._id))
            self._event, self._data, self._held = "", [], 0
            return
        if line[0] == 0x3A:  # ":" starts a comment (keep-alives)
            return
        name, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._held += len(value)
            if self._held > MAX_EVENT_BYTES:
                raise StreamFailed(EVENT_TOO_LARGE, retryable=False)
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            self._id = value.decode("utf-8", "replace")


def region_data(region: bytes) -> list[bytes]:
    """The ``data`` of each event in ``region`` (whole events, as from
    :meth:`SseParser.feed_region`), found with a few C-level passes over the bytes
    rather than a Python step per line; events with several data lines, or fields
    after their data, take the line-by-line path."""
    lines = region.split(b"\n")
    # data lines that end their event; if that is every data line, each event has
    # one data line (the usual shape) and these are the payloads
    ends = [line for line, after in pairwise(lines) if not after and line[:5] == b"data:"]
    if len(ends) == region.count(b"\ndata:") + (region[:5] == b"data:"):
        return [d[6:] if d[5:6] == b" " else d[5:] for d in ends]
    parser = SseParser()
    return [e.data.encode() for e in parser.feed(region)]
