"""HTTP/1.1 over asyncio streams, for model servers spoken to in plain ``http://``.

A local model server, the scripted demo server and every loopback test server speak
plain HTTP on the same machine. For them, importing httpx and building its anyio
backend at the first request took some 75 ms of a one-turn ``agent-magics exec``: more
than the request itself. This client frames a POST and reads the answer with h11 (the
HTTP/1.1 state machine httpx's own transport is built on) over an asyncio stream, and
keeps the connection for the next request. ``https://`` servers, and any server reached
through a proxy, go through httpx instead (:mod:`agent_magics.models.pool`), which wraps
its client in the same small interface.

A failure is a :class:`TransportError` whose ``kind`` is httpx's name for it
(``ConnectError``, ``ReadTimeout``, ``RemoteProtocolError``...), so a sentence naming
it reads the same whichever client sent the request.

Both clients bound the time to an answer's complete status line and headers by one
deadline from the start of the request (:class:`HeadTimeout`): a per-read timeout alone
would let a server that trickles a byte at a time, or sends interim ``1xx`` answers
forever, hold a turn for good. This client also stops after
:data:`MAX_INTERIM_RESPONSES` interim answers (httpx skips them uncounted, until the
deadline).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from contextlib import AbstractAsyncContextManager
from typing import Protocol, TypeVar
from urllib.parse import SplitResult

import h11

READ_BYTES = 1 << 16  # the most one network read takes
MAX_HEAD_BYTES = 1 << 16  # of a response's status line and headers
MAX_INTERIM_RESPONSES = 10  # 1xx answers before the real one (there is rarely more than one)
USER_AGENT = "agent-magics"
T = TypeVar("T")


class TransportError(Exception):
    """The request could not be sent, or its answer not read, whatever the server said.
    ``kind`` names the failure as httpx does: ``ConnectError``, ``RemoteProtocolError``..."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail


class ReadTimeout(TransportError):
    """No byte arrived within the read timeout."""

    def __init__(self, detail: str = "") -> None:
        super().__init__("ReadTimeout", detail)


class HeadTimeout(ReadTimeout):
    """The answer's status line and headers were not complete ``seconds`` after the
    request began, however the server spent the time."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no complete response headers within {seconds:g} s")
        self.seconds = seconds


class ServerFault(TransportError):
    """The server answered against HTTP's rules; ``detail`` says how, in a phrase that
    follows "the model server" (no text of the server's)."""

    def __init__(self, detail: str) -> None:
        super().__init__("RemoteProtocolError", detail)


class DecodingError(TransportError):
    """The body's ``content-encoding`` could not, or may not, be undone; ``detail`` is
    the sentence (:mod:`agent_magics.models.encoding`)."""

    def __init__(self, detail: str) -> None:
        super().__init__("DecodingError", detail)


def failure(kind: str, detail: str) -> TransportError:
    """The error for a failure httpx would name ``kind``."""
    return ReadTimeout(detail) if kind == "ReadTimeout" else TransportError(kind, detail)


class Response(Protocol):
    """What a model client reads of an answer: its status, headers (names in lower
    case) and body, read once as it came, any ``content-encoding`` still on
    (:func:`agent_magics.models.encoding.body` takes it off)."""

    status_code: int
    reason_phrase: str
    headers: dict[str, str]

    def aiter_raw(self) -> AsyncIterator[bytes]: ...


class HttpClient(Protocol):
    """A client that posts to one server and keeps connections to it."""

    @property
    def is_closed(self) -> bool: ...

    def stream(
        self, method: str, url: str, *, content: bytes, headers: dict[str, str]
    ) -> AbstractAsyncContextManager[Response]: ...

    async def aclose(self) -> None: ...


class _Connection:
    __slots__ = ("h11", "read_s", "reader", "writer")

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, read_s: float
    ) -> None:
        self.reader, self.writer, self.read_s = reader, writer, read_s
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)

    async def next_event(self) -> object:
        """The next HTTP event, reading the network as it needs."""
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise TransportError("RemoteProtocolError", str(exc)) from None
            if event is not h11.NEED_DATA:
                return event
            data = await _timed(
                self.reader.read(READ_BYTES), self.read_s, "ReadTimeout", "ReadError"
            )
            self.h11.receive_data(data)  # b"" is the end of the connection

    def reusable(self) -> bool:
        """Still open at both ends: a server that closed an idle connection has its end
        of file read by the loop, so the connection is dropped before it is used."""
        return not (self.writer.is_closing() or self.reader.at_eof() or self.reader.exception())

    def close(self) -> None:
        self.writer.close()


class PlainResponse:
    """An answer being read from its connection."""

    __slots__ = ("_conn", "complete", "headers", "reason_phrase", "status_code")

    def __init__(self, conn: _Connection, head: h11.Response) -> None:
        self._conn = conn
        self.status_code = head.status_code
        self.reason_phrase = head.reason.decode("latin-1")
        headers: dict[str, str] = {}
        for name, value in head.headers:
            key, text = name.decode("latin-1"), value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        self.headers = headers
        self.complete = False  # the body's end was read

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        while not self.complete:
            event = await self._conn.next_event()
            if isinstance(event, h11.Data):
                if event.data:
                    yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self.complete = True
            else:
                raise TransportError(
                    "RemoteProtocolError", "the server closed the connection mid-answer"
                )


class PlainClient:
    """Posts to one ``http://`` server; a connection whose answer was read to its end
    goes back for the next request, any other is closed."""

    def __init__(
        self,
        origin: SplitResult,
        *,
        connect_s: float,
        read_s: float,
        write_s: float,
        head_s: float,
        max_interim: int = MAX_INTERIM_RESPONSES,
    ) -> None:
        self._host, self._port = origin.hostname or "", origin.port or 80
        self._host_header = origin.netloc
        self._connect_s, self._read_s, self._write_s = connect_s, read_s, write_s
        self._head_s, self._max_interim = head_s, max_interim
        self._idle: list[_Connection] = []
        self._closed = False

    @property
    def is_closed(self) -> bool:
        return self._closed

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, url: str, *, content: bytes, headers: dict[str, str]
    ) -> AsyncIterator[PlainResponse]:
        if self._closed:
            raise TransportError("ClosedClient", "the HTTP client is closed")
        deadline = asyncio.get_running_loop().time() + self._head_s
        async with self._head_deadline(deadline):
            conn = await self._connection()
        response: PlainResponse | None = None
        try:
            async with self._head_deadline(deadline):
                response = await self._send(conn, method, _target(url), content, headers)
            yield response
        finally:
            if response is not None and response.complete and self._reuse(conn):
                self._idle.append(conn)
            else:
                conn.close()

    @contextlib.asynccontextmanager
    async def _head_deadline(self, deadline: float) -> AsyncIterator[None]:
        """The answer's status line and headers are complete by ``deadline``, or the
        request fails with :class:`HeadTimeout`, whatever the server sent by then."""
        try:
            async with asyncio.timeout_at(deadline):
                yield
        except TimeoutError:
            raise HeadTimeout(self._head_s) from None

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        for conn in idle:
            with contextlib.suppress(OSError):
                await conn.writer.wait_closed()

    async def _connection(self) -> _Connection:
        while self._idle:
            conn = self._idle.pop()
            if conn.reusable():
                return conn
            conn.close()
        reader, writer = await _timed(
            asyncio.open_connection(self._host, self._port, limit=READ_BYTES),
            self._connect_s,
            "ConnectTimeout",
            "ConnectError",
        )
        return _Connection(reader, writer, self._read_s)

    async def _send(
        self, conn: _Connection, method: str, target: str, content: bytes, headers: dict[str, str]
    ) -> PlainResponse:
        fields = [
            ("host", self._host_header),
            ("user-agent", USER_AGENT),
            ("content-length", str(len(content))),
            *headers.items(),
        ]
        try:
            wire = conn.h11.send(h11.Request(method=method, target=target, headers=fields))
            wire = (wire or b"") + (conn.h11.send(h11.Data(data=content)) or b"")
            wire += conn.h11.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:  # its text may quote a header: the key's, say
            raise TransportError("LocalProtocolError", "the request is not valid HTTP") from None
        conn.writer.write(wire)
        await _timed(conn.writer.drain(), self._write_s, "WriteTimeout", "WriteError")
        for _ in range(self._max_interim + 1):
            event = await conn.next_event()
            if isinstance(event, h11.Response):
                return PlainResponse(conn, event)
            if not isinstance(event, h11.InformationalResponse):
                raise TransportError(
                    "RemoteProtocolError", "the server disconnected without sending a response"
                )
        raise ServerFault(
            f"sent more than {self._max_interim} interim (1xx) responses before its answer"
        )

    def _reuse(self, conn: _Connection) -> bool:
        if self._closed or conn.h11.our_state is not h11.DONE:
            return False
        if conn.h11.their_state is not h11.DONE:
            return False
        conn.h11.start_next_cycle()
        return conn.reusable()


async def _timed(work: Awaitable[T], seconds: float, late: str, broken: str) -> T:
    """``work``, its failures named ``late`` (no progress in ``seconds``) or ``broken``."""
    try:
        async with asyncio.timeout(seconds):
            return await work
    except TimeoutError:
        raise failure(late, f"no progress in {seconds:g} s") from None
    except OSError as exc:
        raise failure(broken, str(exc) or type(exc).__name__) from None


def _target(url: str) -> str:
    """The request target of an absolute ``http://`` URL: its path and query."""
    rest = url.split("://", 1)[-1]
    slash = rest.find("/")
    return rest[slash:] if slash >= 0 else "/"
