"""The process's shared HTTP client: one per loop for every server, TLS set up once."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import httpx
import pytest

from agent_magics.models.pool import shared_client, tls_context
from agent_magics.testing import ScriptedResponsesServer, message
from tests.helpers.sessions import session_for

PLAIN = "http://127.0.0.1:8000/v1"


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
    seen: list[httpx.AsyncClient] = []

    async def two_sessions(base_url: str) -> None:
        for expected in ("one", "two"):
            session = session_for(tmp_path, base_url)
            try:
                assert (await session.run_turn("hi")).final_text == expected
            finally:
                await session.aclose()
            seen.append(await shared_client(base_url))
        assert not seen[0].is_closed

    with ScriptedResponsesServer(script) as server:
        asyncio.run(two_sessions(server.base_url))
        assert len(server.requests) == 2
    assert seen[0] is seen[1]
    assert seen[0].is_closed


def test_a_loop_gets_its_own_client() -> None:
    first, second = asyncio.run(shared_client(PLAIN)), asyncio.run(shared_client(PLAIN))
    assert first is not second and first.is_closed and second.is_closed


def test_plain_http_servers_share_a_client_apart_from_tls_ones() -> None:
    """Plain servers get a client whose context reads no CA bundle: that client is never
    handed a URL that could speak TLS."""

    async def clients() -> list[httpx.AsyncClient]:
        urls = [PLAIN, "http://localhost:1234/v1", "https://a.example/v1", "HTTPS://b.example"]
        return [await shared_client(url) for url in urls]

    plain, other_plain, tls, other_tls = asyncio.run(clients())
    assert plain is other_plain and tls is other_tls and plain is not tls


def test_a_change_to_the_proxy_variables_gets_a_new_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """httpx reads the proxy variables when a client is built: one set after the first
    turn is honoured by the next."""

    async def clients() -> list[httpx.AsyncClient]:
        before = await shared_client(PLAIN)
        monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
        return [before, await shared_client(PLAIN), await shared_client(PLAIN)]

    monkeypatch.delenv("https_proxy", raising=False)
    before, after, again = asyncio.run(clients())
    assert before is not after and after is again


def test_a_turn_goes_through_the_http_proxy_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model server's name does not resolve: only the proxy from HTTP_PROXY, the
    scripted server, can answer (it gets the request in absolute form)."""
    with ScriptedResponsesServer([[message("via the proxy")]]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.base_url.rsplit("/", 1)[0])
        session = session_for(tmp_path, "http://model.invalid/v1")

        async def turn() -> str:
            try:
                return (await session.run_turn("hi")).final_text
            finally:
                await session.aclose()

        assert asyncio.run(turn()) == "via the proxy"
        assert len(proxy.requests) == 1
