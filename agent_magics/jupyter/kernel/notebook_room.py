"""One notebook's collaborative room on a Jupyter server with jupyter-collaboration.

The server keeps an open notebook as a shared Y document (a CRDT); JupyterLab's editor
and this client are peers of the same room, so a cell inserted here merges with what the
person types elsewhere in the notebook, and nothing is written under the editor. The
room speaks the y-protocols sync messages over a websocket: our ``SYNC_STEP1`` is
answered by the server's ``SYNC_STEP2`` (its whole state), after which both sides send
updates. The server answers messages in the order they come, so the answer to a
``SYNC_STEP1`` sent after an update proves the update has been merged (:meth:`flush`).

The websocket is tornado's client, which every ipykernel already brings; the Y document
is ``pycrdt`` with ``jupyter_ydoc``'s notebook schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import (
    Array,
    Doc,
    Map,
    YMessageType,
    YSyncMessageType,
    create_sync_message,
    create_update_message,
    handle_sync_message,
)
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from agent_magics.errors import RespondToModel
from agent_magics.tools.notebook.cells import checked_version, read_cell, read_content
from agent_magics.tools.notebook.document import LiveUnavailable, MetadataChange
from agent_magics.tools.notebook.graded import edit_refusal

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""Largest websocket message taken from the server (a notebook with big outputs)."""
CLOSE_WAIT_S = 2.0
"""How long leaving a room waits for the server to answer the close."""


class _RoomError(Exception):
    """The room could not be joined or was left; the message says why, for a sentence."""


class NotebookRoom:
    """A synced copy of one notebook room; :meth:`change` edits it and sends the edit."""

    def __init__(self, conn: WebSocketClientConnection) -> None:
        self.doc: Doc[Any] = Doc()
        self.notebook = YNotebook(self.doc)
        self._conn = conn
        self._answers = 0  # SYNC_STEP2 messages received: one per SYNC_STEP1 we sent
        self._asked = 0
        self._changed = asyncio.Event()
        self._closed: str | None = None
        self._places: dict[str, int] = {}  # Y id -> where the cell was last seen
        self.loop = asyncio.get_running_loop()
        self._reader = self.loop.create_task(self._read())

    @property
    def closed(self) -> str | None:
        """Why the room was left or dropped, or None while it is open."""
        return self._closed

    @classmethod
    async def join(cls, url: str, headers: dict[str, str], timeout_s: float) -> NotebookRoom:
        """Connect to the room at ``url`` and wait until the document is synced."""
        request = HTTPRequest(url, headers=headers, connect_timeout=timeout_s)
        try:
            conn = await asyncio.wait_for(
                websocket_connect(request, max_message_size=MAX_MESSAGE_BYTES), timeout_s
            )
        except TimeoutError:
            raise _RoomError(f"the notebook's room did not open within {timeout_s:g} s") from None
        except (OSError, HTTPClientError) as exc:
            raise _RoomError(f"the notebook's room could not be opened ({exc})") from None
        if conn.protocol is not None:  # small messages, each awaited: no Nagle's delay
            conn.protocol.set_nodelay(True)
        room = cls(conn)
        try:
            await room.flush(timeout_s)
        except BaseException:
            await room.close()
            raise
        return room

    async def _read(self) -> None:
        try:
            while True:
                message = await self._conn.read_message()
                if message is None:
                    break
                self._ack_now()
                if isinstance(message, bytes) and len(message) > 1:
                    self._take(message)
        finally:
            code, reason = self._conn.close_code, self._conn.close_reason
            self._closed = _close_text(code, reason)
            self._changed.set()

    def _ack_now(self) -> None:
        """Acknowledge what arrived at once. The server writes its answers without
        TCP_NODELAY, and after an echo of our update it holds the answer to our
        ``SYNC_STEP1`` until that echo is acknowledged, which Linux delays by 40 ms."""
        sock = getattr(getattr(self._conn.protocol, "stream", None), "socket", None)
        if sock is not None and hasattr(socket, "TCP_QUICKACK"):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)

    def _take(self, message: bytes) -> None:
        if message[0] != YMessageType.SYNC:
            return  # awareness (who is in the room) and the server's own messages
        reply = handle_sync_message(message[1:], self.doc)
        if reply is not None:
            self._send(reply)
        if message[1] == YSyncMessageType.SYNC_STEP2:
            self._answers += 1
            self._changed.set()

    def _send(self, message: bytes) -> None:
        if self._closed is None:
            self._conn.write_message(message, binary=True)

    async def flush(self, timeout_s: float) -> None:
        """Wait until the server has merged everything sent so far (and we have its state)."""
        self._asked += 1
        self._send(create_sync_message(self.doc))
        wanted = self._asked
        try:
            async with asyncio.timeout(timeout_s):
                while self._answers < wanted:
                    if self._closed is not None:
                        raise _RoomError(self._closed)
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            raise _RoomError(f"the notebook's room did not answer within {timeout_s:g} s") from None

    def yid(self, at: int) -> str:
        """The Y id of the cell at ``at`` (what the editor's document names it by)."""
        return str(self.notebook.ycells[at].get("id", ""))

    def yids(self) -> list[str]:
        """The Y id of every cell, in order; each cell's place is noted for :meth:`position`."""
        found = [str(cell.get("id", "")) for cell in self.notebook.ycells]
        self._places = {}
        for at, yid in enumerate(found):
            self._places.setdefault(yid, at)
        return found

    def position(self, yid: str) -> int | None:
        """Where the cell ``yid`` is now: where it was last seen while it is still there
        (one cell read, whatever the notebook's size), else found among all cells (once
        after the person added, moved or deleted cells before it)."""
        at = self._places.get(yid)
        if at is not None and at < len(self.notebook.ycells) and self.yid(at) == yid:
            return at
        self.yids()
        return self._places.get(yid)

    def placed(self, yid: str, at: int) -> None:
        """Note that the cell ``yid`` was just put at ``at``."""
        self._places[yid] = at

    async def change(self, edit: Callable[[YNotebook], None], timeout_s: float) -> None:
        """Make ``edit`` in one transaction, send it, and wait until the server has it."""
        if self._closed is not None:
            raise _RoomError(self._closed)
        before = self.doc.get_state()
        with self.doc.transaction():
            edit(self.notebook)
        self._send(create_update_message(self.doc.get_update(before)))
        await self.flush(timeout_s)

    async def close(self) -> None:
        """Leave the room. The server's answer to the close is awaited (for at most
        :data:`CLOSE_WAIT_S`): only then does the websocket close its socket, and a loop
        that ends first would leave the socket open."""
        self._conn.close()
        await asyncio.wait([self._reader], timeout=CLOSE_WAIT_S)
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


class KeptRoom:
    """The room of the kernel's notebook, joined once and kept while the tools use it.

    Joining costs a websocket handshake and the whole document (tens of ms a call); a
    kept room is a live copy the server keeps sending the person's edits to. Before each
    use it is synced once more (:meth:`NotebookRoom.flush`: the server's answer carries
    whatever it merged before our question), so a cell the person typed just before the
    call is in what the call reads. A room the server dropped, or that does not answer,
    is left and joined again; one left on another event loop is forgotten."""

    def __init__(self) -> None:
        self._key: object = None
        self._room: NotebookRoom | None = None
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def get(
        self, key: object, join: Callable[[], Awaitable[NotebookRoom]], timeout_s: float
    ) -> NotebookRoom:
        """The room for ``key``, synced now: the kept one, else one ``join`` opens."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop, self._room = asyncio.Lock(), loop, None  # a new loop
        async with self._lock:
            room = self._room
            if room is not None and room.closed is None and self._key == key:
                try:
                    await room.flush(timeout_s)
                    return room
                except _RoomError:
                    pass  # dropped or silent: join again
            await self.close()
            self._room = await join()
            self._key = key
            return self._room

    async def close(self) -> None:
        """Leave the kept room, if any (the session ended)."""
        room, self._room = self._room, None
        if room is not None and room.loop is asyncio.get_running_loop():
            await room.close()


class RoomDocument:
    """:class:`~agent_magics.tools.notebook.document.LiveDocument` over a :class:`NotebookRoom`:
    one tool call's use of it. With ``keep`` the room outlives the call (its owner leaves
    it), and :meth:`close` only ends the call's use.

    A cell is read from the Y document alone (:meth:`cell`), found by its place last seen
    (:meth:`NotebookRoom.position`), and each edit is one transaction on the cells array:
    what an edit costs does not grow with the notebook. The Y id of each cell handed out
    is kept, so an edit made after the person was asked acts on that cell wherever it is
    by then."""

    def __init__(
        self, room: NotebookRoom, path: Path, timeout_s: float, keep: bool = False
    ) -> None:
        self.room = room
        self.path = path
        self.timeout_s = timeout_s
        self.keep = keep
        self._read: dict[int, str] = {}  # a cell's index as handed out -> its Y id
        self._version: tuple[int, int] | None = None

    def version(self) -> tuple[int, int]:
        if self._version is None:
            meta = self.room.doc.get("meta", type=Map)
            major, minor = meta.get("nbformat"), meta.get("nbformat_minor")
            self._version = checked_version(self.path, major, minor)
        return self._version

    def count(self) -> int:
        return len(self.room.notebook.ycells)

    def find(self, wanted: str) -> int | None:
        """The cell ``wanted`` (an id as ``cell_id`` gives it: ``cell-<n>`` for a
        cell without one, every cell of a notebook older than nbformat 4.5)."""
        with_ids = self.version() >= (4, 5)
        at = self.room.position(wanted) if with_ids and wanted else None
        if at is not None:
            self._read[at] = wanted
            return at
        if wanted.startswith("cell-") and wanted[5:].isdigit():
            at = int(wanted[5:]) - 1
            if 0 <= at < self.count() and not (with_ids and self.room.yid(at)):
                self._read[at] = self.room.yid(at)
                return at
        return None

    def ids(self) -> list[str]:
        with_ids = self.version() >= (4, 5)
        found = self.room.yids()
        return [y if with_ids and y else f"cell-{at + 1}" for at, y in enumerate(found)]

    def cell(self, index: int) -> Any:
        version = self.version()
        raw = self.room.notebook.get_cell(index)  # ids dropped before nbformat 4.5
        self._read[index] = self.room.yid(index)
        return read_cell(raw, version)

    def notebook(self) -> Any:
        content = self.room.notebook.get(deduplicate=False)
        self._version = checked_version(self.path, content.get("nbformat"),
                                         content.get("nbformat_minor"))  # fmt: skip
        if self._version >= (4, 5):
            yids = [str(cell.get("id", "")) for cell in content["cells"]]
        else:
            yids = self.room.yids()
        self._read = dict(enumerate(yids))
        return read_content(content)

    async def apply(
        self,
        edit_mode: str,
        index: int | None,
        cell: dict[str, Any] | None,
        note: MetadataChange | None = None,
    ) -> None:
        at = None if index is None else self._now(index)
        value = json.loads(json.dumps(cell)) if cell is not None else None
        if at is not None and edit_mode != "insert":  # as the cell is now, not as read
            now = self.room.notebook.ycells[at].to_py() or {}
            refusal = edit_refusal(now, edit_mode, None, "edit")  # locked, or graded and deleted
            if refusal is not None:
                raise RespondToModel(refusal)

        meta = self.room.doc.get("meta", type=Map)

        def edit(nb: YNotebook) -> None:
            if note is not None:
                _change_metadata(meta, note)
            if edit_mode == "insert":
                assert value is not None
                to = 0 if at is None else at + 1
                nb.ycells.insert(to, nb.create_ycell(value))
                if value.get("id"):
                    self.room.placed(str(value["id"]), to)
                return
            assert at is not None
            if edit_mode == "delete":
                del nb.ycells[at]
                return
            assert value is not None
            ycell = nb.ycells[at]
            if ycell.get("cell_type") != value["cell_type"]:
                nb.set_cell(at, value)
                return
            nb.set_cell(at, source=value["source"])
            if isinstance(ycell.get("outputs"), Array):
                ycell["outputs"].clear()
                ycell["execution_count"] = None

        try:
            await self.room.change(edit, self.timeout_s)
        except _RoomError as exc:
            raise LiveUnavailable(str(exc)) from None

    async def note(self, change: MetadataChange) -> None:
        try:
            meta = self.room.doc.get("meta", type=Map)
            await self.room.change(lambda nb: _change_metadata(meta, change), self.timeout_s)
        except _RoomError as exc:
            raise LiveUnavailable(str(exc)) from None

    def _now(self, index: int) -> int:
        """Where the cell handed out as ``index`` is now: the person may have moved or
        deleted it meanwhile."""
        wanted = self._read.get(index)
        at = self.room.position(self.room.yid(index) if wanted is None else wanted)
        if at is None:
            raise RespondToModel("the cell is no longer in the notebook; read the notebook again")
        return at

    async def close(self) -> None:
        if not self.keep:
            await self.room.close()


def _change_metadata(root: Map[Any], change: MetadataChange) -> None:
    """Run ``change`` on a copy of the notebook's metadata (``root``: the document's
    ``meta`` map) and write back the top-level keys it changed, each as a JSON value."""
    meta = root.get("metadata")
    if not isinstance(meta, Map):
        return  # a document still empty: nothing to note in
    before = meta.to_py() or {}
    after = json.loads(json.dumps(before))
    change(after)
    for key, value in after.items():
        if before.get(key) != value:
            meta[key] = value


def _close_text(code: int | None, reason: str | None) -> str:
    """Why the server closed the room, in words (its reason may be JSON)."""
    detail = reason or ""
    with contextlib.suppress(ValueError):
        parsed = json.loads(detail)
        if isinstance(parsed, dict):
            detail = str(parsed.get("errorReason") or parsed.get("reason") or detail)
    if code == 4404:
        return "the server did not find the notebook file"
    said = f"{code or 'no code'}: {detail}" if detail else f"{code or 'no code'}"
    return f"the server closed the notebook's room ({said})"
