"""A chat's line to a notebook's kernel: the Jupyter server's kernel websocket.

Each call is one ``execute_request`` on the kernel's shell channel (JSON frames, the
server's default protocol): its code is :data:`BRIDGE_CODE`, always the same, and the
call travels as JSON data in the request's metadata, never in the code. The code imports
``agent_magics`` from the kernel's installed packages only (not from a folder of that
name beside the notebook, which the repository or the model may have written) and
awaits the kernel side, :mod:`agent_magics.jupyter.kernel.bridge`, whose answer comes
back in the reply's user expression.

The shell channel runs one request at a time, so a call made while the person's cell
runs waits its turn, and the person's next cell waits for a call that runs.
:meth:`KernelChannel.interrupt` interrupts the kernel only while a call of ours runs in
it; a call given up while it still waits is interrupted as soon as it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from agent_magics.errors import TurnAborted

if TYPE_CHECKING:
    from tornado.websocket import WebSocketClientConnection

REQUEST_KEY = "agent_magics_bridge"  # as the kernel side reads it
CONNECT_TIMEOUT_S = 10.0
CLOSE_WAIT_S = 2.0
"""How long closing waits for the server to answer the close."""
INTERRUPT_AGAIN_S = 0.5
INTERRUPT_TRIES = 20
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""Largest answer taken from the kernel (images are sent whole)."""
REPLY_EXPRESSION = "__import__('sys').modules['agent_magics.jupyter.kernel.bridge'].reply()"
BRIDGE_CODE = """\
def _agent_magics_bridge():
    import importlib, os, site, sys

    def inside(path, folder):
        return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)

    metadata = get_ipython().kernel.get_parent("shell").get("metadata", {})
    call = metadata.get("agent_magics_bridge", {})  # REQUEST_KEY
    own = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    try:
        own.append(site.getusersitepackages())
    except Exception:
        pass
    own = [os.path.realpath(p) for p in own if p]
    writable = [os.getcwd(), "/tmp", os.environ.get("TMPDIR") or "/tmp"]
    writable += [p for p in call.get("untrusted", []) if isinstance(p, str) and p]
    writable = [os.path.realpath(p) for p in writable]

    def untrusted(entry):
        if not isinstance(entry, str) or entry == "":
            return True
        real = os.path.realpath(entry)
        if any(inside(real, p) for p in own):
            return False
        return any(inside(real, p) for p in writable)

    def refuse(module):
        places = [getattr(module, "__file__", None), *getattr(module, "__path__", [])]
        if places[0] is None or any(untrusted(p) for p in places):
            raise ImportError(
                "agent_magics would come from the notebook's folders, not the kernel's own"
            )

    package = sys.modules.get("agent_magics")
    if package is None:
        saved = list(sys.path)
        sys.path[:] = [e for e in saved if not untrusted(e)]
        try:
            package = importlib.import_module("agent_magics")
        finally:
            sys.path[:] = saved
    refuse(package)
    guard = importlib.import_module("agent_magics.import_guard")
    refuse(guard)
    guard.distrust(*writable)  # what the package imports later is held to the same folders
    bridge = importlib.import_module("agent_magics.jupyter.kernel.bridge")
    refuse(bridge)
    return bridge


try:
    await _agent_magics_bridge().serve()
finally:
    del _agent_magics_bridge
"""
"""The code of every call: it imports the kernel side from the kernel's own packages.
A ``sys.path`` entry is left out while importing when it lies in a folder the notebook's
files are in (the kernel's working folder, the server's root and the chat's folder,
which the call names, ``/tmp``), unless it lies in the kernel's own environment (a
project's ``.venv``, kept read-only to the chat's commands as its code paths are); a
package or module found in such a folder anyway (already imported from there, or a
namespace package with no file of its own) is refused; and the package's import guard
distrusts those folders from then on, so what the kernel side imports later (pydantic,
nbformat...) does not come from there either."""


class _BridgeFailed(Exception):
    """The kernel did not run the call: ``name`` and ``value`` are its error's."""

    def __init__(self, name: str, value: str) -> None:
        super().__init__(f"{name}: {value}")
        self.name = name
        self.value = value


class _KernelGone(_BridgeFailed):
    """The kernel restarted or stopped, or the server closed the line."""


class KernelChannel:
    """The websocket to the kernel ``kernel_id`` of the server at ``url`` (ends with
    ``/``), authorised by ``headers``; ``untrusted``: folders the kernel must import
    nothing of ours from (see :data:`BRIDGE_CODE`)."""

    def __init__(
        self, url: str, kernel_id: str, headers: dict[str, str], untrusted: list[str]
    ) -> None:
        self.url = url
        self.kernel_id = kernel_id
        self._headers = headers
        self.untrusted = untrusted  # folders the kernel imports nothing of ours from
        self._session = uuid.uuid4().hex
        self._conn: WebSocketClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._running: set[str] = set()  # calls the kernel has started
        self._given_up: set[str] = set()  # their answers unwanted, their code stopped
        self._sent: dict[str, object] = {}  # op of each call not answered yet, by id
        self._stopping: set[asyncio.Task[None]] = set()

    async def connect(self) -> None:
        from tornado.httpclient import HTTPClientError, HTTPRequest
        from tornado.websocket import websocket_connect

        ws = "ws" + self.url[len("http") :] if self.url.startswith("http") else self.url
        where = f"{ws}api/kernels/{quote(self.kernel_id)}/channels?session_id={self._session}"
        request = HTTPRequest(where, headers=self._headers, connect_timeout=CONNECT_TIMEOUT_S)
        try:
            self._conn = await asyncio.wait_for(
                websocket_connect(request, max_message_size=MAX_MESSAGE_BYTES), CONNECT_TIMEOUT_S
            )
        except (TimeoutError, OSError, HTTPClientError) as exc:
            raise _KernelGone(
                "ConnectionError", f"the kernel's channel did not open ({exc})"
            ) from None
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @property
    def busy(self) -> bool:
        """Whether a call of ours runs in the kernel now."""
        return bool(self._running)

    async def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send ``request`` to the kernel side and return its answer; raises
        :class:`_BridgeFailed` when the kernel could not run it, TurnAborted when it was
        interrupted."""
        if self._conn is None:
            raise _KernelGone("ConnectionError", "the kernel's channel is closed")
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "username": "agent_magics",
                  "session": self._session, "date": datetime.now(UTC).isoformat(),
                  "version": "5.3"}  # fmt: skip
        content = {"code": BRIDGE_CODE, "silent": True, "store_history": False,
                   "user_expressions": {"reply": REPLY_EXPRESSION}, "allow_stdin": False,
                   "stop_on_error": False}  # fmt: skip
        call = {**request, "untrusted": self.untrusted}
        message = {"header": header, "parent_header": {}, "metadata": {REQUEST_KEY: call},
                   "content": content, "channel": "shell", "buffers": []}  # fmt: skip
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        self._sent[msg_id] = request.get("op")
        from tornado.websocket import WebSocketClosedError

        try:
            try:
                await self._conn.write_message(json.dumps(message))
            except WebSocketClosedError:
                self._sent.pop(msg_id, None)
                why = "the server closed the kernel's channel"
                raise _KernelGone("ConnectionClosed", why) from None
            reply = await future
        except asyncio.CancelledError:
            self._give_up(msg_id)  # it must not run on its own later
            raise
        finally:
            self._waiting.pop(msg_id, None)
        if msg_id in self._given_up:
            self._given_up.discard(msg_id)
            raise TurnAborted("interrupted")  # its answer came, but nobody wants it now
        return _answer(reply)

    async def _read(self) -> None:
        assert self._conn is not None
        why = "the server closed the kernel's channel"
        while True:
            raw = await self._conn.read_message()
            if raw is None:
                break
            if isinstance(raw, bytes):
                continue  # a binary frame (buffers): no answer of ours comes so
            try:
                msg = json.loads(raw)
                parent = str((msg.get("parent_header") or {}).get("msg_id", ""))
                kind = msg.get("msg_type") or msg["header"]["msg_type"]
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
            if kind == "status":
                state = (msg.get("content") or {}).get("execution_state")
                if state in ("restarting", "dead"):
                    why = f"the kernel is {state}"
                    self._fail(_KernelGone("KernelRestarted", why))
                elif state == "busy" and parent in self._sent:
                    self._running.add(parent)
                    if parent in self._given_up and self._sent[parent] == "run":
                        self._stop(parent)
                elif state == "idle":
                    self._running.discard(parent)
            elif kind == "execute_reply" and parent in self._sent:
                self._running.discard(parent)  # ended: not interrupted any more
                del self._sent[parent]
                future = self._waiting.get(parent)
                if future is None:  # given up by a cancelled task: nobody waits
                    self._given_up.discard(parent)
                elif not future.done():
                    future.set_result(msg.get("content") or {})
        self._fail(_KernelGone("ConnectionClosed", why))
        self._conn = None

    def _fail(self, error: Exception) -> None:
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(error)
        self._running.clear()
        self._sent.clear()
        self._given_up.clear()

    async def interrupt(self) -> None:
        """Give up the calls of ours: their answers are not taken (TurnAborted), and
        code they run is interrupted, now if the kernel runs it, else once it starts
        (the person's own cell is never interrupted)."""
        for msg_id in list(self._waiting):
            self._give_up(msg_id)

    def _give_up(self, msg_id: str) -> None:
        if msg_id not in self._sent:
            return  # answered already
        self._given_up.add(msg_id)
        if msg_id in self._running and self._sent[msg_id] == "run":
            self._stop(msg_id)

    def _stop(self, msg_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self._interrupt_until_done(msg_id))
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    async def _interrupt_until_done(self, msg_id: str) -> None:
        """Interrupt the kernel while it runs the call ``msg_id``: again after a moment,
        as an interrupt that lands before the call's code runs (in the kernel's own
        machinery) may be swallowed there."""
        for _ in range(INTERRUPT_TRIES):
            if msg_id not in self._running:
                return
            await self._interrupt()
            await asyncio.sleep(INTERRUPT_AGAIN_S)

    async def _interrupt(self) -> None:
        import httpx

        from agent_magics.models.pool import tls_context

        url = f"{self.url}api/kernels/{quote(self.kernel_id)}/interrupt"
        with contextlib.suppress(httpx.HTTPError):
            async with httpx.AsyncClient(
                headers=self._headers, timeout=CONNECT_TIMEOUT_S, verify=tls_context(self.url)
            ) as client:
                await client.post(url)

    async def aclose(self) -> None:
        """Close the line, waiting a moment for the server to answer the close."""
        for task in list(self._stopping):
            task.cancel()
        if self._conn is not None:
            self._conn.close()
        if self._reader is not None:
            with contextlib.suppress(TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(self._reader), CLOSE_WAIT_S)
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        self._conn = None


def _answer(reply: dict[str, Any]) -> dict[str, Any]:
    """The kernel side's answer in an ``execute_reply``'s content."""
    if reply.get("status") != "ok":
        name, value = str(reply.get("ename", "Error")), str(reply.get("evalue", ""))
        if name == "KeyboardInterrupt":
            raise TurnAborted("interrupted")
        raise _BridgeFailed(name, value)
    shown = (reply.get("user_expressions") or {}).get("reply") or {}
    if shown.get("status") != "ok":
        raise _BridgeFailed(str(shown.get("ename", "Error")), str(shown.get("evalue", "")))
    data = (shown.get("data") or {}).get("application/json")
    if not isinstance(data, dict) or not data:
        raise _BridgeFailed("NoAnswer", "the kernel's agent_magics gave no answer")
    return data
