"""The files a turn changed: each one's original, kept before its first change, and diffs,
and who is known to have changed it.

A change is seen two ways:

1. Tools that write files (apply_patch, edit_notebook) call
   ``SessionServices.before_write`` with the paths they are about to touch, and the
   function it returns once written: the tracker keeps each file's state just before
   the agent's first write and just after its last one. A file whose state at the
   turn's end is what the agent's last write left, and that nothing changed between two
   of its writes, was changed by the agent alone (:data:`AGENT`): undo can take back
   exactly those writes. One that moved after the agent wrote it (:data:`CHANGED`) was
   changed by someone else too, and undo leaves it alone.
2. Any other tool may change anything (commands above all), and the person may save a
   file while one runs: before the first such call of a turn the working folder is
   scanned (:mod:`.scan`), and at the turn's end again; a file whose size, mtime, mode or
   inode moved, or that came or went, counts as changed, its original taken from the
   first scan. Who changed it cannot be told (:data:`COMMANDS`): undo asks before
   restoring it. A file a command (or the person) changed before the agent wrote it is
   both: undo takes back the agent's writes, and the part before only when asked.

What is not caught, by design: changes outside the working folder made by commands,
folders in :data:`~agent_magics.store.scan.SKIPPED_DIRS`, the files a Jupyter server keeps
beside the notebooks (:data:`~agent_magics.store.scan.JUPYTER_FILES`: they are never the
agent's changes, so they never show in a turn's diff nor make undo refuse), files past
the scan's budget,
symlinks and other non-regular files, and a change that leaves size, mtime, mode and
inode all equal. A file past the kept-bytes budget is named as changed, with no diff and
no undo. The originals are also copied to disk (:mod:`.undo_copies`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent_magics.apply_patch.files import MAX_FILE_BYTES
from agent_magics.events import CellsEdited, Event, FileDiff, ModuleShadowed, TurnDiff
from agent_magics.store.diff import ABSENT, FileState, file_diff, read_state
from agent_magics.store.scan import Scan, scan_folder, stamp
from agent_magics.store.undo_copies import Original, UndoCopies
from agent_magics.tools.approval.shadowing import Stamp, planted_files, shadowing

if TYPE_CHECKING:
    from agent_magics.tools.notebook.cell_undo import CellEdit

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
Origin = Literal["agent", "commands", "changed"]
AGENT: Origin = "agent"
"""Written by the agent's file tools, and by nothing else after them."""
COMMANDS: Origin = "commands"
"""Changed while commands ran: by the agent's commands or by someone else."""
CHANGED: Origin = "changed"
"""Written by the agent's file tools, then changed again by someone else."""


@dataclass(frozen=True)
class Change:
    """One file a turn changed. ``before``: its state at the turn's start (``None`` when
    it was too large to keep); ``agent_before``: its state just before the agent's first
    write (:data:`AGENT` and :data:`CHANGED`); ``since``: for :data:`CHANGED`, the diff
    of what changed after the agent wrote it."""

    path: Path
    shown: str
    before: FileState | None
    after_digest: str | None
    after_mode: int
    diff: FileDiff
    origin: Origin = COMMANDS
    agent_before: FileState | None = None
    since: str = ""

    @property
    def asked(self) -> bool:
        """Whether (part of) the change happened while commands ran, by whom unknown."""
        return self.origin == COMMANDS or (
            self.origin == AGENT and self.agent_before != self.before
        )


@dataclass(frozen=True)
class TurnChanges:
    turn: int
    cwd: Path
    changes: tuple[Change, ...]
    planted: tuple[tuple[str, str], ...] = ()
    """Files the turn left in the working folder that shadow a module Python imports
    (shown path, module): see :mod:`agent_magics.tools.approval.shadowing`."""
    cells: tuple[CellEdit, ...] = ()
    """The turn's edits to the open notebook, made through its editor's document (no file
    changed): see :mod:`agent_magics.tools.notebook.cell_undo`."""

    @property
    def files(self) -> tuple[FileDiff, ...]:
        return tuple(c.diff for c in self.changes)

    def events(self) -> list[Event]:
        """What a front end is told of them: the diffs, the cell edits, the shadows."""
        told: list[Event] = []
        if self.changes:
            told.append(TurnDiff(self.turn, self.files))
        if self.cells:
            told.append(CellsEdited(self.turn, tuple(c.record() for c in self.cells)))
        shown = {c.shown for c in self.changes}
        told += [ModuleShadowed(path, module, path in shown) for path, module in self.planted]
        return told


def shown_path(path: Path, cwd: Path) -> str:
    """``path`` relative to the working folder when inside it, else absolute."""
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return str(path)


@dataclass
class _Writes:
    """The agent's writes to one file in a turn: the state before the first and after
    the last, and the diff of a change someone else made between two of them."""

    before: FileState | None
    after: FileState | None = None
    since: str = ""


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
    _copies: UndoCopies = field(default_factory=lambda: UndoCopies(None, 0))
    _originals: dict[Path, FileState | None] = field(default_factory=dict)
    _writes: dict[Path, _Writes] = field(default_factory=dict)
    _baseline: Scan | None = None
    _planted: dict[Path, tuple[str, Stamp]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start_turn(self, cwd: Path, folder: Path | None, number: int) -> None:
        """Turn ``number`` (the session's count) begins in ``cwd``; its originals are
        copied under ``folder`` (``None``: memory only)."""
        with self._lock:
            self.turn = number
            self._cwd = Path(os.path.realpath(cwd))
            self._copies = UndoCopies(folder, self.turn, self.redact)
            self._originals = {}
            self._writes = {}
            self._baseline = None
            self._planted = {}

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    def before_write(self, paths: Iterable[Path]) -> Callable[[], None]:
        """Keep the state of each of ``paths`` before the agent writes it; returns the
        function to call once the write is done (it keeps what the write left). Never
        raises: a path the model is swapping under us (``realpath`` then fails) is not
        tracked, and the write itself goes on to meet the confined writer's checks."""
        tracked: list[Path] = []
        with self._lock:
            for path in paths:
                try:
                    real = Path(os.path.realpath(path))
                    self._before(real, read_state(real, MAX_FILE_BYTES))
                except (OSError, ValueError):
                    continue
                tracked.append(real)
        return lambda: self._after(tracked)

    def _before(self, real: Path, now: FileState | None) -> None:
        if real not in self._originals:
            self._originals[real] = self._original(real, now)
        writes = self._writes.get(real)
        if writes is None:
            self._writes[real] = _Writes(now)
        elif writes.after is not None and now != writes.after and not writes.since:
            shown = shown_path(real, self._cwd)  # someone else changed it between two writes
            writes.since = self.redact(file_diff(shown, writes.after, now or ABSENT)[1])

    def _after(self, tracked: list[Path]) -> None:
        with self._lock:
            for real in tracked:
                writes = self._writes.get(real)
                if writes is not None:
                    try:
                        writes.after = read_state(real, MAX_FILE_BYTES)
                    except OSError:
                        writes.after = None

    def _original(self, real: Path, now: FileState | None) -> FileState | None:
        """The file's state at the turn's start: the scan's, when a command ran since."""
        base = self._baseline
        name = str(real)
        if base is not None and name in base.stats and stamp(real) != base.stats[name]:
            found = base.kept.get(name)  # changed since the scan: the scan's
        elif base is not None and name not in base.stats and base.covers(real):
            found = ABSENT  # created since the scan
        else:
            found = now
        self._copies.keep(found)
        return found

    def needs_scan(self, names: Iterable[str]) -> bool:
        """Whether the working folder must be scanned before calls of these tools: the
        first call in the turn of a tool that may change files without saying which."""
        return self._baseline is None and any(n not in WRITING_TOOLS for n in names)

    def scan(self) -> None:
        """Take the working folder's state as the turn's original (any thread)."""
        found = scan_folder(self._cwd, keep=True)
        planted = planted_files(self._cwd)
        with self._lock:
            self._baseline, self._planted = found, planted

    def finish(self, cells: tuple[CellEdit, ...] = ()) -> TurnChanges:
        """The turn's changes (also kept as :attr:`last`), with its live notebook edits."""
        with self._lock:
            originals = dict(self._originals)
            writes = dict(self._writes)
            base = self._baseline
            planted_before = self._planted
        if base is not None:
            now = scan_folder(self._cwd, keep=False)
            for name in base.changed(now):
                if Path(name) not in originals:
                    found = base.kept.get(name) if name in base.stats else ABSENT
                    originals[Path(name)] = found
                    self._copies.keep(found)
        changes = []
        for path in sorted(originals):
            before = originals[path]
            after = read_state(path, MAX_FILE_BYTES)
            if after is None or after == before:
                continue
            shown = shown_path(path, self._cwd)
            status, diff = file_diff(shown, before, after)
            origin, since = _origin(writes.get(path), after, shown)
            changes.append(
                Change(
                    path,
                    shown,
                    before,
                    after.digest,
                    after.mode,
                    FileDiff(shown, status, self.redact(diff)),
                    origin,
                    writes[path].before if path in writes else None,
                    self.redact(since),
                )
            )
        planted = self._planted_by_turn(base is not None, planted_before, list(writes))
        result = TurnChanges(self.turn, self._cwd, tuple(changes), planted, cells)
        self._copies.manifest([Original(c.path, c.diff.status, c.before) for c in changes])
        self.last = result
        return result

    def _planted_by_turn(
        self, scanned: bool, before: dict[Path, tuple[str, Stamp]], written: list[Path]
    ) -> tuple[tuple[str, str], ...]:
        """The files shadowing a module that came or changed in the working folder while
        commands ran (its top level, links too: not only what the scan sees), and those
        the agent's own writes left."""
        found: dict[Path, str] = {}
        if scanned:
            for path, (module, now) in planted_files(self._cwd).items():
                if path not in before or before[path][1] != now:
                    found[path] = module
        for path, module in shadowing(written, [self._cwd]):
            if os.path.lexists(path):
                found.setdefault(path, module)
        return tuple((shown_path(p, self._cwd), m) for p, m in sorted(found.items()))


def _origin(writes: _Writes | None, after: FileState, shown: str) -> tuple[Origin, str]:
    """Who changed a file, and for :data:`CHANGED` the diff of what moved after the
    agent's write."""
    if writes is None or (writes.after == writes.before and not writes.since):
        return COMMANDS, ""  # not written, or its writes left it as it was (a failed patch)
    if writes.since:
        return CHANGED, writes.since
    if writes.after != after:
        since = "" if writes.after is None else file_diff(shown, writes.after, after)[1]
        return CHANGED, since
    return AGENT, ""
