"""Running turns on the kernel's event loop without freezing it.

The decided way (see the design notes on waiting for a click): the cell shows the
transcript, schedules the turn as a task on the running loop and returns; the turn
then draws only through widget state. Turns of one magic run one after another: a
cell run while a turn is busy queues behind it.

The kernel's stop button sends SIGINT. While a cell runs, ipykernel turns it into a
KeyboardInterrupt (or cancels an async cell); while the kernel is idle it ignores it.
:class:`SigintGuard` gives idle interrupts to the running turns instead: ipykernel
restores the handler it saved before each request (``saved_sigint_handler``), so
setting ours there installs it as soon as the current request ends. A turn whose code
holds the loop never runs what the handler schedules, so the handler also hands the
stop to :class:`~agent_magics.jupyter.kernel.interrupt.StopArrival`, which raises it in that
code when the loop does not pick it up.
:class:`SignalWakeup` makes a signal wake the loop at once, which an awaited cell (the
default on ipykernel >= 7.4, and headless) needs to be stopped while a command runs quietly.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, Protocol

from agent_magics.errors import TurnAborted, UserError
from agent_magics.events import Event
from agent_magics.jupyter.kernel.interrupt import StopArrival
from agent_magics.text.inert import terminal_safe
from agent_magics.transcript.model import Transcript


class TurnView(Protocol):
    state: Transcript
    """The turn as the view folds it (what ``_agent`` is read from)."""

    def __call__(self, event: Event) -> None: ...

    def fail(self, message: str) -> None: ...

    def note(self, text: str) -> None: ...

    def mark_queued(self) -> None: ...

    def finish(self) -> None: ...


def ipykernel_version() -> tuple[int, ...] | None:
    module = sys.modules.get("ipykernel")
    text = getattr(module, "__version__", None)
    if not isinstance(text, str):
        return None
    parts: list[int] = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit()) if piece else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def can_block(kernel: Any) -> bool:
    """Whether an async cell still gets widget messages (ipykernel >= 7.4)."""
    version = ipykernel_version()
    return kernel is not None and version is not None and version >= (7, 4)


class SigintGuard:
    """While active, an interrupt that reaches the idle kernel calls ``on_interrupt`` on
    the loop (from the signal handler, through ``call_soon_threadsafe``)."""

    def __init__(
        self, kernel: Any, loop: asyncio.AbstractEventLoop, on_interrupt: Callable[[], None]
    ) -> None:
        self.kernel = kernel
        self.loop = loop
        self.on_interrupt = on_interrupt
        self._previous: Any = None
        self.active = False
        self.arrival = StopArrival(loop)

    def _handler(self, signum: int, frame: Any) -> None:
        if self.active and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.on_interrupt)
            self.arrival.sent()

    def activate(self) -> None:
        if self.active or threading.current_thread() is not threading.main_thread():
            return
        self.active = True
        if self.kernel is not None and hasattr(self.kernel, "saved_sigint_handler"):
            # Inside a request: ipykernel installs this handler when the request ends.
            self._previous = self.kernel.saved_sigint_handler
            self.kernel.saved_sigint_handler = self._handler
        else:
            self._previous = signal.signal(signal.SIGINT, self._handler)

    def deactivate(self) -> None:
        if not self.active:
            return
        self.active = False
        previous = self._previous if self._previous is not None else signal.SIG_IGN
        if self.kernel is not None and getattr(self.kernel, "saved_sigint_handler", None) == (
            self._handler
        ):
            self.kernel.saved_sigint_handler = previous
        if threading.current_thread() is threading.main_thread() and (
            signal.getsignal(signal.SIGINT) == self._handler
        ):
            signal.signal(signal.SIGINT, previous)


class SignalWakeup:
    """While active, every signal wakes the loop (``signal.set_wakeup_fd`` on a socket
    the loop reads), so the Python handler's work runs at once.

    Why: ipykernel stops an awaited cell from its SIGINT handler through tornado's
    ``add_callback``, which on the loop's own thread is a plain ``call_soon``. Nothing
    wakes the loop's ``select`` then: with a quiet command running (``sleep 30``), the
    cell and the command went on until the command ended by itself. asyncio's own
    ``add_signal_handler`` wakes its loop the same way. A wakeup descriptor set by
    someone else is left as it is."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._sockets: tuple[socket.socket, socket.socket] | None = None

    @property
    def active(self) -> bool:
        return self._sockets is not None

    def activate(self) -> None:
        if self._sockets is not None or threading.current_thread() is not threading.main_thread():
            return
        read, write = socket.socketpair()
        read.setblocking(False)
        write.setblocking(False)
        previous = signal.set_wakeup_fd(write.fileno(), warn_on_full_buffer=False)
        if previous != -1:  # someone else wakes a loop already
            signal.set_wakeup_fd(previous)
            read.close()
            write.close()
            return
        try:
            self.loop.add_reader(read.fileno(), self._drain, read)
        except NotImplementedError:  # a loop without add_reader (Windows' proactor)
            signal.set_wakeup_fd(-1)
            read.close()
            write.close()
            return
        self._sockets = (read, write)

    @staticmethod
    def _drain(read: socket.socket) -> None:
        with suppress(OSError):
            read.recv(4096)

    def deactivate(self) -> None:
        if self._sockets is None or threading.current_thread() is not threading.main_thread():
            return
        read, write = self._sockets
        self._sockets = None
        current = signal.set_wakeup_fd(-1)
        if current != write.fileno():  # someone took it over since: theirs stays
            signal.set_wakeup_fd(current)
        if not self.loop.is_closed():
            self.loop.remove_reader(read.fileno())
        read.close()
        write.close()


BUG = "Internal error (a bug in agent_magics, please report it): {kind}: {message}"


SHOWN_ABOVE = "the turn failed, as its card above says; Run All stops here."


class AgentTurnFailed(UserError):
    """Raised in a cell that waited for a turn that failed, and by ``ask``: a
    :class:`UserError` whose sentence is the one the turn ended with. nbclient, papermill
    and ``jupyter nbconvert --execute`` then stop with a non-zero exit, Run All stops, as
    ``agent-magics exec`` exits 1. IPython shows the one sentence, not a traceback of our
    code, or, where the cell's card already shows it to a person (``shown``), a pointer to
    it; the exception's value keeps the sentence for the tools that read it. Escape
    sequences a model server put in it are written out, since headless runners print it
    on a terminal."""

    def __init__(self, message: str, shown: bool = False) -> None:
        super().__init__(terminal_safe(message))
        self.shown = shown  # the cell's card says the sentence already (a live front end)

    def _render_traceback_(self) -> list[str]:
        if self.shown:  # once is enough: the box says only that the cell failed
            return [f"{type(self).__name__}: {SHOWN_ABOVE}"]
        return [f"{type(self).__name__}: {self}"]


class Outcome:
    """How a turn ended, for the cell that waits for it: ``failed`` is the sentence the
    view was given when the turn failed (``None``: it finished or was stopped)."""

    failed: str | None = None


@contextmanager
def turn_outcome(view: TurnView, on_stop: Callable[[], None]) -> Iterator[Outcome]:
    """End a turn cleanly whatever happens: problems a person must fix end it with their
    one sentence in ``view`` (and in the outcome); a stop (Abort turn, interrupt) calls
    ``on_stop``, which kills the processes the tools started. Only a cancellation is
    re-raised."""
    outcome = Outcome()
    try:
        yield outcome
    except UserError as exc:
        outcome.failed = str(exc)
        view.fail(outcome.failed)
    except TurnAborted:
        on_stop()
    except asyncio.CancelledError:
        on_stop()
        raise
    except Exception as exc:
        outcome.failed = BUG.format(kind=type(exc).__name__, message=exc)
        view.fail(outcome.failed)
        traceback.print_exc(file=sys.__stderr__)
