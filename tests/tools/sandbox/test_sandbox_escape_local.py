"""The escape suite, local part: with the network off, a sandboxed command tries to talk
to a daemon through a Unix socket file, to plant project settings or git hooks that a
later, unsandboxed run would obey, to read the agent's API key from ``/proc``, and to
leave a process behind with ``setsid``. Nothing of it works.

Like :mod:`tests.tools.sandbox.test_sandbox_escape`, every case runs through the headless runner and
the orchestrator, once per Linux mechanism, and each attack also runs without a sandbox
to prove that it really does something there.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.sandbox import SandboxSpec
from agent_magics.tools.unified_exec.process import ExecProcess
from tests.helpers.paths import ROOT
from tests.helpers.sandbox import (
    KEY,
    LINUX_MECHANISMS,
    Arena,
    Run,
    require_mechanism,
    run_cli,
    run_orchestrated,
    sleepers,
)

pytestmark = pytest.mark.slow  # real sandboxes, servers or CLI runs per case


class UnixListener:
    """A listening Unix socket (stream or datagram) outside every writable root that
    counts the connections and datagrams that reached it."""

    def __init__(self, folder: Path, kind: int) -> None:
        self.path = folder / f"daemon-{kind}.sock"
        self.sock = socket.socket(socket.AF_UNIX, kind)
        self.sock.bind(str(self.path))
        self.reached = 0
        if kind != socket.SOCK_DGRAM:
            self.sock.listen()
        threading.Thread(target=self._serve, args=(kind,), daemon=True).start()

    def _serve(self, kind: int) -> None:
        try:
            while True:
                if kind != socket.SOCK_DGRAM:
                    conn, _ = self.sock.accept()
                    conn.close()
                else:
                    self.sock.recv(64)
                self.reached += 1
        except OSError:
            return

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def daemon_folder(arena: Arena) -> Path:
    """Where the daemons listen: outside the workspace, ``/tmp`` and ``$TMPDIR``."""
    folder = arena.root / "run"
    folder.mkdir()
    return folder


CONNECT = "{python} -c \"import socket; socket.socket(1, KIND).connect('PATH'); print('linked')\""
SENDTO = "{python} -c \"import socket; socket.socket(1, 2).sendto(b'x', 'PATH'); print('linked')\""
SENDMSG = (
    "{python} -c \"import socket; socket.socket(1, 2).sendmsg([b'x'], [], 0, 'PATH'); "
    "print('linked')\""
)
UNIX_ESCAPES = [
    pytest.param(socket.SOCK_STREAM, CONNECT.replace("KIND", "1"), id="python-stream"),
    pytest.param(socket.SOCK_SEQPACKET, CONNECT.replace("KIND", "5"), id="python-seqpacket"),
    pytest.param(socket.SOCK_DGRAM, SENDTO, id="python-datagram"),
    pytest.param(socket.SOCK_DGRAM, SENDMSG, id="python-sendmsg-codex-shares-this"),
    pytest.param(socket.SOCK_STREAM, "socat -u OPEN:/dev/null UNIX-CONNECT:PATH", id="socat"),
    pytest.param(socket.SOCK_STREAM, "nc -U PATH < /dev/null", id="nc"),
]


def tool_missing(cmd: str) -> str | None:
    program = cmd.split()[0]
    if program.startswith("{") or shutil.which(program):
        return None
    return f"{program} is not installed here"


async def reached(listener: UnixListener) -> int:
    for _ in range(20):  # a datagram may be counted a moment after the command ends
        if listener.reached:
            break
        await asyncio.sleep(0.05)
    return listener.reached


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
@pytest.mark.parametrize(("kind", "cmd"), UNIX_ESCAPES)
async def test_unix_socket_outside_is_unreachable(
    run: Run, daemon_folder: Path, kind: int, cmd: str, mode: str
) -> None:
    """Codex's seccomp filter (codex-rs/linux-sandbox/src/landlock.rs) denies connect
    and bind too; it keeps socket(AF_UNIX) and sendmsg, so a datagram sent with sendmsg
    to a socket file still leaves its sandbox. Here socket() is refused for every
    family, so no unconnected socket exists to send from."""
    if problem := tool_missing(cmd):
        pytest.skip(problem)
    listener = UnixListener(daemon_folder, kind)
    try:
        output = await run(cmd.replace("PATH", str(listener.path)), mode)
        assert await reached(listener) == 0, output
        assert "linked" not in output
    finally:
        listener.close()


@pytest.mark.parametrize(("kind", "cmd"), UNIX_ESCAPES)
async def test_unix_socket_is_reached_without_a_sandbox(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, daemon_folder: Path, kind: int, cmd: str
) -> None:
    if problem := tool_missing(cmd):
        pytest.skip(problem)
    listener = UnixListener(daemon_folder, kind)
    try:
        text = arena.fill(cmd).replace("PATH", str(listener.path))
        await run_orchestrated(arena, monkeypatch, "none", text, "danger-full-access")
        assert await reached(listener) == 1
    finally:
        listener.close()


async def test_socket_pairs_pipes_and_multiprocessing_still_work(run: Run, arena: Arena) -> None:
    script = (
        "import multiprocessing as mp, socket\n"
        "a, b = socket.socketpair(); a.sendall(b'pair'); print(b.recv(4).decode())\n"
        "with mp.Pool(2) as pool: print(sum(pool.map(abs, [-1, -2])))\n"
        "r, w = mp.Pipe(); w.send('pipe'); print(r.recv())\n"
    )
    shutil.rmtree(arena.ws / ".git")
    subprocess.run(["git", "init", "-q"], cwd=arena.ws, check=True)
    (arena.ws / "mp.py").write_text(script)
    output = await run("{python} mp.py && git status --short mp.py", "workspace-write")
    assert "pair\n3\npipe\n?? mp.py\n" in output, output


PLANTS = [
    pytest.param(
        "no-git",
        "mkdir -p .agent_magics; echo 'sandbox_mode = \"danger-full-access\"' "
        "> .agent_magics/config.toml",
        ".agent_magics/config.toml",
        id="create-project-config",
    ),
    pytest.param(
        "config",
        "echo 'sandbox_mode = \"danger-full-access\"' >> .agent_magics/config.toml",
        ".agent_magics/config.toml",
        id="change-project-config",
    ),
    pytest.param(
        "config",
        "mv .agent_magics moved; mkdir .agent_magics; echo x > .agent_magics/config.toml",
        ".agent_magics/config.toml",
        id="replace-config-folder",
    ),
    pytest.param(
        "",
        "mkdir -p .git/hooks; printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit",
        ".git/hooks/pre-commit",
        id="git-hook",
    ),
    pytest.param(
        "no-git",
        "mkdir -p .git/hooks; echo x > .git/hooks/x",
        ".git/hooks/x",
        id="create-git-folder",
    ),
]


def prepare(arena: Arena, setup: str) -> dict[str, bytes]:
    """Set the workspace up (``no-git``: no ``.git``; ``config``: a project config);
    return the protected files as they are before the attack."""
    if setup == "no-git":
        shutil.rmtree(arena.ws / ".git")
    if setup == "config":
        (arena.ws / ".agent_magics").mkdir()
        (arena.ws / ".agent_magics" / "config.toml").write_text('model = "m"\n')
    return protected_files(arena)


def protected_files(arena: Arena) -> dict[str, bytes]:
    found = {}
    for name in (".git", ".agent_magics"):
        for dirpath, _, files in os.walk(arena.ws / name):
            for file in files:
                path = Path(dirpath, file)
                found[str(path.relative_to(arena.ws))] = path.read_bytes()
    return found


@pytest.mark.parametrize(("setup", "cmd", "target"), PLANTS)
async def test_protected_folders_cannot_be_planted(
    run: Run, arena: Arena, setup: str, cmd: str, target: str
) -> None:
    """A missing ``.codex`` is not protected by Codex (default_read_only_subpaths_for_
    writable_root in codex-rs/protocol/src/protocol.rs keeps only existing folders), so
    there a command can create ``.codex/config.toml``; here ``.agent_magics`` and
    ``.git`` are kept uncreatable as well."""
    before = prepare(arena, setup)
    await run(cmd, "workspace-write")
    assert protected_files(arena) == before
    assert not (arena.ws / "moved").exists()
    if target not in before:
        assert not (arena.ws / target).exists()


@pytest.mark.parametrize(("setup", "cmd", "target"), PLANTS)
async def test_protected_folders_are_planted_without_a_sandbox(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, setup: str, cmd: str, target: str
) -> None:
    before = prepare(arena, setup)
    await run_orchestrated(arena, monkeypatch, "none", cmd, "danger-full-access")
    assert protected_files(arena) != before
    assert (arena.ws / target).is_file()


ENVIRON = (
    "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep ^OPENAI_API_KEY= | rev; echo end"
)
"""Reversed, so that the redaction of the key in tool output cannot hide a leak."""


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
@pytest.mark.parametrize("kind", LINUX_MECHANISMS)
def test_agent_environ_is_unreadable(arena: Arena, kind: str, mode: str) -> None:
    """``agent-magics exec`` holds the key in its environment; no command reads it from
    ``/proc``. (Codex's bubblewrap sandbox mounts a new ``/proc`` in a PID namespace.)"""
    require_mechanism(kind)
    output = run_cli(arena, kind, ENVIRON, mode)
    assert "end" in output
    assert KEY[::-1] not in output


def test_agent_environ_is_readable_without_a_sandbox(arena: Arena) -> None:
    output = run_cli(arena, "none", ENVIRON, "danger-full-access")
    assert f"OPENAI_API_KEY={KEY}"[::-1] in output


@pytest.fixture
def marker() -> Iterator[str]:
    """A ``sleep`` duration no other process uses; its sleepers are killed afterwards."""
    found = f"{random.randrange(10**6, 10**7)}.{os.getpid() % 1000}"
    yield found
    for pid in sleepers(found):
        os.kill(pid, signal.SIGKILL)


SPAWN = """\
setsid sh -c 'echo $$ > run/started; exec sleep {marker}' > /dev/null 2>&1 < /dev/null &
i=0; while [ ! -s run/started ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
echo started
"""
"""Starts a sleeper in a session of its own and returns once it runs (at most ~10 s)."""

SURVIVORS = [
    pytest.param("sh spawn.sh", id="ends"),
    pytest.param("sh spawn.sh; exec sleep 600", id="is-killed"),
    pytest.param(
        "setsid sh -c 'sh spawn.sh; sleep 600' > /dev/null 2>&1 < /dev/null &"
        " i=0; while [ ! -s run/started ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done",
        id="nested",
    ),
]
GONE_WITHIN_S = 10.0


async def gone(marker: str) -> bool:
    """Whether the sleepers are gone (a killed process may take a moment to vanish)."""
    for _ in range(int(GONE_WITHIN_S / 0.05)):
        if not sleepers(marker):
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("cmd", SURVIVORS)
async def test_setsid_children_end_with_the_turn(
    run: Run, arena: Arena, marker: str, cmd: str
) -> None:
    """Whether the command ends by itself or is killed when the turn's session closes,
    nothing it started outlives it, also what left its session with ``setsid``."""
    (arena.ws / "spawn.sh").write_text(SPAWN.replace("{marker}", marker))
    (arena.ws / "run").mkdir()
    await run(cmd, "workspace-write", yield_time_ms=1500)
    assert (arena.ws / "run" / "started").read_text().strip()  # the sleeper did start
    assert await gone(marker)


@pytest.mark.slow
async def test_setsid_children_survive_without_a_sandbox(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, marker: str
) -> None:
    (arena.ws / "spawn.sh").write_text(SPAWN.replace("{marker}", marker))
    (arena.ws / "run").mkdir()
    await run_orchestrated(arena, monkeypatch, "none", "sh spawn.sh", "danger-full-access")
    assert sleepers(marker)


if not sys.platform.startswith("linux"):  # pragma: no cover
    pytestmark = pytest.mark.skip("the escape suite exercises the Linux mechanisms")


@pytest.mark.slow
@pytest.mark.parametrize("kind", LINUX_MECHANISMS)
@pytest.mark.parametrize("tty", [False, True], ids=["pipes", "pty"])
async def test_setsid_children_end_at_the_stop_button(
    arena: Arena, marker: str, kind: str, tty: bool
) -> None:
    """The stop button SIGKILLs a running command's group at once (``kill_all``): under
    Landlock that kills the launcher too, so the walk of the command's descendants is
    what ends the sleeper that left with ``setsid``."""
    require_mechanism(kind)
    (arena.ws / "spawn.sh").write_text(SPAWN.replace("{marker}", marker))
    (arena.ws / "run").mkdir()
    spec = SandboxSpec(kind, (arena.ws,), network=False)
    argv = spec.wrap(["sh", "-c", "sh spawn.sh; exec sleep 600"])
    process = await asyncio.to_thread(ExecProcess, argv, arena.ws, dict(os.environ), tty)
    try:
        while not (arena.ws / "run" / "started").exists() or not sleepers(marker):
            assert not process.exited
            await asyncio.sleep(0.05)
        process.kill(signal.SIGKILL)
        assert await gone(marker)
    finally:
        process.dispose()


UNCONFINED_LAUNCHER = """\
import os, sys
args = sys.argv[1:]
command = args[args.index("--") + 1 :]
os.execvp(command[0], command)
"""


@pytest.mark.slow
def test_launcher_in_the_workspace_cannot_be_rewritten(arena: Arena) -> None:
    """The package (as in a virtual environment inside the project) lies in the
    workspace: a first command rewrites the Landlock launcher to confine nothing, and a
    second command must still be confined."""
    require_mechanism("landlock")
    package = ROOT / "agent_magics"
    shutil.copytree(package, arena.ws / "site" / "agent_magics")
    launcher = arena.ws / "site" / "agent_magics" / "tools" / "sandbox" / "landlock_exec.py"
    rewrite = f"printf '%s' '{UNCONFINED_LAUNCHER}' > {launcher}"
    escape = f"echo pwned > {arena.outside}/target.txt"
    script = [
        [function_call("exec_command", {"cmd": rewrite}, "c1")],
        [function_call("exec_command", {"cmd": escape}, "c2")],
        [message("done")],
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {
        "HOME": str(arena.home),
        "OPENAI_API_KEY": KEY,
        "AGENT_MAGICS_SANDBOX_MECHANISM": "landlock",
    }
    env["PYTHONPATH"] = str(arena.ws / "site")
    with ScriptedResponsesServer(script) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-s", "workspace-write", "-a", "never"]
        argv += ["-C", str(arena.ws), "try it"]
        done = subprocess.run(
            argv, env=env, cwd=arena.ws, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert launcher.read_text() == UNCONFINED_LAUNCHER  # the rewrite itself was allowed
    assert (arena.outside / "target.txt").read_text() == "original\n"
