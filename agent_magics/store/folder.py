"""Writing in the sessions folder without following a link out of it.

The sessions folder sits in the working folder, where a cloned repository or a command
can plant a symlink in place of anything in it: a session's file, its ``<id>.undo``
folder, a ``turn-<N>`` folder, a ``.gitignore``. So the folder is opened once by its
path (the person chose it; the default one is checked to stay in the working folder by
:func:`~agent_magics.store.paths.sessions_folder`), and everything in it is made, opened
and chmodded through that descriptor with ``O_NOFOLLOW``: a planted symlink makes the
operation fail (``ELOOP``/``ENOTDIR``/``EEXIST``) before anything is created or changed
where it points.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600
IGNORE_FILE = ".gitignore"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_sessions_folder(folder: Path) -> int:
    """``folder`` open as a descriptor, made (0700, with a ``.gitignore`` of ``*``: the
    transcripts are not for the repository it may sit in) when missing."""
    try:
        folder.mkdir(parents=True, mode=FOLDER_MODE)
    except FileExistsError:
        created = False
    else:
        created = True
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    if created:
        try:
            write_new(fd, IGNORE_FILE, b"*\n")
        except FileExistsError:
            pass
        except OSError:
            os.close(fd)
            raise
    return fd


def open_subfolder(parent: int, name: str) -> int:
    """The folder ``name`` in the folder open as ``parent``, made when missing, its mode
    set to 0700 through its own descriptor. Raises OSError when ``name`` is a symlink or
    anything but a folder (nothing is made or changed then)."""
    _plain_name(name)
    with suppress(FileExistsError):
        os.mkdir(name, FOLDER_MODE, dir_fd=parent)
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != FOLDER_MODE:
            os.fchmod(fd, FOLDER_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd


@contextmanager
def folder_chain(folder: Path, names: list[str]) -> Iterator[int]:
    """The descriptor of ``folder/names[0]/names[1]/...``, each made when missing and
    none followed if it is a symlink; closed on leaving."""
    fds = [open_sessions_folder(folder)]
    try:
        for name in names:
            fds.append(open_subfolder(fds[-1], name))
        yield fds[-1]
    finally:
        for fd in fds:
            os.close(fd)


def open_file(parent: int, name: str, flags: int, mode: int = FILE_MODE) -> int:
    """``os.open`` of ``name`` in the folder open as ``parent``, never through a symlink."""
    _plain_name(name)
    return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=parent)


def write_new(parent: int, name: str, data: bytes) -> None:
    """Create ``name`` (0600) in ``parent`` with ``data``; FileExistsError if it is there."""
    fd = open_file(parent, name, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def replace_file(parent: int, name: str, data: bytes) -> None:
    """Write ``name`` (0600) in ``parent`` whole: written aside, then renamed over it (a
    symlink there is replaced, never followed)."""
    aside = f".{name}.{secrets.token_hex(6)}.tmp"
    fd = open_file(parent, aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(aside, name, src_dir_fd=parent, dst_dir_fd=parent)
    except OSError:
        with suppress(OSError):
            os.unlink(aside, dir_fd=parent)
        raise


def _plain_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"not a plain file name: {name!r}")
