"""The login shell's snapshot, with real bash, a real profile in a home of its own, and
whole turns through the scripted model server.

Each profile prints a line on stdout and one on stderr and counts how often it runs:
with the snapshot, commands see what the profile exported, its functions and options,
without its output and without running it again; a command started while it is
built waits for it; without it (setting off, snapshot failed), every command runs
``bash -lc`` as before.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from agent_magics import Session
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.unified_exec.snapshot import ShellSnapshot, snapshot_of
from tests.helpers.sessions import session_for

pytestmark = [
    pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash"),
    pytest.mark.home(outside=True),  # a profile there is the person's: the snapshot reads it
]

KEY = "sk-snapshot-secret-0123456789"
TOKEN = "ghp_configuredsecret0123456789"
PROFILE = """\
echo "profile says hello"
echo "profile warns" >&2
echo run >> "$HOME/profile_runs"
export PROFILE_VAR="from the profile"
greet() { echo "hello $1"; }
shopt -s extglob
"""
PROBE = "echo var=$PROFILE_VAR; greet you; shopt -q extglob && echo extglob"
SEEN = "var=from the profile\nhello you\nextglob\n"


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret of the person's in the environment, which no snapshot may keep."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)


def profile(home: Path, extra: str = "", first: str = "") -> None:
    (home / ".bash_profile").write_text(first + PROFILE + extra)


def runs(home: Path) -> int:
    file = home / "profile_runs"
    return len(file.read_text().splitlines()) if file.exists() else 0


def exec_call(cmd: str, call_id: str) -> dict[str, Any]:
    return function_call("exec_command", {"cmd": cmd, "yield_time_ms": 10_000}, call_id)


def new_session(base_url: str, work: Path, **extra: Any) -> Session:
    settings = {"shell_type": "unified_exec", "approval_policy": "never"}
    settings |= {"sandbox_mode": "danger-full-access"} | extra
    return session_for(work, base_url, api_key=KEY, **settings)


def output_text(raw: str) -> str:
    """The command's own output in an exec_command answer."""
    return raw.split("Output:\n", 1)[1]


async def turns(session: Session, server: ScriptedResponsesServer, n: int) -> list[str]:
    """Run ``n`` one-command turns; the output of each command."""
    texts: list[str] = []
    for _ in range(n):
        seen = set(server.outputs()) if server.requests else set()
        await session.run_turn("go")
        texts += [output_text(v) for k, v in server.outputs().items() if k not in seen]
    return texts


def script(cmds: list[str]) -> list[Any]:
    out: list[Any] = []
    for i, cmd in enumerate(cmds):
        out += [[exec_call(cmd, f"c{i}")], [message("ok")]]
    return out


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


async def wait_ready(session: Session) -> ShellSnapshot:
    snapshot = snapshot_of(session.services)
    assert snapshot is not None
    assert await asyncio.to_thread(snapshot.wait, 20), snapshot.failure
    return snapshot


async def test_commands_see_the_profile_without_running_it(home: Path, work: Path) -> None:
    """Exports, functions and options of the profile reach every command; the profile
    ran once (for the snapshot), and its output reaches none."""
    profile(home)
    with ScriptedResponsesServer(script([PROBE] * 3)) as server:
        session = new_session(server.base_url, work)
        try:
            await wait_ready(session)
            assert runs(home) == 1
            assert await turns(session, server, 3) == [SEEN] * 3
            assert runs(home) == 1
        finally:
            await session.aclose()


async def test_off_by_setting_every_command_reads_the_profile(home: Path, work: Path) -> None:
    profile(home)
    with ScriptedResponsesServer(script([PROBE] * 2)) as server:
        session = new_session(server.base_url, work, shell_snapshot=False)
        try:
            assert snapshot_of(session.services) is None
            got = await turns(session, server, 2)
        finally:
            await session.aclose()
    assert got == ["profile says hello\nprofile warns\n" + SEEN] * 2
    assert runs(home) == 2


async def test_turned_off_between_turns_removes_the_snapshot(home: Path, work: Path) -> None:
    profile(home)
    with ScriptedResponsesServer(script([PROBE])) as server:
        session = new_session(server.base_url, work)
        try:
            path = (await wait_ready(session)).path
            assert path is not None and path.exists()
            assert session.reconfigure(session.config.model_copy(update={"shell_snapshot": False}))
            got = await turns(session, server, 1)
            assert not path.exists() and snapshot_of(session.services) is None
        finally:
            await session.aclose()
    assert got == ["profile says hello\nprofile warns\n" + SEEN]


async def test_the_file_is_private_outside_the_workspace_and_gone_after_close(
    home: Path, work: Path
) -> None:
    """0600 in a 0700 folder under the home, without the session's secrets (the key, a
    secret of the environment), removed when the session closes."""
    profile(home, f"export OPENAI_API_KEY={KEY}\nalias gh2='GITHUB_TOKEN={TOKEN} gh'\n")
    session = new_session("http://127.0.0.1:9/v1", work)
    snapshot = await wait_ready(session)
    path = snapshot.path
    assert path is not None
    assert path.parent == (home / ".agent_magics" / "shell_snapshots").resolve()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    text = path.read_text()
    assert "PROFILE_VAR" in text and KEY not in text and TOKEN not in text
    assert work not in path.parents
    await session.aclose()
    assert not path.exists()
    assert list(path.parent.iterdir()) == []


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param("no_such_command_in_profile\nfalse\n", id="fails"),
        pytest.param("cat /no/such/file\nreturn 3\n", id="returns-non-zero"),
        pytest.param("read -r line\n", id="reads-stdin"),
    ],
)
async def test_a_failing_profile_leaves_commands_clean(home: Path, work: Path, extra: str) -> None:
    profile(home, extra)
    with ScriptedResponsesServer(script([PROBE])) as server:
        session = new_session(server.base_url, work)
        try:
            await wait_ready(session)
            assert await turns(session, server, 1) == [SEEN]
        finally:
            await session.aclose()


async def test_a_profile_that_exits_falls_back_to_the_login_shell(home: Path, work: Path) -> None:
    """The profile exits before the snapshot's script runs: no snapshot, and commands
    run as ``bash -lc`` (which that profile also ends)."""
    profile(home, "exit 7\n")
    with ScriptedResponsesServer(script(["echo never"])) as server:
        session = new_session(server.base_url, work)
        try:
            snapshot = snapshot_of(session.services)
            assert snapshot is not None
            assert not await asyncio.to_thread(snapshot.wait, 20)
            assert snapshot.state == "failed" and snapshot.path is None
            await session.run_turn("go")
            answer = server.outputs(1)["c0"]
        finally:
            await session.aclose()
    assert "exited with code 7" in answer
    assert output_text(answer) == "profile says hello\nprofile warns\n"
    assert list((home / ".agent_magics" / "shell_snapshots").iterdir()) == []


async def test_the_first_command_waits_for_a_slow_profile_and_shows_none_of_it(
    home: Path, work: Path
) -> None:
    """A command started while the snapshot is being built waits for it (a login shell
    would read the profile as long) rather than print the profile's output (pyenv's
    "cannot rehash" in the read-only sandbox) into its own; the profile runs once."""
    profile(home, first="sleep 3\n")
    with ScriptedResponsesServer(script([PROBE, PROBE])) as server:
        session = new_session(server.base_url, work)
        try:
            snapshot = snapshot_of(session.services)
            assert snapshot is not None and snapshot.state == "building"
            first = await turns(session, server, 1)
            assert snapshot.state == "ready"
            second = await turns(session, server, 1)
        finally:
            await session.aclose()
    assert first == [SEEN]
    assert second == [SEEN]
    assert runs(home) == 1


async def test_a_snapshot_changed_on_disk_is_dropped(home: Path, work: Path) -> None:
    """A command that appends to the snapshot file cannot get its line run by later
    commands: the file no longer matches what was written, so they read the profile."""
    profile(home)
    append = (
        'for f in "$HOME"/.agent_magics/shell_snapshots/*.sh; do echo "echo PLANTED" >> "$f"; done'
    )
    with ScriptedResponsesServer(script([append, PROBE])) as server:
        session = new_session(server.base_url, work)
        try:
            await wait_ready(session)
            got = await turns(session, server, 2)
            snapshot = snapshot_of(session.services)
            assert snapshot is not None and snapshot.state == "failed"
        finally:
            await session.aclose()
    assert got[1] == "profile says hello\nprofile warns\n" + SEEN
    assert list((home / ".agent_magics" / "shell_snapshots").iterdir()) == []


async def test_the_sandbox_wraps_the_sourcing_command(home: Path, work: Path) -> None:
    """Under workspace-write the command that sources the snapshot is the confined one:
    it sees the profile and still cannot write outside the writable roots."""
    from agent_magics.tools.sandbox.platform import probe

    if probe().kind == "none":
        pytest.skip("no sandbox on this machine")
    outside = work / ".agent_magics" / "planted.toml"  # protected even before it exists
    cmd = f"{PROBE}; {{ echo x > {outside}; }} 2>/dev/null || echo refused"
    profile(home)
    with ScriptedResponsesServer(script([cmd])) as server:
        session = new_session(server.base_url, work, sandbox_mode="workspace-write")
        try:
            await wait_ready(session)
            got = await turns(session, server, 1)
        finally:
            await session.aclose()
    assert got == [SEEN + "refused\n"]
    assert not outside.exists() and runs(home) == 1


def test_stale_snapshots_of_dead_processes_are_removed(home: Path, work: Path) -> None:
    folder = home / ".agent_magics" / "shell_snapshots"
    folder.mkdir(parents=True, mode=0o700)
    dead = folder / "999999999-00ff.sh"
    dead.write_text("echo stale\n")
    mine = folder / f"{os.getpid()}-00ff.sh"
    mine.write_text("echo mine\n")
    profile(home)
    snapshot = ShellSnapshot("/bin/bash", work, dict(os.environ)).start()
    try:
        assert snapshot.wait(20)
        assert not dead.exists() and mine.exists()
    finally:
        snapshot.close()
        mine.unlink()


def test_a_symlinked_folder_is_refused(home: Path, work: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home / ".agent_magics").mkdir()
    (home / ".agent_magics" / "shell_snapshots").symlink_to(elsewhere)
    profile(home)
    snapshot = ShellSnapshot("/bin/bash", work, dict(os.environ)).start()
    assert not snapshot.wait(20)
    assert snapshot.state == "failed" and list(elsewhere.iterdir()) == []
    assert snapshot.command(["/bin/bash", "-lc", "true"], {}) is None


async def test_closing_during_the_profile_lets_the_profile_finish(home: Path, work: Path) -> None:
    """A profile can take a lock before it sets the trap that releases it (pyenv's rehash
    lock: left behind, every later login shell waits 60 s for it). A session closed while
    the profile runs leaves the login shell to finish it rather than stopping it."""
    started, finished = home / "started", home / "finished"
    profile(home, first=f"touch {started}; sleep 1; touch {finished}\n")
    session = new_session("http://127.0.0.1:9/v1", work)
    for _ in range(500):
        if started.exists():
            break
        await asyncio.sleep(0.02)
    assert started.exists()
    await session.aclose()
    assert not finished.exists()
    folder = home / ".agent_magics" / "shell_snapshots"
    for _ in range(500):
        if finished.exists() and not any(folder.iterdir()):
            break
        await asyncio.sleep(0.02)
    assert finished.exists(), "the profile was stopped half-way"
    assert list(folder.iterdir()) == []  # its result was thrown away
