"""A budgeted look at the working folder, to find the files commands changed in a turn.

The first scan of a turn keeps, besides each file's size, mtime, mode and inode, the
content of the small ones (the originals a diff and an undo need); the scan at the
turn's end keeps the stats only.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from agent_magics.store.diff import FileState, read_state

MAX_SCAN_FILES = 20_000
"""Regular files looked at per scan; files past it are not caught."""
MAX_KEPT_FILE_BYTES = 1 << 20
"""Largest file whose content the first scan keeps (a larger one gets no diff or undo)."""
MAX_KEPT_TOTAL_BYTES = 32 << 20
"""Content kept by one scan, all files together."""
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".agent_magics",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)
"""Folders a scan does not enter: version control, our own files, caches, environments."""
JUPYTER_FILES = (
    # jupyter_server (FileCheckpoints): a copy of each file as last saved, per folder.
    ".ipynb_checkpoints",
    # jupyter_server (atomic saving): the copy of a file it keeps while it replaces it.
    ".~*",
    # jupyter-lsp: the code of the open notebooks, written for the language servers.
    ".virtual_documents",
    # jupyter-collaboration (pycrdt-store's SQLiteYStore, in the folder the server was
    # started in): the history of every open document, SQLite's journal beside it (the
    # -wal and -shm files when the store is set to WAL), and the old store, moved aside
    # as .jupyter_ystore(1).db when its version changes.
    ".jupyter_ystore.db",
    ".jupyter_ystore.db-journal",
    ".jupyter_ystore.db-wal",
    ".jupyter_ystore.db-shm",
    ".jupyter_ystore([0-9]*).db",
    # jupyter-collaboration 5 (in .jupyter/ of the server's root folder): the sessions
    # that may reconnect, written again each time a client joins a document's room.
    "collaboration_sessions.json",
)
"""Names (patterns) of the files and folders a Jupyter server or front end keeps beside
the notebooks, at any depth: never the agent's changes, so a scan skips them (a change
the agent's own file tools make there is still the agent's)."""

Stamp = tuple[int, int, int, int]  # size, mtime_ns, mode, inode


def stamp(path: Path) -> Stamp | None:
    """What a scan notes of ``path`` (None: not a regular file there)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_size, info.st_mtime_ns, info.st_mode, info.st_ino)


@dataclass
class Scan:
    root: Path
    stats: dict[str, Stamp] = field(default_factory=dict)
    kept: dict[str, FileState] = field(default_factory=dict)
    complete: bool = True

    def covers(self, path: Path) -> bool:
        """Whether a file at ``path`` would have been seen by this scan."""
        try:
            parts = path.relative_to(self.root).parts
        except ValueError:
            return False
        return (
            self.complete
            and not any(p in SKIPPED_DIRS for p in parts[:-1])
            and not any(jupyter_file(p) for p in parts)
        )

    def changed(self, later: Scan) -> list[str]:
        """Paths that came, went or moved between this scan and ``later`` (a file that
        came is counted only when this scan saw everything)."""
        out = [p for p, s in self.stats.items() if later.stats.get(p, s) != s]
        if later.complete:
            out += [p for p in self.stats if p not in later.stats]
        if self.complete:
            out += [p for p in later.stats if p not in self.stats]
        return sorted(set(out))


def jupyter_file(name: str) -> bool:
    """Whether a file or folder named ``name`` is one of :data:`JUPYTER_FILES`."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in JUPYTER_FILES)


def _own_notebook(name: str, path: str) -> bool:
    """The kernel's own notebook: its editor saves it while the turn runs."""
    if not name.endswith(".ipynb"):
        return False
    from agent_magics.tools.notebook.document import is_own_notebook

    return is_own_notebook(Path(path))


def scan_folder(root: Path, keep: bool) -> Scan:
    """The regular files under ``root`` (symlinks not followed, :data:`SKIPPED_DIRS` not
    entered, :data:`JUPYTER_FILES` left out), at most :data:`MAX_SCAN_FILES`; ``keep``:
    also the small files' content."""
    found = Scan(root)
    kept_bytes = 0
    todo = [str(root)]
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if jupyter_file(entry.name):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if entry.name not in SKIPPED_DIRS:
                    todo.append(entry.path)
                continue
            if not stat.S_ISREG(info.st_mode) or _own_notebook(entry.name, entry.path):
                continue
            if len(found.stats) >= MAX_SCAN_FILES:
                found.complete = False
                return found
            found.stats[entry.path] = (info.st_size, info.st_mtime_ns, info.st_mode, info.st_ino)
            small = info.st_size <= MAX_KEPT_FILE_BYTES
            if keep and small and kept_bytes + info.st_size <= MAX_KEPT_TOTAL_BYTES:
                state = read_state(Path(entry.path), MAX_KEPT_FILE_BYTES)
                if state is not None and state.data is not None:
                    found.kept[entry.path] = state
                    kept_bytes += len(state.data)
    return found
