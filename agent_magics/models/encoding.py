"""A compressed answer the model server sent though it was asked not to, inflated
within bounds (httpx would inflate it in a single piece as large as it grows).

Every request asks for ``accept-encoding: identity``, so a server should not compress,
but a server or a proxy may. Its body is inflated here, in pieces no larger than a
network read: the bounds on what is read (one SSE event's
:data:`~agent_magics.models._sse.MAX_EVENT_BYTES`, the first 64 KiB of an error body)
hold for inflated bytes as for raw ones, and nothing larger is held at once. And to no
more than :data:`MAX_EXPANSION` times the bytes received (past a first
:data:`EXPANSION_ALLOWANCE`): a megabyte of gzip can be a gigabyte of blank lines,
minutes of parsing for what took the server nothing to send, while a stream of JSON
events packs about ten-fold (one repeating a letter for pages, about eighty-fold).
gzip and deflate are read (zlib is in the standard library); any other encoding is
refused, as a body nobody can read.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import AsyncIterator, Iterator

import httpx

PIECE_BYTES = 1 << 16  # the most one inflated piece holds: a network read's worth
MAX_EXPANSION = 100
EXPANSION_ALLOWANCE = 1 << 20
TOO_EXPANDED = (
    f"the model server sent a compressed answer that grows more than {MAX_EXPANSION}-fold, "
    "so the stream was stopped"
)
TOKEN = re.compile(r"[a-z0-9._+-]{1,32}")  # an encoding's name, quoted in a sentence
WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class _DecodingError(Exception):
    """The body's ``content-encoding`` could not, or may not, be undone; ``detail`` is
    the sentence."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


async def body(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body of ``response`` with its ``content-encoding`` undone, a bounded piece
    at a time; raises :class:`_DecodingError` for what cannot or may not be inflated."""
    encodings = [
        name
        for part in response.headers.get("content-encoding", "").split(",")
        if (name := part.strip().lower()) and name != "identity"
    ]
    if not encodings:
        async for chunk in response.aiter_raw():
            yield chunk
        return
    if len(encodings) > 1 or encodings[0] not in WBITS:
        named = all(TOKEN.fullmatch(name) for name in encodings) and len(encodings) < 4
        raise _DecodingError(
            "the model server sent its answer in an encoding it was not asked for"
            + (f" ({', '.join(encodings)})" if named else "")
        )
    inflater = Inflater(encodings[0])
    async for chunk in response.aiter_raw():
        for piece in inflater.feed(chunk):
            yield piece


class Inflater:
    """One body's inflation. ``deflate`` comes with its zlib wrapper or without, as
    servers send it both ways: its first two bytes tell which."""

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        self._zlib = None if encoding == "deflate" else zlib.decompressobj(WBITS[encoding])
        self._start = b""  # of a deflate body, until its first two bytes are in
        self._received = 0
        self._given = 0

    def feed(self, raw: bytes) -> Iterator[bytes]:
        """The inflated pieces of ``raw``, none over :data:`PIECE_BYTES`."""
        self._received += len(raw)
        if self._zlib is None:
            raw = self._start = self._start + raw
            if len(raw) < 2:
                return
            wrapped = raw[0] & 0x0F == 8 and (raw[0] << 8 | raw[1]) % 31 == 0
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
            self._start = b""
        data = raw
        while not self._zlib.eof:
            try:
                piece = self._zlib.decompress(data, PIECE_BYTES)
            except zlib.error:
                raise _DecodingError(
                    f"the model server sent a compressed answer that is not valid {self._encoding}"
                ) from None
            data = self._zlib.unconsumed_tail
            if piece:
                self._given += len(piece)
                if self._given > EXPANSION_ALLOWANCE + MAX_EXPANSION * self._received:
                    raise _DecodingError(TOO_EXPANDED)
                yield piece
            if not data and len(piece) < PIECE_BYTES:
                return  # a full piece may leave output in zlib for input it has taken
