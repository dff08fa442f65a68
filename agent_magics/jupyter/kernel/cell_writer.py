"""A running cell's outputs written into the notebook's live document as they come.

The cell's code runs on the kernel's main thread, which also runs the event loop the
kernel's room of the notebook talks on: while the code runs (a loop that prints, a model
that trains) that loop is still. So the outputs go through a peer of the room of their
own, joined on a thread with a loop of its own, which every :data:`EVERY_S` writes the
outputs gathered so far into the cell, then the last ones with the execution count, and
leaves. The Y document merges what this peer writes with what the person types
elsewhere; only the cell's outputs and execution count are changed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agent_magics.jupyter.kernel.cell_outputs import Output

if TYPE_CHECKING:
    from agent_magics.jupyter.kernel.notebook_room import NotebookRoom

EVERY_S = 0.25
"""Seconds between two writes of a running cell's outputs."""
TIMEOUT_S = 10.0
"""Seconds joining the room, or one write reaching the server, may take."""


class OutputWriter:
    """Writes the outputs of the cell ``cell_id`` while it runs (:meth:`start`), and its
    last ones (:meth:`finish`); ``failed`` says why the document could not be written."""

    def __init__(self, join: Callable[[], Awaitable[NotebookRoom]], cell_id: str) -> None:
        self.join = join
        self.cell_id = cell_id
        self.failed: str | None = None
        self._now: Callable[[], list[Output]] = list
        self._last: tuple[list[Output], int | None] | None = None
        self._done = threading.Event()
        self._final: tuple[list[Output], int | None] = ([], None)
        self._thread: threading.Thread | None = None

    def start(self, now: Callable[[], list[Output]]) -> None:
        """Clear the cell and write ``now()`` into it while the code runs."""
        self._now = now
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._main()), name="cell-outputs", daemon=True
        )
        self._thread.start()

    async def finish(self, outputs: list[Output], count: int | None) -> str | None:
        """Write the cell's last ``outputs`` and its execution ``count``, and leave; the
        reason the document could not be written, or None."""
        self._final = (outputs, count)
        self._done.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 2 * TIMEOUT_S + 1)
            if self._thread.is_alive():
                self.failed = self.failed or "the notebook's room did not answer in time"
        return self.failed

    async def _main(self) -> None:
        from agent_magics.jupyter.kernel.notebook_room import _RoomError
        from agent_magics.tools.notebook.document import LiveUnavailable

        try:
            room = await asyncio.wait_for(self.join(), TIMEOUT_S)
        except (LiveUnavailable, _RoomError, OSError, TimeoutError) as exc:
            self.failed = str(exc) or type(exc).__name__
            return
        try:
            await self._write(room, [], None)
            while not self._done.is_set():
                await asyncio.to_thread(self._done.wait, EVERY_S)
                if not self._done.is_set():
                    await self._write(room, self._now(), None)
            await self._write(room, *self._final)
        except (_RoomError, LookupError) as exc:
            self.failed = str(exc)
        finally:
            await room.close()

    async def _write(self, room: NotebookRoom, outputs: list[Output], count: int | None) -> None:
        if self._last == (outputs, count):
            return
        self._last = (outputs, count)
        cell_id = self.cell_id

        def edit(nb: Any) -> None:
            for ycell in nb.ycells:
                if str(ycell.get("id", "")) == cell_id:
                    set_outputs(ycell, outputs)
                    ycell["execution_count"] = count
                    return
            raise LookupError("the cell was deleted from the notebook while it ran")

        await room.change(edit, TIMEOUT_S)


def set_outputs(ycell: Any, outputs: list[Output]) -> None:
    """Put ``outputs`` in the Y cell as JupyterLab's notebook schema has them: an array
    of maps, a stream's text a Y text."""
    from pycrdt import Array, Map, Text

    held = ycell.get("outputs")
    if not isinstance(held, Array):
        held = ycell["outputs"] = Array()
    held.clear()
    for output in outputs:
        value = dict(output)
        if value.get("output_type") == "stream":
            value["text"] = Text(str(value.get("text", "")))
        held.append(Map(value))
