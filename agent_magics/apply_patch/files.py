"""The file operations a patch makes, plain or confined to writable roots.

:class:`PlainFiles` acts on paths as given (danger-full-access, and the standalone
program). :class:`ConfinedFiles` cannot be redirected out of its writable roots by a path
that changes meanwhile (a folder swapped for a symlink between the check and the write):
every operation opens the folder that holds its target by walking down from ``/`` one
component at a time with ``O_NOFOLLOW``. A symlink met on the way is read and its text
walked the same way, so the folder finally opened is known by its real path, and that path
is checked before anything is created, written or removed in it. Protected folders
(``.git`` and the like) are refused the same way.

Both refuse to read anything but a regular file (so a FIFO or a device cannot freeze or
fill the process) and read at most :data:`MAX_FILE_BYTES`.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from agent_magics.text.rust import RustIoError

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_SYMLINK_HOPS",
    "MAX_WALK_STEPS",
    "ConfinedFiles",
    "OutsideWritableRoots",
    "PlainFiles",
]

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest file a patch reads (to update, delete or overwrite it)."""
MAX_SYMLINK_HOPS = 40
"""Symlinks followed while resolving one path (Linux's own limit)."""
MAX_WALK_STEPS = 8192
"""Path components visited while resolving one path, re-walks after ``..`` included."""

NOT_REGULAR = "not a regular file"
TOO_LARGE = f"file is larger than {MAX_FILE_BYTES} bytes"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | _NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC


class OutsideWritableRoots(PermissionError):
    """A confined operation reached a place outside the writable roots (``EPERM``)."""

    def __init__(self, path: str) -> None:
        super().__init__(errno.EPERM, os.strerror(errno.EPERM), path)


def _read_fd(fd: int) -> bytes:
    """The bytes of the regular file open as ``fd``, at most :data:`MAX_FILE_BYTES`."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
    if not stat.S_ISREG(mode):
        raise RustIoError(NOT_REGULAR)
    chunks: list[bytes] = []
    size = 0
    while chunk := os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_FILE_BYTES:
            raise RustIoError(TOO_LARGE)
    return b"".join(chunks)


def _write_fd(fd: int, data: bytes, mode: int | None) -> None:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise RustIoError(NOT_REGULAR)
    os.ftruncate(fd, 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    if mode is not None:
        os.fchmod(fd, mode)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _kind(info: os.stat_result | None) -> str:
    if info is None:
        return "missing"
    if stat.S_ISLNK(info.st_mode):
        return "link"
    return "file" if stat.S_ISREG(info.st_mode) else "other"


class PlainFiles:
    """File operations on paths as given; symlinks are followed as the OS does."""

    def read(self, path: str) -> bytes:
        fd = os.open(path, _READ_FLAGS)
        try:
            return _read_fd(fd)
        finally:
            os.close(fd)

    def write(self, path: str, data: bytes, mode: int | None = None) -> None:
        """Create or truncate the regular file ``path`` and write ``data``."""
        fd = os.open(path, _WRITE_FLAGS, 0o666)
        try:
            _write_fd(fd, data, mode)
        finally:
            os.close(fd)

    def kind(self, path: str) -> str:
        """``"missing"``, ``"file"``, ``"link"`` or ``"other"`` (symlinks not followed)."""
        try:
            return _kind(os.lstat(path))
        except (OSError, ValueError):
            return "missing"

    def readlink(self, path: str) -> str:
        return os.readlink(path)

    def makedirs(self, path: str) -> list[str]:
        """Create folder ``path`` and its missing parents; return those created, outer first."""
        missing: list[str] = []
        probe = path
        while probe and not os.path.lexists(probe):
            missing.append(probe)
            up = os.path.dirname(probe)
            if up == probe:
                break
            probe = up
        for folder in reversed(missing):
            try:
                os.mkdir(folder)
            except FileExistsError:
                if not os.path.isdir(folder):
                    raise
        if not os.path.isdir(path):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
        return missing[::-1]

    def remove(self, path: str) -> None:
        os.remove(path)

    def rmdir(self, path: str) -> None:
        os.rmdir(path)

    def symlink(self, target: str, path: str) -> None:
        os.symlink(target, path)


@dataclass(frozen=True)
class ConfinedFiles(PlainFiles):
    """File operations that only change things inside ``roots`` and outside ``read_only``.

    Both hold real paths (symlinks resolved). Reads go anywhere, the same way.
    """

    roots: tuple[Path, ...]
    read_only: tuple[Path, ...] = ()

    def allows(self, path: Path) -> bool:
        """Whether ``path`` (real) is in a root and outside every read-only part."""
        text = str(path)
        inside = any(_within(text, str(root)) for root in self.roots)
        return inside and not any(_within(text, str(p)) for p in self.read_only)

    def _check(self, path: Path) -> None:
        if not self.allows(path):
            raise OutsideWritableRoots(str(path))

    def _open_dir(self, path: str, create: bool = False) -> tuple[int, Path, list[str]]:
        """Open folder ``path`` without following a symlink the kernel's way.

        Returns the descriptor, the folder's real path and the folders created (when
        ``create``; each checked first).
        """
        todo = [part for part in reversed(path.split("/")) if part not in ("", ".")]
        real: list[str] = []
        created: list[str] = []
        fd = os.open("/", _DIR_FLAGS)
        hops = steps = 0
        try:
            while todo:
                steps += 1
                if steps > MAX_WALK_STEPS:
                    raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), path)
                part = todo.pop()
                if part in ("", "."):
                    continue
                if part == "..":
                    real = real[:-1]
                    os.close(fd)
                    fd = -1
                    todo += reversed(real)
                    real = []
                    fd = os.open("/", _DIR_FLAGS)
                    continue
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    here = Path("/", *real, part)
                    self._check(here)
                    try:
                        os.mkdir(part, 0o777, dir_fd=fd)
                        created.append(str(here))
                    except FileExistsError:
                        pass
                    todo.append(part)
                    continue
                except NotADirectoryError:
                    info = os.stat(part, dir_fd=fd, follow_symlinks=False)
                    if not stat.S_ISLNK(info.st_mode):
                        raise
                    hops += 1
                    if hops > MAX_SYMLINK_HOPS:
                        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path) from None
                    target = os.readlink(part, dir_fd=fd)
                    todo += reversed(target.split("/"))
                    if target.startswith("/"):
                        os.close(fd)
                        fd = -1
                        real = []
                        fd = os.open("/", _DIR_FLAGS)
                    continue
                os.close(fd)
                fd = child
                real.append(part)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise
        return fd, Path("/", *real), created

    def _parent(self, path: str, create: bool = False) -> tuple[int, Path, str, list[str]]:
        folder, name = os.path.split(path)
        if name in ("", ".", ".."):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        fd, real, created = self._open_dir(folder or "/", create)
        return fd, real, name, created

    def _follow(self, path: str, fd: int, real: Path, name: str) -> str:
        """The path a symlink at ``name`` in folder ``real`` names, for another walk."""
        return os.path.join(str(real), os.readlink(name, dir_fd=fd))

    def _open_leaf(self, path: str, flags: int, check: bool) -> int:
        """The file at ``path`` opened with ``flags`` through its checked folder's fd,
        following a symlink leaf ourselves (``check``: the leaf must be writable)."""
        for _ in range(MAX_SYMLINK_HOPS + 1):
            fd, real, name, _ = self._parent(path)
            try:
                if check:
                    self._check(real / name)
                try:
                    return os.open(name, flags | _NOFOLLOW, 0o666, dir_fd=fd)
                except OSError as exc:
                    if exc.errno != errno.ELOOP:
                        raise
                    path = self._follow(path, fd, real, name)
            finally:
                os.close(fd)
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)

    def read(self, path: str) -> bytes:
        file_fd = self._open_leaf(path, _READ_FLAGS, check=False)
        try:
            return _read_fd(file_fd)
        finally:
            os.close(file_fd)

    def write(self, path: str, data: bytes, mode: int | None = None) -> None:
        file_fd = self._open_leaf(path, _WRITE_FLAGS, check=True)
        try:
            _write_fd(file_fd, data, mode)
        finally:
            os.close(file_fd)

    def kind(self, path: str) -> str:
        try:
            fd, _, name, _ = self._parent(path)
        except (OSError, ValueError):
            return "missing"
        try:
            return _kind(os.stat(name, dir_fd=fd, follow_symlinks=False))
        except (OSError, ValueError):
            return "missing"
        finally:
            os.close(fd)

    def readlink(self, path: str) -> str:
        fd, _, name, _ = self._parent(path)
        try:
            return os.readlink(name, dir_fd=fd)
        finally:
            os.close(fd)

    def makedirs(self, path: str) -> list[str]:
        fd, _, created = self._open_dir(path, create=True)
        os.close(fd)
        return created

    def _change(self, path: str) -> tuple[int, str]:
        fd, real, name, _ = self._parent(path)
        try:
            self._check(real / name)
        except BaseException:
            os.close(fd)
            raise
        return fd, name

    def remove(self, path: str) -> None:
        fd, name = self._change(path)
        try:
            os.unlink(name, dir_fd=fd)
        finally:
            os.close(fd)

    def rmdir(self, path: str) -> None:
        fd, name = self._change(path)
        try:
            os.rmdir(name, dir_fd=fd)
        finally:
            os.close(fd)

    def symlink(self, target: str, path: str) -> None:
        fd, name = self._change(path)
        try:
            os.symlink(target, name, dir_fd=fd)
        finally:
            os.close(fd)
