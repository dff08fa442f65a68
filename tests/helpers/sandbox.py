"""What the sandbox and approval tests share: a folder layout outside every writable root,
a way to pick the sandbox mechanism, and a recording approver."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_magics.errors import RespondToModel
from agent_magics.protocol.approval import (
    ApprovalPolicy,
    ApprovalRequest,
    ReviewDecision,
    SandboxMode,
)
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.context import SessionServices
from agent_magics.tools.handlers.unified_exec import ExecCommandHandler
from agent_magics.tools.sandbox import platform
from agent_magics.tools.sandbox.platform import MECHANISM_ENV, probe
from agent_magics.tools.sandbox.roots import real
from agent_magics.tools.unified_exec import close_tool_processes
from tests.helpers.tools import shell_invocation

LINUX_MECHANISMS = ("bwrap", "landlock")


def mechanism_problem(kind: str) -> str | None:
    """Why ``kind`` does not confine commands on this machine (``None``: it does)."""
    if not sys.platform.startswith("linux"):
        return f"{kind} is a Linux mechanism and this is {sys.platform}"
    if kind == "bwrap":
        from agent_magics.tools.sandbox import bwrap

        return bwrap.probe()
    from agent_magics.tools.sandbox import landlock

    return landlock.probe()


@contextmanager
def use_mechanism(monkeypatch: pytest.MonkeyPatch, kind: str) -> Iterator[None]:
    """Make this process's probe pick ``kind`` (``none``: no mechanism works)."""
    monkeypatch.setenv(platform.MECHANISM_ENV, kind)
    platform.probe.cache_clear()
    try:
        yield
    finally:
        monkeypatch.delenv(platform.MECHANISM_ENV)
        platform.probe.cache_clear()


def require_mechanism(kind: str) -> None:
    problem = mechanism_problem(kind)
    if problem is not None:
        pytest.skip(f"{kind} cannot confine commands here: {problem}")


def outside_base() -> Path | None:
    """A folder for test data that no ``workspace-write`` root covers (/tmp, $TMPDIR)."""
    covered = [real(Path("/tmp"))]
    if os.environ.get("TMPDIR"):
        covered.append(real(Path(os.environ["TMPDIR"])))
    for candidate in (Path("/var/tmp"), Path.home()):
        base = real(candidate)
        inside = any(base == c or c in base.parents for c in covered)
        if base.is_dir() and os.access(base, os.W_OK) and not inside:
            return base
    return None


@dataclass
class Arena:
    """``root/ws`` is the workspace; ``root/outside`` and ``root/home`` must not change."""

    root: Path
    ws: Path
    outside: Path
    home: Path

    def fill(self, text: str) -> str:
        return text.format(outside=self.outside, root=self.root, python=sys.executable)

    def snapshot(self) -> dict[str, Any]:
        """Everything outside the workspace: kinds, modes, bytes and link targets."""
        seen: dict[str, Any] = {".": os.lstat(self.root).st_mode}
        for dirpath, dirnames, filenames in os.walk(self.root):
            here = Path(dirpath)
            if here == self.ws:
                dirnames[:] = []
                continue
            for name in [*dirnames, *filenames]:
                path = here / name
                if path == self.ws:
                    continue
                info = os.lstat(path)
                rel = str(path.relative_to(self.root))
                if path.is_symlink():
                    seen[rel] = ("link", os.readlink(path))
                elif path.is_file():
                    seen[rel] = ("file", info.st_mode, info.st_nlink, path.read_bytes())
                else:
                    seen[rel] = ("dir", info.st_mode)
        return seen


@dataclass
class RecordingApprover:
    """Answers every request with ``decision`` and keeps what it was asked."""

    decision: ReviewDecision = ReviewDecision.APPROVED
    asked: list[ApprovalRequest] = field(default_factory=list)

    async def __call__(self, request: ApprovalRequest) -> ReviewDecision:
        self.asked.append(request)
        return self.decision


async def close(services: SessionServices) -> None:
    """End the processes the test's tool calls started."""
    await close_tool_processes(services)


EXEC = ExecCommandHandler()
KEY = "sk-dummy-Q7v9Z2k4W8"  # no 8-character piece of it occurs in paths or commands


async def run_orchestrated(
    arena: Arena,
    monkeypatch: pytest.MonkeyPatch,
    mechanism: str,
    cmd: str,
    mode: str,
    **extra: Any,
) -> str:
    """Run ``cmd`` with the exec_command handler (``extra``: more of its arguments); the
    approver must never be asked."""
    monkeypatch.setenv("HOME", str(arena.home))
    approver = RecordingApprover()
    services = SessionServices(approver=approver)
    turn: dict[str, Any] = {"approval_policy": ApprovalPolicy.NEVER}
    turn["sandbox_mode"] = SandboxMode(mode)
    with use_mechanism(monkeypatch, mechanism):
        assert probe().kind == (None if mechanism == "none" else mechanism)
        try:
            inv = shell_invocation(EXEC, {"cmd": cmd, **extra}, services, arena.ws, **turn)
            out = await EXEC.handle(inv)
            text = out.text
        except RespondToModel as exc:
            text = exc.message
        finally:
            await close(services)
    assert approver.asked == []
    return text


@dataclass
class ExecRun:
    """What one ``agent-magics exec`` turn left: the process, and the server it spoke to."""

    done: subprocess.CompletedProcess[str]
    server: ScriptedResponsesServer

    def outputs(self) -> dict[str, Any]:
        """The model's first calls' outputs, by call id."""
        return self.server.outputs(1)


def exec_calls(
    arena: Arena,
    mechanism: str,
    calls: list[dict[str, Any]],
    *,
    mode: str = "workspace-write",
    env: dict[str, str] | None = None,
    python: str = sys.executable,
    skip_env: tuple[str, ...] = (),
) -> ExecRun:
    """``calls`` as the model's first answer in ``agent-magics exec -a never`` run by
    ``python`` in ``arena`` under ``mechanism`` (``HOME`` is the arena's unless ``env``
    says otherwise; variables starting with ``skip_env`` are left out)."""
    skip = ("AGENT_MAGICS_", "OPENAI_", *skip_env)
    base = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    base |= {"HOME": str(arena.home), "OPENAI_API_KEY": KEY, MECHANISM_ENV: mechanism}
    base |= env or {}
    with ScriptedResponsesServer([calls, [message("done")]]) as server:
        argv = [python, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-s", mode, "-a", "never"]
        # the escape tests compare every file in and around the workspace (the home
        # included): no session file, no shell snapshot under the home
        argv += ["-c", "sessions_dir=false", "-c", "shell_snapshot=false"]
        argv += ["-C", str(arena.ws), "try it"]
        done = subprocess.run(
            argv, env=base, cwd=arena.ws, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return ExecRun(done, server)


def run_cli(arena: Arena, mechanism: str, cmd: str, mode: str, **extra: Any) -> str:
    """Run ``cmd`` as the model's only tool call in ``agent-magics exec``."""
    run = exec_calls(
        arena, mechanism, [function_call("exec_command", {"cmd": cmd, **extra}, "c1")], mode=mode
    )
    assert "approval" not in run.done.stderr  # nobody was asked
    output: str = run.outputs()["c1"]
    return output


@dataclass
class Run:
    """Runs one command through ``driver`` under ``mechanism``; returns the tool output."""

    driver: str
    mechanism: str
    arena: Arena
    monkeypatch: pytest.MonkeyPatch

    async def __call__(self, cmd: str, mode: str, **extra: Any) -> str:
        text = self.arena.fill(cmd)
        if self.driver == "cli":
            return await asyncio.to_thread(run_cli, self.arena, self.mechanism, text, mode, **extra)
        return await run_orchestrated(
            self.arena, self.monkeypatch, self.mechanism, text, mode, **extra
        )


def sleepers(marker: str) -> list[int]:
    """Pids of the ``sleep MARKER`` processes still alive."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline[:2] == [b"sleep", marker.encode()]:
            found.append(int(entry.name))
    return found


def make_key(home: Path) -> str:
    """A signing key in ``home`` as the package writes it (hex, 0600); its text."""
    folder = home / ".agent_magics"
    folder.mkdir(mode=0o700, exist_ok=True)
    key = secrets.token_hex(32)
    (folder / "session_key").write_text(key + "\n")
    os.chmod(folder / "session_key", 0o600)
    return key
