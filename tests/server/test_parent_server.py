"""Whether a server's URL is served by a given process, read from Linux's /proc: real
listening sockets of this process on 127.0.0.1 and on every address."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator

import pytest

from agent_magics.server.parent_server import listening, served_by

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@pytest.fixture
def sockets() -> Iterator[tuple[int, int]]:
    """A socket listening on 127.0.0.1 and one on every address; their ports."""
    local, everywhere = socket.socket(), socket.socket()
    local.bind(("127.0.0.1", 0))
    everywhere.bind(("0.0.0.0", 0))
    for s in (local, everywhere):
        s.listen()
    try:
        yield local.getsockname()[1], everywhere.getsockname()[1]
    finally:
        local.close()
        everywhere.close()


def test_a_url_is_believed_only_where_the_process_listens(sockets: tuple[int, int]) -> None:
    local, everywhere = sockets
    mine = listening(os.getpid())
    assert mine is not None and ("127.0.0.1", local) in mine
    assert (
        served_by(f"http://127.0.0.1:{local}/user/x/", mine) == f"http://127.0.0.1:{local}/user/x/"
    )
    assert served_by(f"http://localhost:{local}/", mine) == f"http://127.0.0.1:{local}/"
    assert served_by(f"http://127.0.0.1:{everywhere}/", mine) == f"http://127.0.0.1:{everywhere}/"
    ports = {port for _, port in mine}
    other = next(p for p in range(local + 1, 65536) if p not in ports)
    assert served_by(f"http://127.0.0.1:{other}/", mine) is None
    assert served_by(f"http://192.0.2.1:{everywhere}/", mine) is None  # not this machine
    assert served_by(f"http://192.0.2.1:{local}/", mine) is None
    assert served_by("http://no-such-host.invalid:8888/", mine) is None
    assert served_by(f"https://127.0.0.1:{local}/", mine) == f"https://127.0.0.1:{local}/"
    assert listening(os.getppid()) is not None


def test_an_ipv6_wildcard_does_not_vouch_for_an_ipv4_address() -> None:
    """Tornado binds a server's IPv6 sockets IPv6-only: on ``::``, the IPv4 address at
    that port may be another user's socket, which would get the token."""
    port = 48_123
    assert served_by(f"http://127.0.0.1:{port}/", {("::", port)}) is None
    assert (
        served_by(f"http://127.0.0.1:{port}/", {("0.0.0.0", port)}) == f"http://127.0.0.1:{port}/"
    )
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return  # no IPv6 here: the IPv6 side cannot be tried
    assert served_by(f"http://[::1]:{port}/", {("::", port)}) == f"http://[::1]:{port}/"
