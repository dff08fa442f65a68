"""The plain-HTTP client against real sockets: each test runs an asyncio server on
127.0.0.1 that answers with exact bytes, so framing, keep-alive and failures are the
server's doing, not a stand-in's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import pytest

from agent_magics.models import wire

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OK_BODY = b'data: {"type":"x"}\n\n'


class Server:
    def __init__(self, answer: Callable[[int], bytes | None], close: bool) -> None:
        self.answer = answer  # request number -> bytes to send (None: hang up)
        self.close = close  # hang up after each answer
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []
        self.connections = 0
        self.open: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self.open[task] = writer
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                self.heads.append(head)
                self.bodies.append(await reader.readexactly(length))
                reply = self.answer(len(self.heads))
                if reply is None:
                    return
                writer.write(reply)
                await writer.drain()
                if self.close:
                    return
        finally:
            writer.close()
            self.open.pop(task, None)


@asynccontextmanager
async def serving(
    answer: Callable[[int], bytes | None], close: bool = False
) -> AsyncIterator[tuple[Server, str]]:
    server = Server(answer, close)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        yield server, f"http://127.0.0.1:{port}/v1"
    finally:
        listener.close()
        await listener.wait_closed()
        for writer in server.open.values():
            writer.close()
        await asyncio.gather(*server.open, return_exceptions=True)


def client(base_url: str, read_s: float = 5.0) -> wire.PlainClient:
    return wire.PlainClient(
        urlsplit(base_url), connect_s=5.0, read_s=read_s, write_s=5.0, head_s=5.0
    )


async def post(
    http: wire.PlainClient, url: str, body: bytes = b"{}"
) -> tuple[int, dict[str, str], bytes]:
    headers = {"content-type": "application/json", "authorization": "Bearer sk-wire"}
    async with http.stream("POST", url, content=body, headers=headers) as response:
        got = b"".join([chunk async for chunk in response.aiter_raw()])
        return response.status_code, response.headers, got


def chunked(*parts: bytes) -> bytes:
    framed = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts)
    return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + framed + b"0\r\n\r\n"


def sized(body: bytes, *extra: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n" % len(body)
    return head + b"".join(e + b"\r\n" for e in extra) + b"\r\n" + body


async def test_a_post_is_framed_and_a_chunked_answer_read() -> None:
    async with serving(lambda n: chunked(OK_BODY[:7], OK_BODY[7:])) as (server, base):
        http = client(base)
        status, _, body = await post(http, f"{base}/responses?x=1", b'{"a": 1}')
        await http.aclose()
    assert (status, body) == (200, OK_BODY)
    head = server.heads[0].decode()
    assert head.startswith("POST /v1/responses?x=1 HTTP/1.1\r\n")
    assert f"host: {base.split('//')[1].split('/')[0]}\r\n" in head
    assert "content-length: 8\r\n" in head and "authorization: Bearer sk-wire\r\n" in head
    assert server.bodies == [b'{"a": 1}']


async def test_a_connection_is_kept_for_the_next_request() -> None:
    async with serving(lambda n: sized(b"answer %d" % n)) as (server, base):
        http = client(base)
        bodies = [(await post(http, f"{base}/responses"))[2] for _ in range(3)]
        await http.aclose()
    assert bodies == [b"answer 1", b"answer 2", b"answer 3"]
    assert server.connections == 1


async def test_an_answer_left_unread_closes_its_connection() -> None:
    async with serving(lambda n: sized(b"x" * 100)) as (server, base):
        http = client(base)
        async with http.stream("POST", f"{base}/r", content=b"", headers={}) as response:
            assert response.status_code == 200  # the body is not read
        assert (await post(http, f"{base}/r"))[2] == b"x" * 100
        await http.aclose()
    assert server.connections == 2


async def test_a_server_that_closes_an_idle_connection_gets_a_new_one() -> None:
    """The server says nothing of closing (so the connection is kept) and hangs up."""
    async with serving(lambda n: sized(b"bye"), close=True) as (server, base):
        http = client(base)
        assert (await post(http, f"{base}/r"))[2] == b"bye"
        await asyncio.sleep(0.05)
        assert (await post(http, f"{base}/r"))[2] == b"bye"
        await http.aclose()
    assert server.connections == 2


async def test_an_answer_ended_by_closing_the_connection() -> None:
    reply = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the end"
    async with serving(lambda n: reply, close=True) as (_, base):
        http = client(base)
        assert (await post(http, f"{base}/r"))[2] == b"until the end"
        await http.aclose()


async def test_informational_answers_are_skipped_and_headers_joined() -> None:
    reply = b"HTTP/1.1 100 Continue\r\n\r\n" + sized(
        b"{}", b"Retry-After: 2", b"x-many: a", b"x-many: b"
    )
    async with serving(lambda n: reply) as (_, base):
        http = client(base)
        status, headers, _ = await post(http, f"{base}/r")
        await http.aclose()
    assert status == 200
    assert headers["retry-after"] == "2" and headers["x-many"] == "a, b"


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (None, "RemoteProtocolError"),  # hung up without answering
        (b"SPEAK FRIEND\r\n\r\n", "RemoteProtocolError"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort", "RemoteProtocolError"),
    ],
)
async def test_a_broken_answer_is_a_transport_error(reply: bytes | None, kind: str) -> None:
    async with serving(lambda n: reply, close=True) as (_, base):
        http = client(base)
        with pytest.raises(wire.TransportError) as caught:
            await post(http, f"{base}/r")
        await http.aclose()
    assert caught.value.kind == kind


async def test_a_silent_server_is_a_read_timeout() -> None:
    async with serving(lambda n: b"") as (_, base):
        http = client(base, read_s=0.2)
        with pytest.raises(wire.ReadTimeout):
            await post(http, f"{base}/r")
        await http.aclose()


async def test_nobody_listening_is_a_connect_error() -> None:
    async with serving(lambda n: b"") as (_, base):
        pass  # closed: the port is free again
    http = client(base)
    with pytest.raises(wire.TransportError) as caught:
        await post(http, f"{base}/r")
    assert caught.value.kind == "ConnectError"


async def test_a_header_that_is_not_http_never_shows_its_value() -> None:
    async with serving(lambda n: sized(b"")) as (server, base):
        http = client(base)
        with pytest.raises(wire.TransportError) as caught:
            async with http.stream(
                "POST",
                f"{base}/r",
                content=b"",
                headers={"authorization": "Bearer sk-x\r\nevil: 1"},
            ):
                pass
        await http.aclose()
    assert caught.value.kind == "LocalProtocolError" and "sk-x" not in str(caught.value)
    assert server.heads == []
