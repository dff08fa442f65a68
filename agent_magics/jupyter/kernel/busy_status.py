"""The kernel says "busy" for as long as a ``%%agent`` cell runs.

JupyterLab shows as the kernel's state the last ``status`` message on IOPub, skipping only
those whose request is of a type the server lists as untracked. A kernel with subshells
(ipykernel 7, JupyterLab's ``commsOverSubshells``) publishes a busy/idle pair for each
request it handles beside the running cell: the subshell JupyterLab makes for the
widgets' comms (``create_subshell_request``, on the control channel, which jupyter_server's
``untracked_message_types`` does not list), and each click on a card (a ``comm_msg``
handled in that subshell). The idle of each pair turned the status bar to "Idle" for the
rest of the turn, while the cell still ran.

While a cell runs here, every idle of another request is followed at once by a busy for
the cell's own request, under one lock with the publishing of the idle itself, so the
cell's own idle, which comes after its code returns, is the last word. An idle that came
between the cell's start and the turn's (JupyterLab makes the subshell when the cell's
first widget arrives, which can be before the turn is awaited, and before this keeper is
installed) is answered by one busy when the turn starts: a busy more is harmless while
the cell runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Publish = Callable[..., None]


class BusyWhileRunning:
    """Installed once on a kernel (an ipykernel ``Kernel``): :meth:`running` holds the
    kernel busy for the request being run now."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self._lock = threading.Lock()
        self._held: dict[str, Any] | None = None
        self._depth = 0
        self._publish: Publish = kernel._publish_status
        kernel._publish_status = self._publish_status

    def _publish_status(self, status: str, channel: str, parent: Any = None) -> None:
        with self._lock:
            self._publish(status, channel, parent)
            held = self._held
            if status != "idle" or held is None:
                return
            said = parent or self.kernel.get_parent(channel)
            if _msg_id(said) != _msg_id(held):
                self._publish("busy", "shell", held)

    @contextmanager
    def running(self) -> Iterator[None]:
        """While the cell runs (its request is the shell's current one)."""
        parent = self.kernel.get_parent("shell")
        with self._lock:
            self._depth += 1
            self._held = parent or None
            if self._held is not None:
                self._publish("busy", "shell", self._held)
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self._held = None


def _msg_id(message: Any) -> Any:
    header = message.get("header") if isinstance(message, dict) else None
    return header.get("msg_id") if isinstance(header, dict) else None


_INSTALLED: dict[int, BusyWhileRunning] = {}


def busy_while_running(kernel: Any) -> BusyWhileRunning | None:
    """The kernel's keeper, installed the first time; None for a kernel that publishes
    its state otherwise (not an ipykernel, or one without ``_publish_status``)."""
    if kernel is None or not callable(getattr(kernel, "_publish_status", None)):
        return None
    if not callable(getattr(kernel, "get_parent", None)):
        return None
    found = _INSTALLED.get(id(kernel))
    if found is None or found.kernel is not kernel:
        found = _INSTALLED[id(kernel)] = BusyWhileRunning(kernel)
    return found
