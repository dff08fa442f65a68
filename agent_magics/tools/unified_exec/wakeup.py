"""Waking coroutines from reader and waiter threads, whatever event loop they run on.

Process output is read by plain threads (so a session survives the event loop of the
turn that started it); a coroutine that waits for output arms a future here, and the
thread resolves it through that future's own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class Wakeup:
    """A broadcast "something changed" signal: threads fire it, coroutines await it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: set[asyncio.Future[None]] = set()

    def arm(self) -> asyncio.Future[None]:
        """A future the next :meth:`fire` resolves. Arm before checking the state you
        wait on, so a change between the check and the wait is not lost."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._armed.add(fut)
        return fut

    def disarm(self, fut: asyncio.Future[None]) -> None:
        with self._lock:
            self._armed.discard(fut)

    def fire(self) -> None:
        """Resolve every armed future; safe to call from any thread."""
        with self._lock:
            armed, self._armed = self._armed, set()
        for fut in armed:
            # a closed loop raises RuntimeError: nobody is waiting there any more
            with contextlib.suppress(RuntimeError):
                fut.get_loop().call_soon_threadsafe(_resolve, fut)

    async def wait(self, fut: asyncio.Future[None], timeout: float) -> bool:
        """Wait for ``fut`` (from :meth:`arm`) at most ``timeout`` seconds; True if fired."""
        try:
            if timeout <= 0:
                return fut.done()
            done, _ = await asyncio.wait({fut}, timeout=timeout)
            return bool(done)
        finally:
            self.disarm(fut)
