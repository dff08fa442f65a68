"""HTTP clients shared by every session of a process, one per event loop and server.

A client is built lazily, at the first request on a loop, and kept for the later
sessions that talk to the same server on that loop. A plain ``http://`` server with no
proxy in between gets :class:`~agent_magics.models.wire.PlainClient` (h11 over asyncio:
no httpx to import, no TLS). Every other gets an ``httpx.AsyncClient``
(:mod:`agent_magics.models.httpx_client`), which honours the proxy variables: for
``https://`` with one verified TLS context built once per process (building one loads
certifi's CA bundle, 20-40 ms), for ``http://`` through an ``http://`` proxy with a
context that loads no CA bundle (no TLS is spoken; a TLS connection it were asked for
anyway would fail verification rather than pass unchecked).

Both wait for an answer's head at most the idle timeout from the start of the request
(a server slow to begin an answer is given as long as one slow between two events),
and read each byte at most that long after the last.

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
from urllib.parse import SplitResult, urlsplit

from agent_magics.models.wire import HttpClient, PlainClient

CONNECT_TIMEOUT_S = 10.0
WRITE_TIMEOUT_S = 30.0
POOL_TIMEOUT_S = 30.0

_Key = tuple[str, float]  # scheme://host:port, idle timeout (the key travels per request)


class _LoopClients:
    def __init__(self) -> None:
        self.clients: dict[_Key, HttpClient] = {}
        self.closer: AsyncIterator[None] | None = None


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = (
    weakref.WeakKeyDictionary()
)
_verified_context: ssl.SSLContext | None = None


def _origin(url: SplitResult) -> str:
    return f"{url.scheme}://{url.netloc}".lower()


def _proxies(base_url: str) -> list[str]:
    """The proxy variables' values that could apply to ``base_url`` (any case of
    ``HTTP_PROXY``/``HTTPS_PROXY`` for its scheme, ``ALL_PROXY``); with any, httpx
    decides, ``NO_PROXY`` included, as it always did."""
    scheme = "https" if base_url.lower().startswith("https:") else "http"
    names = (f"{scheme}_proxy", "all_proxy")
    return [v for k, v in os.environ.items() if v and k.lower() in names]


def tls_context(base_url: str) -> ssl.SSLContext:
    """The TLS context for a client of ``base_url``: verified against the CA bundle for
    ``https://`` (and for ``http://`` through an ``https://`` proxy), built once; a
    context with no CA loaded, which can verify nothing, for plain ``http://``."""
    global _verified_context
    plain = base_url.lower().startswith("http://")
    if plain and not any(v.lower().startswith("https://") for v in _proxies(base_url)):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies hostnames; trusts no CA
    if _verified_context is None:
        from agent_magics.models.httpx_client import verified_context

        _verified_context = verified_context()
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


async def shared_client(base_url: str, idle_timeout_s: float) -> HttpClient:
    """The running loop's client for ``base_url`` (its origin) and this idle timeout."""
    loop = asyncio.get_running_loop()
    entry = _BY_LOOP.get(loop)
    if entry is None:
        entry = _BY_LOOP[loop] = _LoopClients()
    if entry.closer is None:
        entry.closer = _close_at_shutdown(entry)
        await entry.closer.__anext__()  # now the loop finalizes it at shutdown
    url = urlsplit(base_url)
    key = (_origin(url), idle_timeout_s)
    client = entry.clients.get(key)
    if client is None or client.is_closed:
        client = entry.clients[key] = _client(base_url, url, idle_timeout_s)
    return client


def _client(base_url: str, url: SplitResult, idle_timeout_s: float) -> HttpClient:
    if url.scheme.lower() == "http" and "@" not in url.netloc and not _proxies(base_url):
        return PlainClient(
            url,
            connect_s=CONNECT_TIMEOUT_S,
            read_s=idle_timeout_s,
            write_s=WRITE_TIMEOUT_S,
            head_s=idle_timeout_s,
        )
    from agent_magics.models.httpx_client import HttpxClient

    return HttpxClient(
        connect_s=CONNECT_TIMEOUT_S,
        read_s=idle_timeout_s,
        write_s=WRITE_TIMEOUT_S,
        pool_s=POOL_TIMEOUT_S,
        head_s=idle_timeout_s,
        tls=tls_context(base_url),
    )
