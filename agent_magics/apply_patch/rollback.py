"""Remember files before they are written so a failed patch can put them back."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from agent_magics.text.rust import io_error_text

from .files import PlainFiles

__all__ = ["Journal"]


@dataclass(frozen=True)
class _Saved:
    kind: str
    """``"missing"``, ``"file"``, ``"link"`` or ``"other"`` (left alone on rollback)."""
    data: bytes = b""
    mode: int = 0
    link_target: str = ""


class Journal:
    """Records the state of every path before it is first changed, and restores it.

    Every read and write goes through ``files``, so a confined patch is undone confined.
    """

    def __init__(self, files: PlainFiles) -> None:
        self._files = files
        self._saved: dict[str, _Saved] = {}
        self._created_dirs: list[str] = []

    def remember(self, path: str) -> None:
        """Save ``path`` (and, for a symlink, the file it points to) unless already saved."""
        if path in self._saved:
            return
        kind = self._files.kind(path)
        if kind == "link":
            target = self._files.readlink(path)
            self._saved[path] = _Saved("link", link_target=target)
            self.remember(os.path.normpath(os.path.join(os.path.dirname(path), target)))
        elif kind == "file":
            data = self._files.read(path)
            self._saved[path] = _Saved("file", data, _mode(path))
        else:
            self._saved[path] = _Saved(kind)

    def make_parents(self, path: str) -> None:
        """Create the missing parent directories of ``path``, remembering which were new."""
        self._created_dirs += self._files.makedirs(os.path.dirname(path))

    def rollback(self) -> list[str]:
        """Put every remembered path back; return the problems met (empty when all went well)."""
        problems: list[str] = []
        for path, saved in reversed(list(self._saved.items())):
            try:
                self._restore(path, saved)
            except (OSError, ValueError) as exc:
                problems.append(f"{path}: {io_error_text(exc)}")
        for directory in reversed(self._created_dirs):
            if self._files.kind(directory) != "other":
                continue  # gone already, or no longer a folder
            try:
                self._files.rmdir(directory)
            except (OSError, ValueError) as exc:
                problems.append(f"{directory}: {io_error_text(exc)}")
        return problems

    def _restore(self, path: str, saved: _Saved) -> None:
        files = self._files
        if saved.kind == "other":
            return
        current = files.kind(path)
        if saved.kind == "missing":
            if current in ("file", "link"):
                files.remove(path)
            return
        if saved.kind == "link":
            if current == "link" and files.readlink(path) == saved.link_target:
                return
            if current in ("file", "link"):
                files.remove(path)
            files.symlink(saved.link_target, path)
            return
        if current == "link":
            files.remove(path)
        files.write(path, saved.data, saved.mode)


def _mode(path: str) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except (OSError, ValueError):
        return 0o644
