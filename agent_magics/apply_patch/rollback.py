"""Remember files before they are written so a failed patch can put them back."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from .oserror import io_error_text

__all__ = ["Journal"]


@dataclass(frozen=True)
class _Saved:
    kind: str
    """``"missing"``, ``"file"``, ``"link"`` or ``"other"`` (left alone on rollback)."""
    data: bytes = b""
    mode: int = 0
    link_target: str = ""


class Journal:
    """Records the state of every path before it is first changed, and restores it."""

    def __init__(self) -> None:
        self._saved: dict[str, _Saved] = {}
        self._created_dirs: list[str] = []

    def remember(self, path: str) -> None:
        """Save ``path`` (and, for a symlink, the file it points to) unless already saved."""
        if path in self._saved:
            return
        try:
            info = os.lstat(path)
        except (OSError, ValueError):
            self._saved[path] = _Saved("missing")
            return
        if stat.S_ISLNK(info.st_mode):
            self._saved[path] = _Saved("link", link_target=os.readlink(path))
            self.remember(os.path.realpath(path))
        elif stat.S_ISREG(info.st_mode):
            with open(path, "rb") as handle:
                data = handle.read()
            self._saved[path] = _Saved("file", data, stat.S_IMODE(info.st_mode))
        else:
            self._saved[path] = _Saved("other")

    def make_parents(self, path: str) -> None:
        """Create the missing parent directories of ``path``, remembering which were new."""
        parent = os.path.dirname(path)
        missing: list[str] = []
        probe = parent
        while probe and not os.path.lexists(probe):
            missing.append(probe)
            up = os.path.dirname(probe)
            if up == probe:
                break
            probe = up
        self._created_dirs += reversed(missing)
        os.makedirs(parent, exist_ok=True)

    def rollback(self) -> list[str]:
        """Put every remembered path back; return the problems met (empty when all went well)."""
        problems: list[str] = []
        for path, saved in reversed(list(self._saved.items())):
            try:
                _restore(path, saved)
            except (OSError, ValueError) as exc:
                problems.append(f"{path}: {io_error_text(exc)}")
        for directory in reversed(self._created_dirs):
            if not os.path.isdir(directory) or os.path.islink(directory):
                continue
            try:
                os.rmdir(directory)
            except (OSError, ValueError) as exc:
                problems.append(f"{directory}: {io_error_text(exc)}")
        return problems


def _restore(path: str, saved: _Saved) -> None:
    if saved.kind == "other":
        return
    current = _kind_now(path)
    if saved.kind == "missing":
        if current in ("file", "link"):
            os.remove(path)
        return
    if saved.kind == "link":
        if current == "link" and os.readlink(path) == saved.link_target:
            return
        if current in ("file", "link"):
            os.remove(path)
        os.symlink(saved.link_target, path)
        return
    if current == "link":
        os.remove(path)
    with open(path, "wb") as handle:
        handle.write(saved.data)
    os.chmod(path, saved.mode)


def _kind_now(path: str) -> str:
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return "missing"
    if stat.S_ISLNK(info.st_mode):
        return "link"
    return "file" if stat.S_ISREG(info.st_mode) else "other"
