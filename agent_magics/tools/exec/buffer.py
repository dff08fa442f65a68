"""A byte buffer with a fixed capacity that keeps the start and the end of a stream.

Output that does not fit is dropped from the middle: the first half of the capacity
holds the earliest bytes, the second half the latest ones. Unified exec keeps one per
process (1 MiB) so a chatty command cannot grow memory without bound.
"""

from __future__ import annotations

OUTPUT_CAPACITY = 1024 * 1024


class HeadTailBuffer:
    """Earliest ``capacity // 2`` bytes plus the latest ``capacity - capacity // 2``."""

    def __init__(self, capacity: int = OUTPUT_CAPACITY) -> None:
        self._head_room = capacity // 2
        self._tail_room = capacity - self._head_room
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._head) + len(self._tail)

    def push(self, data: bytes) -> None:
        """Append ``data``; bytes past the head's room go to the tail, whose oldest
        bytes fall out when it is over its room."""
        if not data:
            return
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

    def snapshot(self) -> bytes:
        """The kept bytes (head then tail), leaving the buffer as it is."""
        return bytes(self._head) + bytes(self._tail)

    def drain(self) -> bytes:
        """The kept bytes (head then tail); the buffer starts over empty."""
        out = self.snapshot()
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0
        return out
