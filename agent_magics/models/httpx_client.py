"""httpx behind the model clients' small HTTP interface, for ``https://`` and proxies.

Imported only when a session talks to such a server: httpx and its anyio backend take
some 75 ms to load and set up, which a plain ``http://`` server does without
(:mod:`agent_magics.models.wire`). Its errors come out as that module's, named as
httpx names them. The body is handed on as it came (httpx would inflate a compressed
one in a single piece as large as it grows: :mod:`agent_magics.models.encoding` does it
within bounds), and the answer's head is awaited under one deadline, as the plain
client awaits it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Iterator

import httpx

from agent_magics.models import wire


class HttpxResponse:
    __slots__ = ("_response", "headers", "reason_phrase", "status_code")

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status_code = response.status_code
        self.reason_phrase = response.reason_phrase
        self.headers = {k.lower(): v for k, v in response.headers.items()}

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        with _translated():
            async for chunk in self._response.aiter_raw():
                yield chunk


class HttpxClient:
    """One ``httpx.AsyncClient`` with these timeouts and TLS context, environment
    proxies honoured (``HTTPS_PROXY``, ``NO_PROXY``...); ``head_s`` bounds the time from
    the start of a request to its answer's complete head."""

    def __init__(
        self,
        *,
        connect_s: float,
        read_s: float,
        write_s: float,
        pool_s: float,
        head_s: float,
        tls: ssl.SSLContext,
    ) -> None:
        timeout = httpx.Timeout(connect=connect_s, read=read_s, write=write_s, pool=pool_s)
        self._client = httpx.AsyncClient(timeout=timeout, verify=tls)
        self._head_s = head_s

    @property
    def is_closed(self) -> bool:
        return self._client.is_closed

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, url: str, *, content: bytes, headers: dict[str, str]
    ) -> AsyncIterator[HttpxResponse]:
        request = self._client.build_request(method, url, content=content, headers=headers)
        with _translated():
            try:
                async with asyncio.timeout(self._head_s):
                    response = await self._client.send(request, stream=True)
            except TimeoutError:
                raise wire.HeadTimeout(self._head_s) from None
            try:
                yield HttpxResponse(response)
            finally:
                await response.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()


def verified_context() -> ssl.SSLContext:
    """httpx's default context: verified against certifi's CA bundle."""
    return httpx.create_ssl_context()


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except httpx.TransportError as exc:
        raise wire.failure(type(exc).__name__, str(exc)) from exc
