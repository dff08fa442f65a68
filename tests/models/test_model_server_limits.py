"""A model server that compresses, trickles or stalls gets a clear error in bounded
time and memory, on both paths of the HTTP client: straight to the server, and
through ``HTTP_PROXY`` (which the test server also plays). Each server is real, on
127.0.0.1, answering with exact bytes."""

from __future__ import annotations

import asyncio
import functools
import gzip
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agent_magics.errors import ConnectionFailed, ModelError
from agent_magics.models.base import ItemDone, ModelRequest, StreamFailed
from agent_magics.models.encoding import PIECE_BYTES, Inflater
from agent_magics.models.responses import ResponsesClient
from tests.helpers.raw_server import (
    RawServer,
    answer_text,
    gzip_bomb,
    gzipped,
    pack,
    repeat,
    stall,
    trickle,
)

IDLE_S = 0.5  # the stream idle timeout, which also bounds the time to headers
HANG_S = 15.0  # the test gives up here: far past every bound, so reaching it is a hang
SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
BOMB_BYTES = 1 << 30  # of blank lines, in about 1 MB of gzip
PATHS = ["direct", "proxied"]
ENCODINGS = ["gzip", "deflate", "raw-deflate"]


@functools.cache
def bomb() -> bytes:
    """The 1 GiB bomb's gzip (about 1 MB; making it takes seconds, so once, and only
    for the tests that use it, not when the module is collected)."""
    return gzip_bomb(BOMB_BYTES)


def base_url(server: RawServer, path: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The URL a client of ``path`` is given: the server itself, or a name that does
    not resolve, reached through the server as the HTTP proxy."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    if path == "direct":
        return server.base_url
    monkeypatch.setenv("HTTP_PROXY", server.origin)
    return "http://model.invalid/v1"


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def answer(url: str) -> list[object]:
    """One request's events, the stream's own bounds small; no retry."""
    client = ResponsesClient(url, "sk-limits", request_max_retries=0, stream_idle_timeout_s=IDLE_S)
    request = ModelRequest(model="m", instructions="", input=[], tools=[])

    async def events() -> list[object]:
        return [e async for e in client.stream(request)]

    try:
        return await asyncio.wait_for(events(), HANG_S)
    finally:
        await client.aclose()


async def failure(url: str) -> Exception:
    with pytest.raises((StreamFailed, ConnectionFailed)) as caught:
        await answer(url)
    return caught.value


async def test_the_request_asks_for_an_uncompressed_answer(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def reply(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(SSE_HEAD + answer_text("plain"))

    with RawServer(reply) as server:
        await answer(base_url(server, path, monkeypatch))
    lines = server.heads[0].lower().split(b"\r\n")
    assert [line for line in lines if line.startswith(b"accept-encoding:")] == [
        b"accept-encoding: identity"
    ]


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("length", [True, False], ids=["sized", "until-close"])
async def test_a_compressed_answer_sent_anyway_is_read(
    path: str, length: bool, encoding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reply = gzipped(answer_text("squeezed"), length=length, encoding=encoding)
    with RawServer(reply) as server:
        events = await answer(base_url(server, path, monkeypatch))
    texts = [e.item["content"][0]["text"] for e in events if isinstance(e, ItemDone)]
    assert texts == ["squeezed"]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_inflating_a_byte_at_a_time_gives_the_same_bytes(encoding: str) -> None:
    text = answer_text("spread thin " * 5000)
    inflater = Inflater(encoding.removeprefix("raw-"))
    packed = pack(text, encoding)
    pieces = [piece for i in range(len(packed)) for piece in inflater.feed(packed[i : i + 1])]
    assert b"".join(pieces) == text


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_inflating_at_once_gives_pieces_a_read_could(encoding: str) -> None:
    text = answer_text("at once " * 100_000)
    pieces = list(Inflater(encoding.removeprefix("raw-")).feed(pack(text, encoding)))
    assert b"".join(pieces) == text
    assert len(pieces) > 1 and max(map(len, pieces)) == PIECE_BYTES


async def test_a_gzip_bomb_ends_the_stream(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """1 MB of gzip that would be 1 GiB of blank lines: decoded a network read's worth
    at a time and stopped once it grows past its bound, not retried."""
    with RawServer(gzipped(bomb(), packed=True)) as server:
        error = await failure(base_url(server, path, monkeypatch))
    assert isinstance(error, StreamFailed) and not error.retryable
    assert error.message == (
        "the model server sent a compressed answer that grows more than 100-fold, "
        "so the stream was stopped"
    )


async def test_an_encoding_nobody_can_read_is_refused(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = SSE_HEAD.replace(b"\r\n\r\n", b"\r\ncontent-encoding: br\r\n\r\n")

    def reply(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(head + b"\x1b\x00\x00")

    with RawServer(reply) as server:
        error = await failure(base_url(server, path, monkeypatch))
    assert isinstance(error, StreamFailed) and not error.retryable
    assert (
        error.message == "the model server sent its answer in an encoding it was not asked for (br)"
    )


HEAD_FAULTS = {
    # a header byte every 0.05 s: every read is quick, the headers never complete
    "trickled": trickle(b"HTTP/1.1 200 OK\r\nx-slow: ", b"a", 0.05),
    # a 100 Continue every 0.2 s, far fewer than the count allowed before the deadline
    "slow-interim": repeat(CONTINUE, 0.2),
    # the status line and a header, then a byte of a second one every 0.2 s
    "unfinished": trickle(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n", b"x", 0.2),
}


@pytest.mark.parametrize("fault", list(HEAD_FAULTS))
async def test_headers_that_never_complete_end_at_the_deadline(
    path: str, fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The time to a complete head is one deadline (the idle timeout) from the start of
    the request, however the server spends it; the failure is retried at the turn's
    level as Codex retries a timeout."""
    with RawServer(HEAD_FAULTS[fault]) as server:
        error = await failure(base_url(server, path, monkeypatch))
    assert isinstance(error, StreamFailed) and error.retryable
    assert error.message == "the model server sent no complete response headers within 0.5 s"


async def test_a_flood_of_interim_responses_ends_at_the_deadline(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interim answers as fast as the server can send them: httpx skips them, until the
    deadline above."""
    with RawServer(repeat(CONTINUE, 0)) as server:
        error = await failure(base_url(server, path, monkeypatch))
    assert isinstance(error, StreamFailed) and error.retryable
    assert error.message == "the model server sent no complete response headers within 0.5 s"


async def test_a_trickled_body_without_events_ends_at_the_idle_timeout(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The idle timer runs per event, as Codex's: bytes that never make one (a comment
    dripped a byte at a time) do not hold it off."""
    with RawServer(trickle(SSE_HEAD, b": thinking\n", 0.05)) as server:
        error = await failure(base_url(server, path, monkeypatch))
    assert isinstance(error, StreamFailed) and error.retryable
    assert error.message == "idle timeout waiting for SSE"


async def test_a_silent_server_still_ends_at_the_deadline(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RawServer(stall(b"HTTP/1.1 200 OK\r\n")) as server:
        error = await failure(base_url(server, path, monkeypatch))
    assert isinstance(error, StreamFailed) and error.retryable
    assert error.message == "the model server sent no complete response headers within 0.5 s"


PEAK = """
import atexit, runpy, sys
def peak(path=sys.argv.pop(1)):
    with open("/proc/self/status") as status, open(path, "w") as out:
        out.write(next(line for line in status if line.startswith("VmHWM:")).split()[1])
atexit.register(peak)
runpy.run_module("agent_magics", run_name="__main__", alter_sys=True)
"""


def exec_cli(url: str, cwd: Path, proxy: str | None) -> tuple[int, str, str, int]:
    """``agent-magics exec`` for one turn: exit status, stdout, stderr and the peak RSS
    of the child's own program in KiB (its ``VmHWM`` at exit: ``wait4`` would count
    the memory of the process it was started from)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env = {k: v for k, v in env.items() if k.lower() not in PROXY_VARIABLES}
    env |= {"HOME": str(cwd), "OPENAI_API_KEY": "sk-limits"}
    if proxy:
        env["HTTP_PROXY"] = proxy
    peak = cwd / "peak-rss"
    argv = [sys.executable, "-c", PEAK, str(peak), "exec", "--provider", "responses"]
    argv += ["--base-url", url, "-m", "m", "-a", "never", "-C", str(cwd)]
    argv += ["-c", f"stream_idle_timeout_s={IDLE_S}", "-c", "stream_max_retries=0"]
    argv += ["-c", "request_max_retries=0", "go"]
    try:
        done = subprocess.run(
            argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60 + HANG_S,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("agent-magics exec did not end: the turn hangs")
    return done.returncode, done.stdout, done.stderr, int(peak.read_text())


PROXY_VARIABLES = {"no_proxy", "all_proxy", "http_proxy", "https_proxy"}
HEAD_SENTENCE = "the model server sent no complete response headers within 0.5 s."
BOMB_SENTENCE = (
    "the model server sent a compressed answer that grows more than 100-fold, "
    "so the stream was stopped."
)
CLI_FAULTS = {
    "gzip-bomb": (None, BOMB_SENTENCE),  # made when a test asks for it: bomb()
    "trickled-head": (HEAD_FAULTS["trickled"], HEAD_SENTENCE),
    "slow-interim": (HEAD_FAULTS["slow-interim"], HEAD_SENTENCE),
    "interim-flood": (repeat(CONTINUE, 0), HEAD_SENTENCE),
}
MAX_RSS_KIB = 300 << 10  # a turn's process stays far below this; the bomb once took 1.5 GB


@pytest.mark.slow
@pytest.mark.parametrize("fault", list(CLI_FAULTS))
def test_one_exec_turn_ends_with_one_sentence(tmp_path: Path, path: str, fault: str) -> None:
    reply, sentence = CLI_FAULTS[fault]
    reply = reply or gzipped(bomb(), packed=True)
    with RawServer(reply) as server:
        if path == "direct":
            code, out, err, rss_kib = exec_cli(server.base_url, tmp_path, None)
        else:
            code, out, err, rss_kib = exec_cli("http://model.invalid/v1", tmp_path, server.origin)
    # a bomb would come again (1: someone must fix the server); a slow head may not (75:
    # it failed after the retries, none here, and a job may try again later)
    assert code == (1 if fault == "gzip-bomb" else 75), err
    session, _, said = err.partition("\n")
    assert session.startswith("session: ")
    assert said == f"agent-magics: The model's answer failed: {sentence}\n"
    assert out == ""
    assert rss_kib < MAX_RSS_KIB


async def test_a_compressed_error_answer_is_read_for_its_message(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    packed = gzip.compress(b'{"error": {"message": "squeezed out"}}')
    head = b"HTTP/1.1 400 Bad Request\r\ncontent-encoding: gzip\r\n"
    head += b"content-length: %d\r\nconnection: close\r\n\r\n" % len(packed)

    def reply(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(head + packed)

    with RawServer(reply) as server, pytest.raises(ModelError) as caught:
        await answer(base_url(server, path, monkeypatch))
    assert str(caught.value) == "The model server rejected the request (HTTP 400): squeezed out"


async def test_an_odd_encoding_name_is_not_quoted(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header's words (which may carry anything, the API key the server was sent
    included) reach no sentence unless they look like an encoding's name."""
    head = SSE_HEAD.replace(b"\r\n\r\n", b"\r\ncontent-encoding: Bearer sk-limits\r\n\r\n")

    def reply(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(head + b"x")

    with RawServer(reply) as server:
        error = await failure(base_url(server, path, monkeypatch))
    assert isinstance(error, StreamFailed)
    assert error.message == "the model server sent its answer in an encoding it was not asked for"
