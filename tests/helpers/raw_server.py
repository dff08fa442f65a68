"""A loopback server that answers every request with exact bytes, as slowly as it
likes: for model servers that trickle, stall or compress. It runs in threads, so a
test's own event loop or an ``agent-magics exec`` child can both talk to it; as a
proxy (``HTTP_PROXY``) it answers requests in absolute form the same way."""

from __future__ import annotations

import contextlib
import functools
import gzip
import socket
import socketserver
import threading
import zlib
from collections.abc import Callable

from agent_magics.testing import encode_sse, message, response_events

Reply = Callable[[socket.socket, threading.Event], None]


class RawServer:
    """Reads each request's head and body, then hands the socket to ``reply``; the
    ``stop`` event is set when the server closes, so an endless reply ends."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.heads: list[bytes] = []
        self.stop = threading.Event()
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                conn: socket.socket = self.request
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                head = _read_request(conn)
                if head is None:
                    return
                server.heads.append(head)
                with contextlib.suppress(OSError):  # the client went away
                    server.reply(conn, server.stop)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.tcp = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.tcp.daemon_threads = True
        self.port = self.tcp.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self.base_url = f"{self.origin}/v1"
        # shutdown() waits for the loop's next look (0.5 s by default): look often
        threading.Thread(target=self.tcp.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.tcp.shutdown()
        self.tcp.server_close()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_request(conn: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        part = conn.recv(65536)
        if not part:
            return None
        data += part
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        part = conn.recv(65536)
        if not part:
            return None
        body += part
    return head


def answer_text(text: str) -> bytes:
    """A Responses stream whose answer is one message saying ``text``."""
    return encode_sse(response_events([message(text)]))


@functools.cache
def gzip_bomb(size: int) -> bytes:
    """``size`` bytes of blank lines, gzipped without ever holding them."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    blank = b"\n" * (1 << 20)
    parts = [packer.compress(blank) for _ in range(size >> 20)]
    return b"".join([*parts, packer.flush()])


def pack(body: bytes, encoding: str) -> bytes:
    """``body`` in ``encoding``: gzip, deflate (zlib's wrapper) or raw-deflate (none)."""
    if encoding == "gzip":
        return gzip.compress(body)
    wbits = zlib.MAX_WBITS if encoding == "deflate" else -zlib.MAX_WBITS
    packer = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return packer.compress(body) + packer.flush()


def gzipped(
    body: bytes, *, length: bool = True, packed: bool = False, encoding: str = "gzip"
) -> Reply:
    """A 200 answer whose body is ``body`` compressed (``packed``: it is already), sent
    although nobody asked for it."""
    packed_body = body if packed else pack(body, encoding)
    name = encoding.removeprefix("raw-").encode()
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    head += b"content-encoding: %s\r\n" % name
    head += b"content-length: %d\r\n" % len(packed_body) if length else b"connection: close\r\n"

    def reply(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(head + b"\r\n" + packed_body)
        conn.shutdown(socket.SHUT_WR)
        conn.recv(1)  # until the client hangs up

    return reply


def trickle(prefix: bytes, drip: bytes, every_s: float) -> Reply:
    """``prefix``, then ``drip`` one byte every ``every_s`` seconds, never ending."""

    def reply(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(prefix)
        i = 0
        while not stop.wait(every_s):
            conn.sendall(drip[i % len(drip) : i % len(drip) + 1])
            i += 1

    return reply


def repeat(part: bytes, every_s: float) -> Reply:
    """``part`` again and again, every ``every_s`` seconds (0: as fast as it goes)."""

    def reply(conn: socket.socket, stop: threading.Event) -> None:
        burst = part * max(1, 4096 // len(part)) if every_s == 0 else part
        while not stop.is_set():
            conn.sendall(burst)
            if every_s:
                stop.wait(every_s)

    return reply


def stall(prefix: bytes) -> Reply:
    """``prefix``, then silence until the client hangs up."""

    def reply(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(prefix)
        conn.settimeout(0.2)
        while not stop.is_set():
            try:
                if not conn.recv(1):
                    return
            except TimeoutError:
                continue

    return reply
