"""HTTP clients shared by every session of a process, one per event loop and server.

Building an ``httpx.AsyncClient`` the default way builds an SSL context and loads
certifi's CA bundle (about 20-40 ms), each time, even for ``http://127.0.0.1``. Here a
client is built lazily, at the first request on a loop, and kept for the later sessions
that talk to the same server on that loop: for an ``http://`` server with a TLS context
that loads no CA bundle (no TLS is spoken; a TLS connection it were asked for anyway
would fail verification rather than pass unchecked), for ``https://`` with one verified
context built once per process.

A client belongs to the loop it was built on, and connections stay in its pool: the
clients of a loop are closed when the loop shuts down (``asyncio.run`` and
``loop.shutdown_asyncgens()`` close them, through a suspended async generator the loop
knows about); a session closing leaves them to the others.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import weakref
from collections.abc import AsyncIterator

import httpx

CONNECT_TIMEOUT_S = 10.0
WRITE_TIMEOUT_S = 30.0
POOL_TIMEOUT_S = 30.0
PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")

_Key = tuple[str, float]  # scheme://host:port, idle timeout (the key travels per request)


class _LoopClients:
    def __init__(self) -> None:
        self.clients: dict[_Key, httpx.AsyncClient] = {}
        self.closer: AsyncIterator[None] | None = None


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = (
    weakref.WeakKeyDictionary()
)
_verified_context: ssl.SSLContext | None = None


def _origin(url: httpx.URL) -> str:
    return f"{url.scheme}://{url.host}:{url.port or ''}"


def tls_context(base_url: str) -> ssl.SSLContext:
    """The TLS context for a client of ``base_url``: verified against the CA bundle for
    ``https://`` (and for ``http://`` through an ``https://`` proxy), built once; a
    context with no CA loaded, which can verify nothing, for plain ``http://``."""
    global _verified_context
    plain = base_url.lower().startswith("http://")
    if plain and not any(
        os.environ.get(v, "").lower().startswith("https://") for v in PROXY_VARIABLES
    ):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies hostnames; trusts no CA
    if _verified_context is None:
        _verified_context = httpx.create_ssl_context()
    return _verified_context


async def _close_at_shutdown(entry: _LoopClients) -> AsyncIterator[None]:
    try:
        yield
    finally:
        clients = list(entry.clients.values())
        entry.clients.clear()
        entry.closer = None
        for client in clients:
            await client.aclose()


async def shared_client(base_url: str, idle_timeout_s: float) -> httpx.AsyncClient:
    """The running loop's client for ``base_url`` (its origin) and this idle timeout."""
    loop = asyncio.get_running_loop()
    entry = _BY_LOOP.get(loop)
    if entry is None:
        entry = _BY_LOOP[loop] = _LoopClients()
    if entry.closer is None:
        entry.closer = _close_at_shutdown(entry)
        await entry.closer.__anext__()  # now the loop finalizes it at shutdown
    key = (_origin(httpx.URL(base_url)), idle_timeout_s)
    client = entry.clients.get(key)
    if client is None or client.is_closed:
        timeout = httpx.Timeout(
            connect=CONNECT_TIMEOUT_S,
            read=idle_timeout_s,
            write=WRITE_TIMEOUT_S,
            pool=POOL_TIMEOUT_S,
        )
        client = httpx.AsyncClient(timeout=timeout, verify=tls_context(base_url))
        entry.clients[key] = client
    return client
