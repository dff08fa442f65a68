"""Stopping code that runs in the kernel's main thread: the stop button and a timeout.

While a :class:`Interruptible` block is active (main thread only), SIGINT -- the
kernel's stop button, or the timeout's timer thread sending it with ``pthread_kill`` --
raises ``KeyboardInterrupt`` inside the running code, as a cell's interrupt does:
``time.sleep`` wakes up, a busy loop stops at its next bytecode. When the code is
suspended at a top-level ``await`` (the main thread then runs other tasks of the loop),
raising there would hit whatever runs; the task running the code is cancelled instead,
which raises ``CancelledError`` at the code's ``await``.

A person's SIGINT is also handed to the handler that was installed before (the turn's
own stop: :class:`~agent_magics.jupyter.ui.runner.SigintGuard`, or ipykernel's for a cell that
awaits the turn), so the turn stops as it does during any other tool. A timer that
fires as the code ends cannot reach anything else: the timer only sends while the code
runs, and the block does not give the signal back to the previous handler until the
timer's signal, if one was sent, has been seen by its own handler.

Every other stop reaches a turn through the loop: the handler schedules the turn's
cancellation there. A turn whose code holds the loop (a tool, or the person's async
function, looping without an ``await``) never lets that callback run, however often
stop is pressed. :class:`StopArrival` watches for that: if the loop has not run a
callback :data:`STUCK_S` after a stop, a timer sends SIGINT again, and when the code
running then is a turn's (:data:`IN_TURN`), ``CancelledError`` is raised right there:
the task running it is cancelled as ``task.cancel()`` would, only at the running line
instead of at the next ``await``. A turn that gives the loop back in time is stopped at
an ``await`` as before.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import FrameType, TracebackType
from typing import Any

SETTLE_S = 1.0  # longest wait for a timer's signal already sent to reach its handler
SETTLE_STEP_S = 0.001
STUCK_S = 0.25  # a stop the loop has not picked up by then is raised in the turn's code

IN_TURN: ContextVar[bool] = ContextVar("agent_magics_in_turn", default=False)
"""True in a turn's task and in the tasks it starts (its tool calls inherit it)."""


def _on_stack(frame: FrameType | None, target: FrameType | None) -> bool:
    while frame is not None:
        if frame is target:
            return True
        frame = frame.f_back
    return False


class Interruptible:
    """Used as ``with Interruptible(timeout_s): await ...`` in the coroutine running
    the code. ``timed_out`` / ``stopped`` say what interrupted it (``None`` timeout:
    none). Outside the main thread nothing can be interrupted; the block just runs."""

    def __init__(self, timeout_s: float | None) -> None:
        self.timeout_s = timeout_s
        self.timed_out = False
        self.stopped = False
        self._running = False
        self._timer_sent = False
        self._timer: threading.Timer | None = None
        self._previous: Any = None
        self._frame: FrameType | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False
        self._main = threading.current_thread() is threading.main_thread()

    def __enter__(self) -> Interruptible:
        if not self._main:
            return self
        self._frame = sys._getframe(1)
        try:
            self._task = asyncio.current_task()
        except RuntimeError:
            self._task = None
        self._previous = signal.signal(signal.SIGINT, self._on_signal)
        self._running = True
        if self.timeout_s is not None:
            self._timer = threading.Timer(self.timeout_s, self._fire, (threading.main_thread(),))
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._running = False  # from here on no signal raises into anything
        if not self._main:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer.join()
        waited = 0.0
        while self._timer_sent and waited < SETTLE_S:  # its handler runs during the sleep
            time.sleep(SETTLE_STEP_S)
            waited += SETTLE_STEP_S
        signal.signal(signal.SIGINT, self._previous)
        if self._cancelled and self._task is not None and hasattr(self._task, "uncancel"):
            self._task.uncancel()  # the cancellation was ours and has been delivered

    @property
    def interrupted(self) -> bool:
        return self.timed_out or self.stopped

    def _fire(self, main: threading.Thread) -> None:
        """The timer thread: interrupt the code if it is still running."""
        if not self._running or main.ident is None:
            return
        self._timer_sent = True
        self.timed_out = True
        signal.pthread_kill(main.ident, signal.SIGINT)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        from_timer = self._timer_sent
        self._timer_sent = False
        if not from_timer:
            self._forward(signum, frame)
        if not self._running:
            return
        if not from_timer:
            self.stopped = True
        if _on_stack(frame, self._frame):
            raise KeyboardInterrupt
        if self._task is not None and not self._task.done():
            self._cancelled = True
            self._task.get_loop().call_soon_threadsafe(self._task.cancel)

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        """A person's interrupt also reaches the handler that was there before ours."""
        previous = self._previous
        if callable(previous) and previous is not signal.default_int_handler:
            previous(signum, frame)


class StopArrival:
    """Makes sure a stop handed to ``loop`` reaches a turn whose code holds the loop.

    A SIGINT handler on the main thread calls :meth:`sent` once it has scheduled its
    work on the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._waiting: threading.Event | None = None

    def sent(self) -> None:
        waiting = self._waiting
        if waiting is not None and not waiting.is_set():  # the last stop is still waiting
            if IN_TURN.get():
                self._waiting = None
                raise asyncio.CancelledError("stopped while the turn's code held the loop")
            return
        if self.loop.is_closed():
            return
        arrived = threading.Event()
        self._waiting = arrived
        self.loop.call_soon_threadsafe(arrived.set)
        timer = threading.Timer(STUCK_S, _send_again, (arrived, threading.main_thread().ident))
        timer.daemon = True
        timer.start()


def _send_again(arrived: threading.Event, main: int | None) -> None:
    """The timer thread: the loop never ran the stop's callback, so signal once more."""
    if not arrived.is_set() and main is not None:
        signal.pthread_kill(main, signal.SIGINT)


@contextmanager
def stop_arrives(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """While a cell awaits its turn: ipykernel's SIGINT handler (which cancels the cell
    through the loop) still runs first, then :meth:`StopArrival.sent`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    arrival = StopArrival(loop)

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if callable(previous):
            previous(signum, frame)
        arrival.sent()

    handler: Callable[[int, FrameType | None], None] = on_sigint
    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is handler:
            signal.signal(signal.SIGINT, previous)
