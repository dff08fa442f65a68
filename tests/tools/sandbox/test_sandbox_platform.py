"""Sandbox mechanisms one by one: the probe, the argv each builds (bubblewrap options,
the Landlock launcher, the Seatbelt profile text), commands that must keep working under
them (PTYs, pipes, cleanup), and how a session says that none works."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_magics.agent.session import Session
from agent_magics.config import SessionConfig
from agent_magics.errors import RespondToModel
from agent_magics.events import Event, SandboxUnavailable
from agent_magics.protocol.approval import SandboxMode
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.approval.orchestrator import NEVER_PROMPT
from agent_magics.tools.context import SessionServices, TurnContext
from agent_magics.tools.handlers.unified_exec import ExecCommandHandler, WriteStdinHandler
from agent_magics.tools.sandbox import (
    NO_SANDBOX,
    SandboxSpec,
    bwrap,
    landlock,
    landlock_exec,
    seatbelt,
)
from agent_magics.tools.sandbox.landlock import INTERPRETER, LAUNCHER
from agent_magics.tools.sandbox.landlock import grants as landlock_grants
from agent_magics.tools.sandbox.landlock import wrap as landlock_wrap
from agent_magics.tools.sandbox.platform import platform_sandbox, probe, unavailable_notice
from tests.helpers.sandbox import (
    LINUX_MECHANISMS,
    close,
    require_mechanism,
    sleepers,
    use_mechanism,
)
from tests.helpers.tools import shell_invocation

pytestmark = pytest.mark.slow  # real sandboxes, servers or CLI runs per case

SPEC = SandboxSpec(
    "bwrap",
    writable_roots=(Path("/project/ws"), Path("/tmp")),
    read_only_subpaths=(Path("/project/ws/.git"),),
    network=False,
)


def test_seatbelt_profile_text() -> None:
    profile = seatbelt.profile(
        SandboxSpec("seatbelt", SPEC.writable_roots, SPEC.read_only_subpaths)
    )
    assert profile.startswith("(version 1)\n(deny default)\n(allow process-exec)\n")
    assert profile.endswith(
        "(allow file-write*\n"
        '  (require-all (subpath "/project/ws") (require-not (subpath "/project/ws/.git")))\n'
        '  (subpath "/tmp"))\n'
        "(allow network-outbound)\n(allow network-inbound)\n(allow network-bind)\n"
        "(allow system-socket)\n"
    )
    assert "(allow file-read*)\n" in profile and '(literal "/dev/null")' in profile


def test_seatbelt_profile_denies_reading_the_hidden_paths() -> None:
    """After ``(allow file-read*)``, a deny naming a path wins (Seatbelt matches the path
    a symlink leads to); it holds for a path that does not exist yet. The profile allows
    neither ``file-link`` nor ``file-clone`` (denied by default): no hard link or clone of
    a hidden file can be made where reading is allowed."""
    hidden = (
        Path("/Users/me/.agent_magics/session_key"),
        Path("/Users/me/Library/Jupyter/runtime"),
    )
    profile = seatbelt.profile(SandboxSpec("seatbelt", network=False, hidden=hidden))
    assert profile == seatbelt.BASE_RULES + (
        "(deny file-read*\n"
        '  (subpath "/Users/me/.agent_magics/session_key")\n'
        '  (subpath "/Users/me/Library/Jupyter/runtime"))\n'
    )
    assert profile.index("(allow file-read*)") < profile.index("(deny file-read*")
    assert "file-link" not in profile and "file-clone" not in profile


def test_seatbelt_profile_without_network_or_roots() -> None:
    profile = seatbelt.profile(SandboxSpec("seatbelt", network=False))
    assert profile == seatbelt.BASE_RULES
    assert "network" not in profile and "file-write*" not in profile


def test_seatbelt_quotes_paths_and_wraps_the_command() -> None:
    assert seatbelt.quote(Path('/a "b"\\c')) == '"/a \\"b\\"\\\\c"'
    argv = seatbelt.wrap(SandboxSpec("seatbelt", network=False), ["ls", "-l"])
    assert argv[:2] == ["/usr/bin/sandbox-exec", "-p"] and argv[3:] == ["--", "ls", "-l"]


def test_bwrap_options() -> None:
    protected = (Path("/etc"), Path("/nope"), Path("/project/ws/.agent_magics"))
    with_git = SandboxSpec("bwrap", SPEC.writable_roots, protected, False)
    assert bwrap.bwrap_args(with_git) == [
        "--die-with-parent",
        "--unshare-user",
        "--unshare-pid",
        "--unshare-net",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--bind",
        "/tmp",
        "/tmp",
        "--bind",
        "/project/ws",
        "/project/ws",
        "--ro-bind",
        "/etc",
        "/etc",
        "--tmpfs",
        "/project/ws/.agent_magics",
        "--remount-ro",
        "/project/ws/.agent_magics",
    ]  # fmt: skip  (a missing protected path outside the roots is left out)
    online = bwrap.bwrap_args(SandboxSpec("bwrap", network=True))
    assert "--unshare-net" not in online


def test_bwrap_loads_the_socket_filter_when_the_network_is_off() -> None:
    require_mechanism("bwrap")
    argv = bwrap.wrap(SPEC, ["echo", "hi"])
    opener, path = argv[:3], Path(argv[3])
    assert opener == ["/bin/sh", "-c", 'exec "$@" 9< "$0"']
    assert path.read_bytes() == landlock_exec.seccomp_program(os.uname().machine)
    with pytest.raises(PermissionError):  # sealed: not even this process can change it
        os.write(int(path.name), b"x")
    assert argv[4] == bwrap.find_bwrap()
    assert argv[argv.index("--") - 2 :] == ["--seccomp", "9", "--", "echo", "hi"]
    online = bwrap.wrap(SandboxSpec("bwrap", SPEC.writable_roots, network=True), ["echo"])
    assert online[0] == bwrap.find_bwrap() and online[online.index("--") :] == ["--", "echo"]


def test_landlock_launcher_argv() -> None:
    spec = SandboxSpec("landlock", (Path("/project/ws"), Path("/nonexistent")), network=False)
    argv = landlock_wrap(spec, ["echo", "hi"])
    assert argv[:5] == [INTERPRETER, "-I", "-S", "-c", LAUNCHER.read_text()]
    rw = ["--rw", "/project/ws", "--rw", "/nonexistent", "--rw", "/dev/shm"]
    assert argv[5:] == ["--read", "/", *rw, "--no-network", "--", "echo", "hi"]
    assert landlock_exec.parse(argv[5:]) == (
        ["/"], ["/project/ws", "/nonexistent", "/dev/shm"], False, False, ["echo", "hi"]
    )  # fmt: skip
    assert landlock_exec.parse(["--seccomp-only", "--", "x"]) == ([], [], True, True, ["x"])


def test_landlock_grants_go_around_protected_paths(tmp_path: Path) -> None:
    """Landlock cannot take write access back below a granted folder, so a root holding
    a protected path (existing or not) is granted entry by entry; symlinks are skipped."""
    for name in ("src", ".git", "lib"):
        (tmp_path / name).mkdir()
    (tmp_path / "README").write_text("r\n")
    (tmp_path / "link").symlink_to(tmp_path / ".git")
    protected = (tmp_path / ".git", tmp_path / ".agent_magics")
    assert landlock_grants((tmp_path, Path("/nope")), protected) == [
        tmp_path / "README", tmp_path / "lib", tmp_path / "src", Path("/nope"),
    ]  # fmt: skip
    assert landlock_grants((tmp_path,), ()) == [tmp_path]
    (tmp_path / "cfg").mkdir()
    (tmp_path / ".agent_magics").symlink_to(tmp_path / "cfg")
    assert tmp_path / "cfg" not in landlock_grants((tmp_path,), protected)


def launcher_reads(spec: SandboxSpec) -> list[str]:
    argv = landlock_wrap(spec, ["true"])
    return [argv[i + 1] for i, arg in enumerate(argv[: argv.index("--")]) if arg == "--read"]


def test_landlock_reads_are_granted_around_the_hidden_paths(tmp_path: Path) -> None:
    """Reading is granted beneath every entry on the way from ``/`` to a hidden path but
    the one leading there (the key also while it is missing: a key made later lands in
    a folder granted entry by entry, so it stays unreadable); symlinks are skipped. A
    path is hidden only when no folder on its way lies beneath a write grant (there a
    command's new file could not be read back): then it stays readable, and says so."""
    user = tmp_path / "home" / ".agent_magics"
    (user / "shell_snapshots").mkdir(parents=True)
    (user / "config.toml").write_text("")
    (tmp_path / "home" / "notes.txt").write_text("")
    (tmp_path / "home" / "key_link").symlink_to(user / "session_key")
    key = user / "session_key"  # not made yet
    spec = SandboxSpec("landlock", (tmp_path / "ws",), network=False, hidden=(key,))
    reads = launcher_reads(spec)
    assert {str(user / "config.toml"), str(user / "shell_snapshots")} <= set(reads)
    assert str(tmp_path / "home" / "notes.txt") in reads
    along = [key, *key.parents]
    assert not any(path in reads for path in map(str, along))
    assert str(tmp_path / "home" / "key_link") not in reads
    top = next(p for p in along if p.parent == Path("/"))
    assert {str(p) for p in Path("/").iterdir() if p != top and not p.is_symlink()} <= set(reads)
    assert landlock.hideable(key, [tmp_path / "ws"]) and landlock.unhidden(spec) == []
    writable_beside = SandboxSpec("landlock", (tmp_path,), network=False, hidden=(key,))
    assert not landlock.hideable(key, [tmp_path])
    assert landlock.unhidden(writable_beside) == [key]
    assert launcher_reads(writable_beside) == ["/"]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        pytest.param(["--rw", "/x"], "no command given after --", id="no-command"),
        pytest.param(["--bogus", "--", "true"], "unknown argument '--bogus'", id="unknown"),
    ],
)
def test_landlock_launcher_refuses_bad_arguments(args: list[str], problem: str) -> None:
    done = subprocess.run([sys.executable, "-I", "-S", str(LAUNCHER), *args], capture_output=True)
    assert done.returncode == 1
    assert done.stderr.decode() == f"landlock sandbox setup failed: {problem}\n"


def test_landlock_rights_grow_with_the_abi() -> None:
    assert landlock_exec.handled_fs(1) == 0b1_1111_1111_1111  # reading and running too
    assert landlock_exec.handled_fs(2) == landlock_exec.handled_fs(1) | 1 << 13
    assert landlock_exec.handled_fs(7) == landlock_exec.handled_fs(2) | 1 << 14


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_seccomp_program_shape(machine: str) -> None:
    program = landlock_exec.seccomp_program(machine)
    assert len(program) == 16 * 8  # sixteen BPF instructions
    assert program[-8:] == bytes.fromhex("06000000") + (0x7FFF0000).to_bytes(4, "little")


def test_probe_can_be_told_none(monkeypatch: pytest.MonkeyPatch) -> None:
    with use_mechanism(monkeypatch, "none"):
        assert probe().kind is None
        turn = TurnContext(cwd=Path.cwd(), sandbox_mode=SandboxMode.WORKSPACE_WRITE)
        assert platform_sandbox(turn.cwd, turn.sandbox_mode, turn.network_access) is None
        notice = unavailable_notice(SandboxMode.READ_ONLY)
        assert notice == (
            "No sandbox works on this machine (AGENT_MAGICS_SANDBOX_MECHANISM=none); "
            "every command will need approval."
        )
        assert unavailable_notice(SandboxMode.DANGER_FULL_ACCESS) is None


def test_probe_refuses_a_mechanism_of_another_system(monkeypatch: pytest.MonkeyPatch) -> None:
    with use_mechanism(monkeypatch, "seatbelt" if sys.platform != "darwin" else "bwrap"):
        assert probe().kind is None
        assert "is not offered on" in probe().detail


@pytest.mark.parametrize("kind", LINUX_MECHANISMS)
def test_platform_sandbox_for_a_turn(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_mechanism(kind)
    (tmp_path / ".git").write_text("gitdir: ../real.git\n")
    (tmp_path / ".codex").mkdir()
    with use_mechanism(monkeypatch, kind):
        write = TurnContext(cwd=tmp_path, sandbox_mode=SandboxMode.WORKSPACE_WRITE)
        spec = platform_sandbox(write.cwd, write.sandbox_mode, write.network_access)
        assert spec is not None and spec.kind == kind and not spec.network
        assert spec.writable_roots[0] == tmp_path.resolve()
        assert Path("/tmp").resolve() in spec.writable_roots
        assert set(spec.read_only_subpaths) >= {
            tmp_path / ".git",
            tmp_path.parent / "real.git",
            tmp_path / ".codex",
        }
        online = TurnContext(cwd=tmp_path, sandbox_mode=SandboxMode.READ_ONLY, network_access=True)
        spec = platform_sandbox(online.cwd, online.sandbox_mode, online.network_access)
        assert spec is not None and spec.writable_roots == () and spec.network
        full = TurnContext(cwd=tmp_path, sandbox_mode=SandboxMode.DANGER_FULL_ACCESS)
        assert platform_sandbox(full.cwd, full.sandbox_mode, full.network_access) == NO_SANDBOX


@pytest.fixture(params=[pytest.param(k, id=k) for k in LINUX_MECHANISMS])
def mechanism(request: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    require_mechanism(request.param)
    with use_mechanism(monkeypatch, request.param):
        yield request.param


async def exec_text(
    handler: Any, args: dict[str, Any], services: SessionServices, cwd: Path
) -> str:
    inv = shell_invocation(handler, args, services, cwd, sandbox_mode=SandboxMode.WORKSPACE_WRITE)
    try:
        return (await handler.handle(inv)).text
    except RespondToModel as exc:
        return exc.message


async def test_pty_sessions_work_in_the_sandbox(mechanism: str, tmp_path: Path) -> None:
    services = SessionServices()
    try:
        first = await exec_text(
            ExecCommandHandler(),
            {"cmd": "test -t 0 && echo is-a-tty; read x; echo got-$x", "tty": True,
             "yield_time_ms": 1000},
            services, tmp_path,
        )  # fmt: skip
        assert "is-a-tty" in first
        found = re.search(r"session ID (\d+)", first)
        assert found is not None, first
        args = {"session_id": int(found.group(1)), "chars": "hi\n", "yield_time_ms": 2000}
        second = await exec_text(WriteStdinHandler(), args, services, tmp_path)
        assert "got-hi" in second and "Process exited with code 0" in second
    finally:
        await close(services)


async def test_pipes_keep_default_signals(mechanism: str, tmp_path: Path) -> None:
    services = SessionServices()
    try:
        text = await exec_text(
            ExecCommandHandler(),
            {"cmd": "yes | head -n 1; echo end", "login": False},
            services,
            tmp_path,
        )
    finally:
        await close(services)
    assert text.endswith("Output:\ny\nend\n"), text  # no "Broken pipe" from yes


async def test_closing_the_session_ends_sandboxed_processes(mechanism: str, tmp_path: Path) -> None:
    marker = f"{os.getpid() % 1000}.{len(mechanism)}37"
    services = SessionServices()
    text = await exec_text(
        ExecCommandHandler(), {"cmd": f"sleep {marker}", "yield_time_ms": 300}, services, tmp_path
    )
    assert "Process running with session ID" in text
    assert sleepers(marker)
    await close(services)
    assert not sleepers(marker)


async def test_session_says_once_when_no_sandbox_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    events: list[Event] = []
    with use_mechanism(monkeypatch, "none"), ScriptedResponsesServer([[message("a")]]) as server:
        config = SessionConfig(
            model="m", provider="responses", base_url=server.base_url, cwd=tmp_path,
            api_key="sk-dummy-Q7v9Z2k4W8", sandbox_mode="workspace-write",
        )  # fmt: skip
        session = Session(config)
        session.subscribe(events.append)
        await session.run_turn("one")
        await session.run_turn("two")
        await session.aclose()
    notices = [e for e in events if isinstance(e, SandboxUnavailable)]
    assert notices == [SandboxUnavailable(unavailable_notice_text())]
    assert [r.getMessage() for r in caplog.records] == [unavailable_notice_text()]


def unavailable_notice_text() -> str:
    return (
        "No sandbox works on this machine (AGENT_MAGICS_SANDBOX_MECHANISM=none); "
        "every command will need approval."
    )


async def test_session_is_quiet_when_a_sandbox_works(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    if probe().kind is None:
        pytest.skip(f"no sandbox mechanism works here: {probe().detail}")
    events: list[Event] = []
    with ScriptedResponsesServer([[message("a")]]) as server:
        config = SessionConfig(
            model="m", provider="responses", base_url=server.base_url, cwd=tmp_path,
            api_key="sk-dummy-Q7v9Z2k4W8", sandbox_mode="read-only",
        )  # fmt: skip
        session = Session(config)
        session.subscribe(events.append)
        await session.run_turn("one")
        await session.aclose()
    assert not [e for e in events if isinstance(e, SandboxUnavailable)]
    assert not caplog.records


def test_cli_says_once_when_no_sandbox_works(tmp_path: Path) -> None:
    """``agent-magics exec`` prints the notice to stderr, and under ``never`` a command
    that would need the missing sandbox is refused with Codex's words."""
    script = [[function_call("shell", {"command": ["touch", "x"]}, "c1")], [message("done")]]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(tmp_path), "OPENAI_API_KEY": "sk-dummy-Q7v9Z2k4W8"}
    env["AGENT_MAGICS_SANDBOX_MECHANISM"] = "none"
    with ScriptedResponsesServer(script) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-s", "workspace-write", "-a", "never"]
        argv += ["-c", "shell_type=shell", "go"]
        done = subprocess.run(
            argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        output = server.outputs(1)["c1"]
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(unavailable_notice_text()) == 1
    assert output == NEVER_PROMPT
    assert not (tmp_path / "x").exists()


NOTICE_SCRIPT = """
from agent_magics.protocol.approval import SandboxMode
from agent_magics.tools.sandbox.platform import proc_environ_notice
print(proc_environ_notice(SandboxMode.WORKSPACE_WRITE))
print(proc_environ_notice(SandboxMode.DANGER_FULL_ACCESS))
"""


@pytest.mark.parametrize("kind", LINUX_MECHANISMS)
@pytest.mark.parametrize("parent_has_key", [True, False], ids=["parent-key", "no-key"])
def test_proc_environ_notice_names_the_parent_holding_the_key(
    kind: str, parent_has_key: bool
) -> None:
    """Under Landlock a command sees every process's ``/proc/PID/environ``: the session
    is told which parent still holds the key (its own copy is overwritten)."""
    require_mechanism(kind)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["AGENT_MAGICS_SANDBOX_MECHANISM"] = kind
    if parent_has_key:
        env["OPENAI_API_KEY"] = "sk-dummy-Q7v9Z2k4W8"
    # the shell stays as the parent (a command follows), holding the key it started with
    argv = ["/bin/sh", "-c", '"$0" -c "$1"; true', sys.executable, NOTICE_SCRIPT]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    first, second = done.stdout.splitlines()
    assert second == "None"
    if kind == "landlock" and parent_has_key:
        assert first.startswith("Sandboxed commands can read OPENAI_API_KEY from the environment")
        assert re.search(r"of sh \(pid \d+\) \(Landlock", first), first
    else:
        assert first == "None"


@pytest.mark.parametrize("kind", LINUX_MECHANISMS)
def test_cli_says_once_when_a_parent_holds_the_key(kind: str, tmp_path: Path) -> None:
    """``agent-magics exec`` started by a shell that keeps the key: under Landlock the
    turn says once, on stderr, that sandboxed commands can read it there; under
    bubblewrap (a private /proc) it says nothing."""
    require_mechanism(kind)
    script = [[message("a")], [message("b")]]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(tmp_path), "OPENAI_API_KEY": "sk-dummy-Q7v9Z2k4W8"}
    env["AGENT_MAGICS_SANDBOX_MECHANISM"] = kind
    with ScriptedResponsesServer(script) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-s", "workspace-write", "go"]
        # the shell stays as the parent (a command follows), holding the key it started with
        shell = ["/bin/sh", "-c", '"$@"; true', "sh", *argv]
        done = subprocess.run(
            shell, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "can read OPENAI_API_KEY" in line]
    if kind == "landlock":
        assert len(said) == 1, done.stderr
        assert said[0].startswith("Sandboxed commands can read OPENAI_API_KEY")
    else:
        assert said == []
