"""The process's shared HTTP clients: one per loop and server, TLS set up only for https."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from agent_magics.config import SessionConfig
from agent_magics.models.pool import shared_client, tls_context
from agent_magics.models.wire import HttpClient
from agent_magics.session import Session
from agent_magics.testing import ScriptedResponsesServer, message

KEY = "sk-pool-test-key-1234567890"


def _session(tmp_path: Path, base_url: str) -> Session:
    return Session(
        SessionConfig(
            model="m", base_url=base_url, cwd=tmp_path, api_key=KEY, shell_type="disabled"
        )
    )


def test_plain_http_gets_a_context_that_trusts_no_one() -> None:
    """For http:// no CA bundle is read; the context it gets still verifies, so a TLS
    connection nobody expected fails instead of passing unchecked."""
    plain = tls_context("http://127.0.0.1:8000/v1")
    assert plain.cert_store_stats()["x509_ca"] == 0
    assert plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname


def test_https_gets_one_verified_context_per_process() -> None:
    first = tls_context("https://api.example.com/v1")
    assert first.cert_store_stats()["x509_ca"] > 0
    assert first.verify_mode == ssl.CERT_REQUIRED
    assert tls_context("https://other.example.com/v1") is first


def test_http_through_an_https_proxy_keeps_verification(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "https://proxy.example.com:3128")
    assert tls_context("http://127.0.0.1:8000/v1").cert_store_stats()["x509_ca"] > 0


def test_sessions_share_a_client_that_closes_with_its_loop(tmp_path: Path) -> None:
    """A session closing leaves the shared client to the next session; the loop's
    shutdown closes it."""
    script = [[message("one")], [message("two")]]
    seen: list[HttpClient] = []

    async def two_sessions(base_url: str) -> None:
        for expected in ("one", "two"):
            session = _session(tmp_path, base_url)
            try:
                assert (await session.run_turn("hi")).final_text == expected
            finally:
                await session.aclose()
            seen.append(await shared_client(base_url, session.config.stream_idle_timeout_s))
        assert not seen[0].is_closed

    with ScriptedResponsesServer(script) as server:
        asyncio.run(two_sessions(server.base_url))
        assert len(server.requests) == 2
    assert seen[0] is seen[1]
    assert seen[0].is_closed


def test_a_loop_gets_its_own_client(tmp_path: Path) -> None:
    async def client() -> HttpClient:
        return await shared_client("http://127.0.0.1:9/v1", 300.0)

    first, second = asyncio.run(client()), asyncio.run(client())
    assert first is not second and first.is_closed and second.is_closed


def test_a_turn_over_http_loads_no_certificates_and_no_httpx(tmp_path: Path) -> None:
    """In a fresh process, a whole turn against an http:// server loads no CA bundle, and
    neither httpx nor anyio (h11 over asyncio speaks plain HTTP)."""
    code = (
        "import asyncio, ssl, sys\n"
        "loads = []\n"
        "def counting(real):\n"
        "    def load(self, *args, **kwargs):\n"
        "        loads.append(args or kwargs)\n"
        "        return real(self, *args, **kwargs)\n"
        "    return load\n"
        "for name in ('load_verify_locations', 'load_default_certs'):\n"
        "    setattr(ssl.SSLContext, name, counting(getattr(ssl.SSLContext, name)))\n"
        "from pathlib import Path\n"
        "from agent_magics.config import SessionConfig\n"
        "from agent_magics.session import Session\n"
        "from agent_magics.testing import ScriptedResponsesServer, message\n"
        "async def main(url):\n"
        f"    s = Session(SessionConfig(model='m', base_url=url, cwd=Path({str(tmp_path)!r}),"
        " api_key='k', shell_type='disabled'))\n"
        "    print((await s.run_turn('hi')).final_text)\n"
        "    await s.aclose()\n"
        "with ScriptedResponsesServer([[message('fine')]]) as server:\n"
        "    asyncio.run(main(server.base_url))\n"
        "print(len(loads), *(m in sys.modules for m in ('httpx', 'httpcore', 'anyio')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["fine", "0", "False", "False", "False"]


def test_https_and_proxied_servers_get_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    async def kinds() -> list[str]:
        plain = await shared_client("http://127.0.0.1:9/v1", 300.0)
        tls = await shared_client("https://127.0.0.1:9/v1", 300.0)
        monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
        proxied = await shared_client("http://127.0.0.2:9/v1", 300.0)
        return [type(c).__name__ for c in (plain, tls, proxied)]

    monkeypatch.delenv("HTTP_PROXY", raising=False)
    monkeypatch.delenv("ALL_PROXY", raising=False)
    monkeypatch.delenv("all_proxy", raising=False)
    assert asyncio.run(kinds()) == ["PlainClient", "HttpxClient", "HttpxClient"]


def test_a_turn_goes_through_the_http_proxy_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model server's name does not resolve: only the proxy from HTTP_PROXY, the
    scripted server, can answer (it gets the request in absolute form)."""
    with ScriptedResponsesServer([[message("via the proxy")]]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.base_url.rsplit("/", 1)[0])
        session = _session(tmp_path, "http://model.invalid/v1")

        async def turn() -> str:
            try:
                return (await session.run_turn("hi")).final_text
            finally:
                await session.aclose()

        assert asyncio.run(turn()) == "via the proxy"
        assert len(proxy.requests) == 1
