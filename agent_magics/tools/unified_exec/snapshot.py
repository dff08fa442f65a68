"""The login shell's snapshot: read the person's profile once per session, not per command.

``bash -lc SCRIPT`` re-reads ``/etc/profile`` and ``~/.bash_profile`` (pyenv or conda
set-up can cost 0.4 s) for every command. At session start a background thread runs
the profile once in a login bash and records what it left behind: the exported
variables it added, changed or removed (compared with the environment commands get),
its functions, aliases and shell options. That record is a small script, written
0600 in a 0700 folder of the person's own (``~/.agent_magics/shell_snapshots``, never
the working folder). Once it is ready and has been checked (sourcing it in a plain
``bash -c`` prints nothing and succeeds), a command the model asked to run as
``bash -lc SCRIPT`` runs as ``bash -c SCRIPT`` with ``BASH_ENV`` naming the snapshot:
bash sources it before the script, and the snapshot's last lines put ``BASH_ENV`` back
as the profile left it. The script's line numbers and ``$0`` are untouched (its first
line starts with the one that puts the agent's Python first on ``PATH`` again, as for
any login shell: :func:`agent_magics.tools.unified_exec.command_line.spawn_argv`); the profile's
own output never reaches the command's. The argv the model sees and
approves stays the ``-lc`` one; the rewritten one is what the sandbox wraps.

Until the snapshot is ready, when it failed (the profile exits, hangs past
:data:`CAPTURE_TIMEOUT_S`, the shell is not bash) or when the file changed on disk
since it was written (size, inode or change time), commands run as ``bash -lc`` as
before. Values holding a session secret are left out of the file. The file is
removed when the session closes (and at exit; files of dead processes at the next
start).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import re
import secrets
import shutil
import stat
import subprocess
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.tools.command_safety.paths import shell_startup_is_trusted
from agent_magics.tools.sandbox.roots import writable_roots
from agent_magics.tools.sandbox.user_files import shell_start_files
from agent_magics.tools.unified_exec.command_line import command_env, spawn_argv
from agent_magics.tools.unified_exec.snapshot_capture import (
    _SnapshotFailed,
    capture,
    render,
    signal_group,
)

if TYPE_CHECKING:
    from agent_magics.tools.context import SessionServices

State = Literal["building", "ready", "failed", "closed"]

USER_DIR = ".agent_magics"
SNAPSHOT_DIR = "shell_snapshots"
CAPTURE_TIMEOUT_S = 10.0
"""Longest wait for the profile to run once; slower profiles keep ``bash -lc``."""
CHECK_TIMEOUT_S = 5.0
NAME = re.compile(r"^(\d+)-[0-9a-f]+\.sh$")

_live: weakref.WeakSet[ShellSnapshot] = weakref.WeakSet()


def default_folder() -> Path:
    return Path.home() / USER_DIR / SNAPSHOT_DIR


class ShellSnapshot:
    """One session's snapshot of a bash login shell, built by a background thread."""

    def __init__(
        self,
        shell: str,
        cwd: Path,
        env: Mapping[str, str],
        redact: Callable[[str], str] = lambda text: text,
        folder: Path | None = None,
    ) -> None:
        self.shell = shell
        self.cwd = cwd
        self._env = dict(env)
        self._redact = redact
        self.folder = folder or default_folder()
        self.state: State = "building"
        self.failure: str | None = None
        self.path: Path | None = None
        self._stamp: tuple[int, ...] = ()
        self._shell_real = os.path.realpath(shutil.which(shell) or shell)
        self._lock = threading.Lock()
        self._done = threading.Event()

    def start(self) -> ShellSnapshot:
        if not _live:
            atexit.register(_close_all)
        _live.add(self)
        threading.Thread(target=self._build, name="shell-snapshot", daemon=True).start()
        return self

    def wait(self, timeout: float) -> bool:
        """Wait until the snapshot is ready or failed; True when it is ready."""
        self._done.wait(timeout)
        return self.state == "ready"

    # -- building --------------------------------------------------------------------------

    def _build(self) -> None:
        try:
            dir_fd = _own_folder(self.folder)
            try:
                _remove_stale(dir_fd)
                found = capture(self.shell, self.cwd, self._env, CAPTURE_TIMEOUT_S, self._wanted)
                self._write(dir_fd, render(found, self._env, self._redact))
            finally:
                os.close(dir_fd)
            self._check()
        except (_SnapshotFailed, OSError) as exc:
            self._fail(str(exc))
        else:
            with self._lock:
                if self.state == "building":
                    self.state = "ready"
        finally:
            self._done.set()

    def _wanted(self) -> bool:
        """Asked once each process of the build started: False when the session closed."""
        with self._lock:
            return self.state != "closed"

    def _write(self, dir_fd: int, text: bytes) -> None:
        name = f"{os.getpid()}-{secrets.token_hex(8)}.sh"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, text)
            done = os.fstat(fd)
        finally:
            os.close(fd)
        with self._lock:
            self.path = Path(os.path.realpath(self.folder)) / name
            self._stamp = _stamp(done)
            closed = self.state == "closed"
        if closed:
            self._remove()
            raise _SnapshotFailed("the session closed")

    def _check(self) -> None:
        """Source the snapshot in a plain ``bash -c``: it must succeed and print nothing."""
        assert self.path is not None
        env = {**self._env, "BASH_ENV": str(self.path)}
        proc = subprocess.Popen(
            [self.shell, "-c", ":"],
            cwd=self.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        if not self._wanted():
            signal_group(proc.pid)
            proc.communicate()  # reaped, its pipe closed
            raise _SnapshotFailed("the session closed")
        try:
            out, _ = proc.communicate(timeout=CHECK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            signal_group(proc.pid)
            proc.communicate()
            raise _SnapshotFailed("sourcing the snapshot did not finish") from None
        if proc.returncode != 0 or out:
            raise _SnapshotFailed(
                f"sourcing the snapshot failed ({proc.returncode}): {out[:200]!r}"
            )

    def _fail(self, reason: str) -> None:
        with self._lock:
            if self.state != "closed":
                self.state, self.failure = "failed", reason
        self._remove()

    # -- use -------------------------------------------------------------------------------

    def command(
        self, argv: Sequence[str], env: Mapping[str, str]
    ) -> tuple[list[str], dict[str, str]] | None:
        """``argv`` and ``env`` rewritten to source the snapshot instead of the profile,
        or None when ``argv`` is not ``[this bash, "-lc", script]`` or the snapshot
        cannot be used (then the command runs as asked)."""
        if self.state != "ready" or len(argv) != 3 or argv[1] != "-lc":
            return None
        if os.path.realpath(shutil.which(argv[0]) or argv[0]) != self._shell_real:
            return None
        path = self.path
        try:
            intact = path is not None and _stamp(os.lstat(path)) == self._stamp
        except OSError:
            intact = False
        if not intact or path is None:
            self._fail("the snapshot file changed on disk")
            return None
        return [argv[0], "-c", argv[2]], {**env, "BASH_ENV": str(path)}

    def close(self) -> None:
        """Drop the snapshot and remove the file; never blocks. A login shell still
        running the profile is left to finish it (its result is thrown away): a profile
        stopped half-way can leave a lock behind (pyenv's rehash lock, taken before its
        exit trap is set, makes every later login shell wait 60 s). Only a profile that
        runs past :data:`CAPTURE_TIMEOUT_S` is stopped."""
        with self._lock:
            self.state = "closed"
        self._remove()
        _live.discard(self)

    def _remove(self) -> None:
        with self._lock:
            path, self.path = self.path, None
        if path is not None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _stamp(st: os.stat_result) -> tuple[int, ...]:
    kind_ok = stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
    return (
        int(kind_ok),
        stat.S_IMODE(st.st_mode),
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_ctime_ns,
    )


def _own_folder(folder: Path) -> int:
    """An open descriptor of ``folder``, created 0700 when missing; refused when it is a
    symlink, not a folder or not ours (its mode is tightened to 0700 when it is ours)."""
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid():
        os.close(fd)
        raise _SnapshotFailed(f"{folder} belongs to another user")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.fchmod(fd, 0o700)
    return fd


def _remove_stale(dir_fd: int) -> None:
    """Remove snapshots whose process is gone (a kernel killed before it could clean up)."""
    for name in os.listdir(dir_fd):
        found = NAME.match(name)
        if found and int(found[1]) != os.getpid() and not _alive(int(found[1])):
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dir_fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _close_all() -> None:
    for snapshot in list(_live):
        snapshot.close()


# -- a session's snapshot ------------------------------------------------------------------

STATE_KEY = "shell_snapshot"


class _Slot:
    current: ShellSnapshot | None = None


def snapshot_of(services: SessionServices) -> ShellSnapshot | None:
    """The session's snapshot (building, ready or failed), or None when it has none."""
    return services.state(STATE_KEY, _Slot).current


def startup_is_trusted(
    cwd: Path, approval: ApprovalPolicy | None = None, sandbox: SandboxMode | None = None
) -> bool:
    """Whether the shell's start-up files lie outside the roots the model's commands may
    write in a session working in ``cwd`` (whatever the turn's sandbox mode, as for
    known-safe commands: :func:`agent_magics.tools.runtimes.shell.model_writable_roots`).

    Under ``-a never -s danger-full-access`` they count as trusted wherever they lie:
    every command then runs unasked and unconfined, so what the files could do the model
    can do anyway, and commands keep the login shell Codex gives them."""
    if approval is ApprovalPolicy.NEVER and sandbox is SandboxMode.DANGER_FULL_ACCESS:
        return True
    return shell_startup_is_trusted(writable_roots(cwd, SandboxMode.WORKSPACE_WRITE))


def startup_notice(
    cwd: Path, approval: ApprovalPolicy | None = None, sandbox: SandboxMode | None = None
) -> str | None:
    """The sentence a session shows once when its commands skip the shell's start-up
    files (:func:`startup_is_trusted`), else ``None``; also ``None`` when the home holds
    none of them, since then nothing is missing from commands."""
    if startup_is_trusted(cwd, approval, sandbox):
        return None
    if not any(os.path.lexists(path) for path in shell_start_files()):
        return None
    return (
        f"Commands run in a shell that reads no start-up file (~/.bashrc, ~/.profile, ...): "
        f"the home ({Path.home()}) lies where commands may write, so those files may be "
        "the repository's or the model's. What they would set (aliases, PATH changes, "
        "pyenv or conda set-up) is missing from commands; the kernel's Python is on PATH."
    )


def sync_shell_snapshot(
    services: SessionServices,
    *,
    enabled: bool,
    shell: str,
    shell_kind: str,
    cwd: Path,
    redact: Callable[[str], str],
    approval: ApprovalPolicy | None = None,
    sandbox: SandboxMode | None = None,
) -> None:
    """Start the session's snapshot when it is on and has none yet (bash only); remove
    it when the setting was turned off. None is made when the start-up files are not
    trusted (:func:`startup_is_trusted`): the snapshot runs them unconfined, and
    commands read none of them then."""
    slot = services.state(STATE_KEY, _Slot)
    if not enabled or shell_kind != "bash" or not startup_is_trusted(cwd, approval, sandbox):
        if slot.current is not None:
            slot.current.close()
            slot.current = None
        return
    if slot.current is None:
        env = command_env("", unified=True)
        slot.current = ShellSnapshot(shell, cwd, env, redact).start()


def close_shell_snapshot(services: SessionServices) -> None:
    sync_shell_snapshot(
        services, enabled=False, shell="", shell_kind="", cwd=Path(), redact=lambda t: t
    )


async def snapshot_command(
    services: SessionServices,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    approval: ApprovalPolicy | None = None,
    sandbox: SandboxMode | None = None,
) -> tuple[list[str], Mapping[str, str]]:
    """What to spawn for ``argv`` in a session working in ``cwd``.

    Start-up files not trusted (:func:`startup_is_trusted`): a shell that reads none.
    Else a login shell's script after the line that puts the agent's Python first on
    ``PATH`` again (:func:`spawn_argv`), through the session's snapshot; while the
    snapshot is still being built the command waits for it (a login shell would read
    the same profile just as long, and print its noise, such as pyenv's "cannot
    rehash" inside the read-only sandbox, into the command's output). Without a usable
    snapshot (failed, off, not bash) it runs as it is."""
    if not startup_is_trusted(cwd, approval, sandbox):
        return spawn_argv(argv, startup=False), env
    argv = spawn_argv(argv)
    snapshot = snapshot_of(services)
    if snapshot is not None and snapshot.state == "building":
        await asyncio.to_thread(snapshot.wait, CAPTURE_TIMEOUT_S + CHECK_TIMEOUT_S)
    rewritten = snapshot.command(argv, env) if snapshot is not None else None
    return rewritten if rewritten is not None else (argv, env)
