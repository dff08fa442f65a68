"""The empty folders bubblewrap mounts over protected paths that do not exist yet, made
for one command and removed once no command uses them.

A command must not create the working folder's ``.git`` (its hooks and config run on the
person's next git command) or ``.agent_magics``, nor the first missing folder of a place
the kernel takes code from. bubblewrap keeps such a path uncreatable by mounting an empty
read-only folder there, and a mount needs a mount point on the host: an empty folder.
Left behind, it would litter every working folder with an empty ``.git``.

It cannot simply go once bubblewrap has set up: removing a mount point on the host
detaches the mount in every other namespace too (Linux 3.18 on), so the command could
then create the path after all. So the folder stays while any command may use it:

- it is made here (not by bubblewrap), and this process notes its identity (device and
  inode), so only a folder made here is ever removed;
- each command holds a shared ``flock`` on it from before it starts until it has ended
  (bubblewrap's PID namespace ends every process of the sandbox with it); a folder is
  removed only under an exclusive lock taken without waiting, that is when no command,
  of this process or another, holds it; and ``rmdir`` removes only an empty folder, so a
  repository the person made there meanwhile (``git init``) stays;
- a command that finds such an empty folder already there (another process's) holds it
  too, so that process cannot remove it under the command; it is not removed here then
  (not made here), and may stay behind when the two runs overlap.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

MODE = 0o755
_LOCK = threading.Lock()
_MADE: dict[Path, tuple[int, int]] = {}
"""The mount points this process made, by path: their device and inode."""


def _open(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def is_empty_dir(path: Path) -> bool:
    """Whether ``path`` is a folder (not a link to one) with nothing in it."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def _hold(path: Path) -> int | None:
    """A descriptor holding ``path`` (shared lock) as a mount point: made now when it is
    missing, or an empty folder already there. ``None``: it is something else (a file,
    a folder with contents, a link, its parent gone) and is not a mount point of ours."""
    for _ in range(8):  # another process may remove it between our look and our lock
        made = False
        try:
            os.mkdir(path, MODE)
            made = True
        except FileExistsError:
            if not is_empty_dir(path):
                return None
        except OSError:
            return None
        try:
            fd = _open(path)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            held = os.fstat(fd)
            now = os.lstat(path)
        except OSError:
            os.close(fd)
            continue
        if held.st_nlink == 0 or (held.st_dev, held.st_ino) != (now.st_dev, now.st_ino):
            os.close(fd)  # removed (and perhaps made again) before we held it
            continue
        if made:
            _MADE[path] = (held.st_dev, held.st_ino)
        return fd
    return None


def _remove_if_unused(path: Path) -> None:
    """Remove ``path`` when this process made it, it is still that folder, empty, and no
    command holds it."""
    made = _MADE.get(path)
    try:
        fd = _open(path)
    except OSError:
        _MADE.pop(path, None)
        return
    try:
        held = os.fstat(fd)
        if made != (held.st_dev, held.st_ino):
            _MADE.pop(path, None)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return  # a running command holds it: the last one to end removes it
        with contextlib.suppress(OSError):  # no longer empty: the person's own now
            os.rmdir(path)
        _MADE.pop(path, None)
    finally:
        os.close(fd)


class Holding:
    """The mount points one command holds; :meth:`release` once it has ended (or never
    started). Releasing twice does nothing."""

    def __init__(self, fds: dict[Path, int]) -> None:
        self._fds = fds
        self.release: Callable[[], None] = lambda: _release(fds)


def _release(fds: dict[Path, int]) -> None:
    with _LOCK:
        held = dict(fds)
        fds.clear()
        for fd in held.values():
            os.close(fd)
        for path in held:
            if path in _MADE:
                _remove_if_unused(path)


def hold(paths: Sequence[Path]) -> tuple[list[Path], Holding]:
    """Hold ``paths`` (protected, missing or empty folders) as mount points for one
    command: the ones held (to mount an empty folder over), and what releases them."""
    fds: dict[Path, int] = {}
    with _LOCK:
        for path in dict.fromkeys(paths):
            fd = _hold(path)
            if fd is not None:
                fds[path] = fd
    return list(fds), Holding(fds)


class HeldArgv(list[str]):
    """A confined argv whose sandbox holds mount points on the host until its command
    ends: whoever starts it calls :func:`release` once the process is reaped, or when it
    could not start. One never started is released when it is dropped."""

    def __init__(self, argv: Sequence[str], holding: Holding) -> None:
        super().__init__(argv)
        self._holding = holding
        self._started = [False]
        started = self._started
        weakref.finalize(self, lambda: None if started[0] else holding.release())

    def started(self) -> None:
        """It has been spawned: only :func:`release` lets go now (not the drop)."""
        self._started[0] = True

    def release(self) -> None:
        self._holding.release()


def started(argv: Sequence[str]) -> None:
    """Note that ``argv`` is being spawned (call just before ``Popen``)."""
    if isinstance(argv, HeldArgv):
        argv.started()


def release(argv: Sequence[str]) -> None:
    """Let go of what ``argv``'s sandbox held (its command has ended or never started)."""
    if isinstance(argv, HeldArgv):
        argv.release()
