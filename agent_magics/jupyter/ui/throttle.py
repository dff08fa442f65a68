"""At most one redraw per interval: streamed text and output arrive much faster than a
notebook should repaint (the transcript aims at ~10 updates a second)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

MIN_INTERVAL_S = 0.1


class Timer(Protocol):
    def cancel(self) -> None: ...


Scheduler = Callable[[float, Callable[[], None]], Timer]


def loop_scheduler(loop: asyncio.AbstractEventLoop) -> Scheduler:
    return lambda delay, fn: loop.call_later(delay, fn)


class Throttle:
    """Calls ``flush`` at most once per ``interval``; a call that comes too early is
    deferred (once) to the end of the interval, so the last change is never lost."""

    def __init__(
        self,
        flush: Callable[[], None],
        schedule: Scheduler,
        interval: float = MIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._flush = flush
        self._schedule = schedule
        self._interval = interval
        self._clock = clock
        self._last: float | None = None
        self._timer: Timer | None = None
        self.flushes = 0

    def poke(self) -> None:
        """Something changed: flush now if the interval has passed, else soon."""
        if self._timer is not None:
            return
        now = self._clock()
        wait = 0.0 if self._last is None else self._last + self._interval - now
        if wait <= 0:
            self._fire()
        else:
            self._timer = self._schedule(wait, self._fire)

    def now(self) -> None:
        """Flush at once (a new card, a question, the end of the turn)."""
        if self._timer is not None:
            self._timer.cancel()
        self._fire()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        self._last = self._clock()
        self.flushes += 1
        self._flush()
