"""A byte buffer with a fixed capacity that keeps the start and the end of a stream.

Output that does not fit is dropped from the middle: the first half of the capacity
holds the earliest bytes, the second half the latest ones. Unified exec keeps one per
process (1 MiB) so a chatty command cannot grow memory without bound.
"""

from __future__ import annotations

from dataclasses import dataclass

OUTPUT_CAPACITY = 1024 * 1024


def omission_marker(omitted: int) -> str:
    """Codex's note for bytes the capacity dropped (a line of its own in the output)."""
    return f"... {omitted} bytes omitted ..."


@dataclass(frozen=True)
class Collected:
    """What one wait gathered: ``data`` is the kept head and tail, with the omission
    marker on a line between them when ``omitted`` bytes were dropped from the middle;
    ``total`` counts every byte the command wrote in that time."""

    data: bytes = b""
    omitted: int = 0
    total: int = 0


class HeadTailBuffer:
    """Earliest ``capacity // 2`` bytes plus the latest ``capacity - capacity // 2``."""

    def __init__(self, capacity: int = OUTPUT_CAPACITY) -> None:
        self._head_room = capacity // 2
        self._tail_room = capacity - self._head_room
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0
        self.total = 0  # bytes pushed (dropped ones included)

    def __len__(self) -> int:
        return len(self._head) + len(self._tail)

    def push(self, data: bytes) -> None:
        """Append ``data``; bytes past the head's room go to the tail, whose oldest
        bytes fall out when it is over its room."""
        if not data:
            return
        self.total += len(data)
        take = min(self._head_room - len(self._head), len(data))
        if take > 0:
            self._head += data[:take]
            data = data[take:]
        if not data:
            return
        if self._tail_room == 0:
            self.dropped += len(data)
            return
        if len(data) >= self._tail_room:
            self.dropped += len(self._tail) + len(data) - self._tail_room
            self._tail = bytearray(data[len(data) - self._tail_room :])
            return
        self._tail += data
        excess = len(self._tail) - self._tail_room
        if excess > 0:
            del self._tail[:excess]
            self.dropped += excess

    def push_drained(self, data: bytes, dropped: int) -> None:
        """Append what another buffer drained, counting the bytes it had dropped."""
        self.push(data)
        self.dropped += dropped
        self.total += dropped

    def collected(self) -> Collected:
        """The kept bytes with the omission marker between head and tail (when bytes
        were dropped), as Codex hands them to the model; the buffer starts over."""
        out = self.peek()
        self.drain()
        return out

    def peek(self) -> Collected:
        """What :meth:`collected` gives, leaving the buffer as it is."""
        if self.dropped:
            marker = f"\n{omission_marker(self.dropped)}\n".encode()
            data = bytes(self._head) + marker + bytes(self._tail)
        else:
            data = self.snapshot()
        return Collected(data, self.dropped, self.total)

    def snapshot(self) -> bytes:
        """The kept bytes (head then tail), leaving the buffer as it is."""
        return bytes(self._head) + bytes(self._tail)

    def drain(self) -> bytes:
        """The kept bytes (head then tail); the buffer starts over empty."""
        out = self.snapshot()
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0
        self.total = 0
        return out
