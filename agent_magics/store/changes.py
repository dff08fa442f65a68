"""The files a turn changed: each one's original, kept before its first change, and diffs.

A change is seen two ways:

1. Tools that write files (apply_patch, edit_notebook) call
   ``SessionServices.before_write`` with the paths they are about to touch; the tracker
   keeps each file's content and mode the first time in the turn (a file still to be
   created is kept as absent).
2. Any other tool may change anything (commands above all): before the first such call
   of a turn the working folder is scanned (:mod:`.scan`), and at the turn's end again;
   a file whose size, mtime, mode or inode moved, or that came or went, counts as changed,
   its original taken from the first scan.

What is not caught, by design: changes outside the working folder made by commands,
folders in :data:`~agent_magics.store.scan.SKIPPED_DIRS`, files past the scan's budget,
symlinks and other non-regular files, and a change that leaves size, mtime, mode and
inode all equal. A file past the kept-bytes budget is named as changed, with no diff and
no undo.

The originals are also copied to ``<undo folder>/turn-<N>/`` (mode 0700), so a person
can restore by hand after a crash; undo itself uses only what this process recorded (a
copy on disk could have been planted), and a file holding one of the session's secrets
is kept in memory only.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agent_magics.apply_patch.files import MAX_FILE_BYTES
from agent_magics.events import FileDiff
from agent_magics.store.diff import ABSENT, FileState, file_diff, read_state
from agent_magics.store.scan import Scan, scan_folder, stamp

WRITING_TOOLS = frozenset(
    {
        "read_file",
        "list_dir",
        "grep_files",
        "view_image",
        "update_plan",
        "request_user_input",
        "read_notebook",
        "list_variables",
        "inspect_variable",
        "apply_patch",
        "edit_notebook",
    }
)
"""Tools that change no file, or report each path before writing it: no scan for them."""
UNDO_FOLDER_MODE = 0o700


@dataclass(frozen=True)
class Change:
    """One file a turn changed. ``before`` is ``None`` when it was too large to keep."""

    path: Path
    shown: str
    before: FileState | None
    after_digest: str | None
    after_mode: int
    diff: FileDiff


@dataclass(frozen=True)
class TurnChanges:
    turn: int
    cwd: Path
    changes: tuple[Change, ...]

    @property
    def files(self) -> tuple[FileDiff, ...]:
        return tuple(c.diff for c in self.changes)


def shown_path(path: Path, cwd: Path) -> str:
    """``path`` relative to the working folder when inside it, else absolute."""
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return str(path)


@dataclass
class ChangeTracker:
    """The originals of the current turn and the changes of the last one ended.

    ``redact`` takes the session's secrets out of a text (diffs are shown and logged).
    """

    redact: Callable[[str], str] = str
    turn: int = 0
    last: TurnChanges | None = None
    notes: list[str] = field(default_factory=list)
    """Messages for the model's next request (an undo it should know about)."""
    _cwd: Path = field(default_factory=Path.cwd)
    _folder: Path | None = None
    _originals: dict[Path, FileState | None] = field(default_factory=dict)
    _baseline: Scan | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start_turn(self, cwd: Path, folder: Path | None) -> None:
        """A turn begins in ``cwd``; its originals are copied under ``folder`` (``None``:
        memory only)."""
        with self._lock:
            self.turn += 1
            self._cwd = Path(os.path.realpath(cwd))
            self._folder = folder / f"turn-{self.turn}" if folder is not None else None
            self._originals = {}
            self._baseline = None

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    def before_write(self, paths: Iterable[Path]) -> None:
        """Keep the original of each of ``paths`` not yet kept this turn. Never raises:
        a path the model is swapping under us (``realpath`` then fails) is not tracked,
        and the write itself goes on to meet the confined writer's checks."""
        with self._lock:
            for path in paths:
                try:
                    real = Path(os.path.realpath(path))
                    if real not in self._originals:
                        self._originals[real] = self._original(real)
                except (OSError, ValueError):
                    continue

    def _original(self, real: Path) -> FileState | None:
        base = self._baseline
        name = str(real)
        if base is not None and name in base.stats and stamp(real) != base.stats[name]:
            return base.kept.get(name)  # a command changed it since the scan: the scan's
        if base is not None and name not in base.stats and base.covers(real):
            return ABSENT  # created by a command since the scan
        state = read_state(real, MAX_FILE_BYTES)
        self._copy(real, state)
        return state

    def needs_scan(self, names: Iterable[str]) -> bool:
        """Whether the working folder must be scanned before calls of these tools: the
        first call in the turn of a tool that may change files without saying which."""
        return self._baseline is None and any(n not in WRITING_TOOLS for n in names)

    def scan(self) -> None:
        """Take the working folder's state as the turn's original (any thread)."""
        found = scan_folder(self._cwd, keep=True)
        with self._lock:
            self._baseline = found

    def finish(self) -> TurnChanges:
        """The turn's changes (also kept as :attr:`last`)."""
        with self._lock:
            originals = dict(self._originals)
            base = self._baseline
        if base is not None:
            now = scan_folder(self._cwd, keep=False)
            for name in base.changed(now):
                if Path(name) not in originals:
                    found = base.kept.get(name) if name in base.stats else ABSENT
                    originals[Path(name)] = found
                    self._copy(Path(name), found)
        changes = []
        for path in sorted(originals):
            before = originals[path]
            after = read_state(path, MAX_FILE_BYTES)
            if after is None or after == before:
                continue
            shown = shown_path(path, self._cwd)
            status, diff = file_diff(shown, before, after)
            changes.append(
                Change(
                    path,
                    shown,
                    before,
                    after.digest,
                    after.mode,
                    FileDiff(shown, status, self.redact(diff)),
                )
            )
        result = TurnChanges(self.turn, self._cwd, tuple(changes))
        self._write_manifest(result)
        self.last = result
        return result

    # -- the copies on disk ---------------------------------------------------------------

    def _turn_folder(self) -> Path | None:
        folder = self._folder
        if folder is None:
            return None
        try:
            folder.mkdir(mode=UNDO_FOLDER_MODE, parents=True, exist_ok=True)
            os.chmod(folder.parent, UNDO_FOLDER_MODE)
            if os.path.realpath(folder) != str(folder.absolute()):
                return None  # a symlink on the way (planted?): keep nothing there
        except OSError:
            return None
        return folder

    def _copy(self, real: Path, state: FileState | None) -> None:
        if state is None or state.data is None:
            return
        text = state.data.decode("utf-8", errors="replace")
        if self.redact(text) != text:
            return  # holds a secret of the session: memory only
        folder = self._turn_folder()
        if folder is None:
            return
        name = f"{state.digest}.orig"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(folder / name, flags, 0o600)
        except OSError:
            return  # the same content is there already, or the folder is unusable
        with os.fdopen(fd, "wb") as out:
            out.write(state.data)

    def _write_manifest(self, result: TurnChanges) -> None:
        if not result.changes:
            return
        folder = self._turn_folder()
        if folder is None:
            return
        entries = [
            {
                "path": str(c.path),
                "status": c.diff.status,
                "original": None if c.before is None else c.before.digest,
                "mode": None if c.before is None else oct(c.before.mode),
            }
            for c in result.changes
        ]
        body = json.dumps({"turn": result.turn, "files": entries}, indent=1)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(folder / "manifest.json", flags, 0o600)
        except OSError:
            return
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(body + "\n")
