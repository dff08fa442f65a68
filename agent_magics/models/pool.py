"""The HTTP client every model server is spoken to through: one ``httpx.AsyncClient``
per event loop, shared by the sessions of a process.

httpx's connections belong to the loop they were opened on, so a loop (the kernel's,
or the one ``asyncio.run`` makes for ``agent-magics exec``) gets its own clients at its
first request, and keeps them for every later session and server: one for plain
``http://`` servers, one for the rest. The second verifies TLS with one context built
once per process, at the first request that may speak TLS (building it loads certifi's
CA bundle, 20-40 ms); the first has a context that loads no CA and trusts no one (httpx
wants one, no TLS is spoken). Both honour the proxy variables (``HTTPS_PROXY``,
``NO_PROXY``...) as they were when they were built: a change to them gets the loop new
clients.

Timeouts travel with each request (a session's idle timeout is its own), and
:func:`post` also bounds the time from the start of a request to its answer's complete
head by the idle timeout (:class:`_HeadTimeout`): a per-read timeout alone would let a
server that trickles a byte at a time, or sends interim ``1xx`` answers forever, hold a
turn for good.

The clients of a loop are closed when the loop shuts down (``asyncio.run`` and
``loop.shutdown_asyncgens()`` close them, through a suspended async generator the loop
knows about); a session closing leaves them to the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import weakref
from collections.abc import AsyncIterator

import httpx

CONNECT_TIMEOUT_S = 10.0
WRITE_TIMEOUT_S = 30.0
POOL_TIMEOUT_S = 30.0
PROXY_VARIABLES = frozenset({"http_proxy", "https_proxy", "all_proxy", "no_proxy"})

_ProxyKey = tuple[tuple[str, str], ...]  # the proxy variables a client was built under


class _HeadTimeout(Exception):
    """The answer's status line and headers were not complete ``seconds`` after the
    request began, however the server spent the time."""

    def __init__(self, seconds: float) -> None:
        self.detail = f"no complete response headers within {seconds:g} s"
        super().__init__(self.detail)


class _LoopClients:
    def __init__(self) -> None:
        self.clients: dict[tuple[_ProxyKey, bool], httpx.AsyncClient] = {}  # and TLS?
        self.closer: AsyncIterator[None] | None = None


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = (
    weakref.WeakKeyDictionary()
)
_verified_context: ssl.SSLContext | None = None
_plain_context: ssl.SSLContext | None = None


def verified_context() -> ssl.SSLContext:
    """httpx's default context, verified against certifi's CA bundle, built once."""
    global _verified_context
    if _verified_context is None:
        _verified_context = httpx.create_ssl_context()
    return _verified_context


def tls_context(base_url: str) -> ssl.SSLContext:
    """The TLS context for a client that speaks only to ``base_url``: the verified one,
    or for plain ``http://`` (no proxy that could speak TLS) a context with no CA
    loaded, which verifies hostnames and trusts no one (one per process)."""
    global _plain_context
    if _may_speak_tls(base_url):
        return verified_context()
    if _plain_context is None:
        _plain_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return _plain_context


def _may_speak_tls(base_url: str) -> bool:
    if not base_url.lower().startswith("http://"):
        return True
    proxies = [v for k, v in os.environ.items() if k.lower() in PROXY_VARIABLES and v]
    return any(v.lower().startswith("https://") for v in proxies)


def _proxy_key() -> _ProxyKey:
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.lower() in PROXY_VARIABLES))


async def _close_at_shutdown(entry: _LoopClients) -> AsyncIterator[None]:
    try:
        yield
    finally:
        clients = list(entry.clients.values())
        entry.clients.clear()
        entry.closer = None
        for client in clients:
            await client.aclose()


async def shared_client(url: str) -> httpx.AsyncClient:
    """The running loop's client for ``url`` (built under the current proxy variables,
    with :func:`tls_context`)."""
    loop = asyncio.get_running_loop()
    entry = _BY_LOOP.get(loop)
    if entry is None:
        entry = _BY_LOOP[loop] = _LoopClients()
    if entry.closer is None:
        entry.closer = _close_at_shutdown(entry)
        await entry.closer.__anext__()  # now the loop finalizes it at shutdown
    key = (_proxy_key(), _may_speak_tls(url))
    client = entry.clients.get(key)
    if client is None or client.is_closed:
        client = entry.clients[key] = httpx.AsyncClient(verify=tls_context(url))
    return client


@contextlib.asynccontextmanager
async def post(
    url: str, *, content: bytes, headers: dict[str, str], idle_timeout_s: float
) -> AsyncIterator[httpx.Response]:
    """POST ``content`` and yield the answer, its body unread; each read waits at most
    ``idle_timeout_s``, and so does the whole of the answer's head."""
    client = await shared_client(url)
    timeout = httpx.Timeout(
        connect=CONNECT_TIMEOUT_S, read=idle_timeout_s, write=WRITE_TIMEOUT_S, pool=POOL_TIMEOUT_S
    )
    request = client.build_request("POST", url, content=content, headers=headers, timeout=timeout)
    try:
        async with asyncio.timeout(idle_timeout_s):
            response = await client.send(request, stream=True)
    except TimeoutError:
        raise _HeadTimeout(idle_timeout_s) from None
    try:
        yield response
    finally:
        await response.aclose()
