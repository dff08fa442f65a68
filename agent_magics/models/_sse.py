"""A small Server-Sent Events parser over raw bytes, fed a network read at a time."""

from __future__ import annotations

from agent_magics.models.base import StreamFailed

MAX_EVENT_BYTES = 16 << 20
"""The most bytes one event (or one line) may take before its end arrives. A stream
that goes past it ends, not retried, with :data:`EVENT_TOO_LARGE`: the parser holds no
more than this plus one network read, and reads each byte a bounded number of times."""
EVENT_TOO_LARGE = (
    f"the model server sent an event larger than {MAX_EVENT_BYTES >> 20} MiB, "
    "so the stream was stopped"
)


class SseParser:
    """Turns chunks of bytes, cut anywhere, into the ``data`` of each event.

    Only ``data:`` lines matter to the model clients (every payload names its own
    type): several in one event are joined with ``\\n``; comments, ``event:``, ``id:``
    and ``retry:`` are skipped; an event without data gives nothing. Lines end with
    ``\\n`` or ``\\r\\n``; a lone ``\\r`` is not treated as a line end. A chunk is split
    into lines once; the unfinished line is kept as the list of chunks it came in, so a
    long one costs linear time; past :data:`MAX_EVENT_BYTES` the parser raises
    :class:`StreamFailed`.
    """

    __slots__ = ("_data", "_held", "_tail")

    def __init__(self) -> None:
        self._tail: list[bytes] = []  # the chunks since the last line ended
        self._held = 0  # bytes in _tail and _data
        self._data: list[bytes] = []  # the data lines of the event under way

    def feed(self, chunk: bytes) -> list[bytes]:
        """The data of each event that ``chunk`` completes."""
        if b"\n" not in chunk:
            self._hold(chunk)
            return []
        if self._tail:
            self._held -= sum(map(len, self._tail))
            chunk = b"".join([*self._tail, chunk])
            self._tail = []
        lines = chunk.split(b"\n")
        last = lines.pop()
        out: list[bytes] = []
        data = self._data
        for line in lines:
            if line[-1:] == b"\r":
                line = line[:-1]
            if not line:
                if data:
                    out.append(data[0] if len(data) == 1 else b"\n".join(data))
                    data = self._data = []
                self._held = 0
            elif line[:5] == b"data:" or line == b"data":
                value = line[6:] if line[5:6] == b" " else line[5:]
                self._held += len(value)
                if self._held > MAX_EVENT_BYTES:
                    raise StreamFailed(EVENT_TOO_LARGE, retryable=False)
                data.append(value)
        if last:
            self._hold(last)
        return out

    def close(self) -> list[bytes]:
        """The data of a last event the body ended without a blank line after."""
        tail, self._tail = self._tail, []
        self._held -= sum(map(len, tail))
        return self.feed(b"".join(tail) + b"\n\n")

    def _hold(self, part: bytes) -> None:
        self._held += len(part)
        if self._held > MAX_EVENT_BYTES:
            raise StreamFailed(EVENT_TOO_LARGE, retryable=False)
        self._tail.append(part)
