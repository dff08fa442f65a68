"""The clock the agent's own limits and backoffs are measured on.

A wait that is a rule of the agent (wait_agent's 10 s to an hour, the pause before a
model request or stream is sent again) asks :func:`current` instead of calling
:func:`asyncio.sleep`, :func:`asyncio.wait` or :func:`time.monotonic`. A deadline for
real I/O (a process's exit, a socket's next byte, a person's click) stays on the real
clock: those waits are about the world, not about the agent's rules.

A clock's ``rate`` is how many of its seconds pass in one real second (as trio's
``MockClock.rate``). Everything the clock reports is in its own seconds, so the texts the
model and the person read are worded from the nominal times ("timed out after 30 s") at
any rate. The product only ever runs at rate 1: nothing it reads (settings, options,
environment) can change the clock. A test process that scripts the other side's timing
too (a model server that answers after "15 s") runs faster with ``use(Clock(rate=10))``
and scales its own waits with :meth:`Clock.real`; a CLI or kernel started by a test gets
the same call before the code under test runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any


class Clock:
    """Monotonic time, sleeping and waiting, ``rate`` times faster than real time."""

    __slots__ = ("rate",)

    def __init__(self, rate: float = 1.0) -> None:
        if not rate >= 1.0:  # a slower clock would stretch every limit
            raise ValueError(f"a clock's rate is at least 1, not {rate!r}")
        self.rate = float(rate)

    def real(self, seconds: float) -> float:
        """How many real seconds ``seconds`` of this clock last."""
        return max(seconds, 0.0) / self.rate

    def monotonic(self) -> float:
        """Seconds of this clock since an arbitrary start (only differences mean anything)."""
        return time.monotonic() * self.rate

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(self.real(seconds))

    async def wait(
        self, futures: Iterable[asyncio.Future[Any]], timeout: float
    ) -> set[asyncio.Future[Any]]:
        """Until the first of ``futures`` is done or ``timeout`` seconds passed; the ones
        done (none at the timeout). Those still pending are left running."""
        done, _ = await asyncio.wait(
            futures, timeout=self.real(timeout), return_when=asyncio.FIRST_COMPLETED
        )
        return done

    def __repr__(self) -> str:
        return f"Clock(rate={self.rate:g})"


REAL = Clock()
_current = REAL


def current() -> Clock:
    """The clock of this process: :data:`REAL` unless a test set another."""
    return _current


def use(clock: Clock) -> Clock:
    """Make ``clock`` the process's clock; the one it replaces (to put back)."""
    global _current
    previous, _current = _current, clock
    return previous
