"""The escape suite: a command under ``workspace-write`` / ``never`` tries to change
something outside the workspace or to reach the network, and nothing happens.

Every case runs through the headless runner (``agent-magics exec -s workspace-write -a
never`` driven by the scripted loopback server) and through the orchestrator (the
``exec_command`` handler called directly), once per Linux mechanism (bubblewrap and
Landlock). The escape targets live outside ``/tmp`` and ``$TMPDIR``, which are writable
roots. Each escape is also run without a sandbox to prove that it really changes
something there, so a case cannot pass by failing for another reason.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import pytest

from tests.helpers.sandbox import Arena, Run, run_orchestrated

pytestmark = pytest.mark.slow  # real sandboxes, servers or CLI runs per case

ESCAPES = [
    pytest.param("echo pwned > ../escaped.txt", id="parent-dir"),
    pytest.param("cd .. && echo pwned > escaped.txt", id="cd-parent"),
    pytest.param("echo pwned > {outside}/target.txt", id="absolute-path"),
    pytest.param("echo pwned >> {outside}/target.txt", id="append"),
    pytest.param('echo pwned > "$HOME/escaped.txt"', id="home"),
    pytest.param("echo pwned > out_link/target.txt", id="existing-symlink"),
    pytest.param("ln -s {outside} new_link; echo pwned > new_link/new.txt", id="new-symlink"),
    pytest.param("ln {outside}/target.txt hard; echo pwned > hard", id="hard-link"),
    pytest.param("echo pwned > /proc/self/root{outside}/target.txt", id="proc-root"),
    pytest.param("rm -r {outside}", id="remove-outside"),
    pytest.param("mv {outside}/target.txt moved.txt", id="move-out"),
    pytest.param("mkdir {outside}/new_dir", id="mkdir-outside"),
]

WALLS = (
    "read-only file system",
    "permission denied",
    "operation not permitted",
    "invalid cross-device link",
)


@pytest.mark.parametrize("cmd", ESCAPES)
async def test_escape_is_blocked(run: Run, arena: Arena, cmd: str) -> None:
    before = arena.snapshot()
    output = await run(cmd, "workspace-write")
    assert arena.snapshot() == before
    assert any(wall in output.lower() for wall in WALLS), output  # it ran and hit the wall


@pytest.mark.parametrize("cmd", ESCAPES)
async def test_escape_changes_things_without_a_sandbox(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, cmd: str
) -> None:
    """The control: with full access the same command does change the outside."""
    before = arena.snapshot()
    await run_orchestrated(arena, monkeypatch, "none", arena.fill(cmd), "danger-full-access")
    assert arena.snapshot() != before


@pytest.mark.parametrize(
    ("cmd", "path", "content"),
    [
        pytest.param("echo ok > inside.txt", "inside.txt", "ok\n", id="file"),
        pytest.param("mkdir -p a/b && echo ok > a/b/c.txt", "a/b/c.txt", "ok\n", id="nested"),
        pytest.param("echo more >> victim.txt", "victim.txt", "victim\nmore\n", id="append"),
        pytest.param("echo t > /proc/self/cwd/t.txt", "t.txt", "t\n", id="via-proc"),
        pytest.param("echo ok > src/new.txt", "src/new.txt", "ok\n", id="file-in-folder"),
        pytest.param("mkdir -p src/a/b && mv src/a src/c", "src/c/b", "", id="folders-in-folder"),
    ],
)
async def test_writes_inside_still_work(
    run: Run, arena: Arena, request: Any, cmd: str, path: str, content: str
) -> None:
    """Under Landlock the top level of the workspace (which holds ``.git`` and
    ``.agent_magics``, also while missing) is not granted itself, only its entries: new
    entries there are refused (see ``sandbox/landlock.py``), below them all works."""
    if not cmd.startswith(("echo more", "echo ok > src", "mkdir -p src")):
        known_gap(request, run, "Landlock grants the workspace's entries, not its top level")
    (arena.ws / "src").mkdir()
    before = arena.snapshot()
    await run(cmd, "workspace-write")
    if content:
        assert (arena.ws / path).read_text() == content
    else:
        assert (arena.ws / path).is_dir()
    assert arena.snapshot() == before


async def test_read_only_blocks_writes_inside(run: Run, arena: Arena) -> None:
    before = arena.snapshot()
    output = await run("echo ok > inside.txt; rm victim.txt; mkdir d", "read-only")
    assert not (arena.ws / "inside.txt").exists()
    assert not (arena.ws / "d").exists()
    assert (arena.ws / "victim.txt").read_text() == "victim\n"
    assert arena.snapshot() == before
    assert any(w in output.lower() for w in ("read-only file system", "permission denied"))


def known_gap(request: Any, run: Run, reason: str) -> None:
    """Under Landlock this case is expected to fail (strictly: it must fail)."""
    if run.mechanism == "landlock":
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


async def test_git_folder_stays_read_only(run: Run, arena: Arena) -> None:
    await run("echo pwned > .git/config; rm -r .git", "workspace-write")
    assert (arena.ws / ".git" / "config").read_text() == "[core]\n"


async def test_metadata_outside_is_unchanged(run: Run, arena: Arena, request: Any) -> None:
    known_gap(request, run, "Landlock does not govern chmod, chown or utime")
    before = arena.snapshot()
    await run("chmod 600 {outside}/target.txt", "workspace-write")
    assert arena.snapshot() == before


class Listener:
    """A TCP or UDP socket on 127.0.0.1 that counts who reached it."""

    def __init__(self, kind: int) -> None:
        self.sock = socket.socket(socket.AF_INET, kind)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.reached = 0
        if kind == socket.SOCK_STREAM:
            self.sock.listen()
            threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        try:
            while True:
                conn, _ = self.sock.accept()
                self.reached += 1
                conn.close()
        except OSError:
            return

    def count(self) -> int:
        if self.sock.type == socket.SOCK_DGRAM:
            self.sock.setblocking(False)
            try:
                while self.sock.recv(64):
                    self.reached += 1
            except BlockingIOError:
                pass
        return self.reached


NETWORK = [
    pytest.param(
        socket.SOCK_STREAM,
        "{python} -c \"import socket; socket.create_connection(('127.0.0.1', PORT), 5)\"",
        id="tcp-connect",
    ),
    pytest.param(
        socket.SOCK_DGRAM,
        "{python} -c \"import socket; socket.socket(2, 2).sendto(b'x', ('127.0.0.1', PORT))\"",
        id="udp-send",
    ),
]


@pytest.mark.parametrize(("kind", "cmd"), NETWORK)
async def test_network_is_cut(run: Run, arena: Arena, kind: int, cmd: str) -> None:
    listener = Listener(kind)
    try:
        await run(cmd.replace("PORT", str(listener.port)), "workspace-write")
        await asyncio.sleep(0.2)
        assert listener.count() == 0
    finally:
        listener.sock.close()


@pytest.mark.parametrize(("kind", "cmd"), NETWORK)
async def test_network_works_without_a_sandbox(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, kind: int, cmd: str
) -> None:
    listener = Listener(kind)
    try:
        full = "danger-full-access"
        port = str(listener.port)
        await run_orchestrated(
            arena, monkeypatch, "none", arena.fill(cmd).replace("PORT", port), full
        )
        for _ in range(50):
            if listener.count():
                break
            await asyncio.sleep(0.05)
        assert listener.count() == 1
    finally:
        listener.sock.close()
