"""Undo the last turn: take back what the agent changed, never what the person did.

Only what this process recorded is used (:class:`~agent_magics.store.changes.TurnChanges`
in memory): nothing read back from disk decides what is written or where. Writes go
through :class:`~agent_magics.apply_patch.files.ConfinedFiles` rooted at the working
folder (its ``.git`` and ``.agent_magics`` stay read-only), so a folder swapped for a
symlink after the turn cannot send a write elsewhere. A file the turn changed outside the
working folder, or one too large to have been kept, is named and left as it is.

Each file is handled by who changed it (:mod:`.changes`):

* written by the agent's file tools alone: put back as it was just before those writes
  (``restore``);
* changed while commands ran, when the person may have saved it too: put back as it was
  before the turn only when the person says so, having seen its diff (``asked``; ``%agent
  undo --yes`` skips them and says so, ``--yes --all`` includes them);
* written by the agent's tools and changed by someone else after that: left as it is,
  with the diff of that later change (``left``).

Nothing is restored when any file to restore was changed again since the turn ended:
its content, mode or kind differs from what the turn left, or its path now passes
through a symlink.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_magics.apply_patch.files import MAX_FILE_BYTES, ConfinedFiles
from agent_magics.events import FileDiff
from agent_magics.store.changes import AGENT, CHANGED, COMMANDS, Change, ChangeTracker, TurnChanges
from agent_magics.store.diff import FileState, file_diff, read_state
from agent_magics.tools.notebook.cell_undo import (
    REVERTED_CELLS,
    cells_outcome,
    cells_question,
    revert_cells,
)
from agent_magics.tools.notebook.document import LiveUnavailable
from agent_magics.tools.sandbox.roots import confined_files

REVERTED = "The user reverted the changes of your last turn to: {files}."
"""What the model is told in its next request (the files are as before that turn)."""


UNSURE = (
    "{files} changed while commands ran, and undo cannot tell whether the agent or "
    "someone else changed {them}"
)
TOO_LARGE = "too large to have been kept"
LATER = "changed after the agent wrote it; restoring would lose that change"


def _names(changes: list[Change]) -> str:
    return ", ".join(c.shown for c in changes)


@dataclass(frozen=True)
class UndoPlan:
    """What an undo of ``turn`` would do, or the sentence refusing it: ``restore`` (the
    agent's own writes, taken back exactly), ``asked`` (changed while commands ran:
    only on the person's word), ``left`` (not restored, and why)."""

    turn: TurnChanges
    restore: list[Change] = field(default_factory=list)
    asked: list[Change] = field(default_factory=list)
    left: list[tuple[Change, str]] = field(default_factory=list)
    refusal: str | None = None

    def summary(self) -> str:
        """The question: what will be restored, what only if asked, what cannot be."""
        text = cells_question(self.turn.cells)
        if self.restore:
            n = len(self.restore)
            files = "1 file to its state" if n == 1 else f"{n} files to their state"
            text += f" Undo restores {files} before the agent's tools wrote "
            text += f"{_them(self.restore)}: {_names(self.restore)}."
        if self.asked:
            unsure = UNSURE.format(files=_names(self.asked), them=_them(self.asked))
            text += f" {unsure}: restored to their state before the last turn only if you "
            text += "say so (their diffs are below)."
        return text.strip() + self.left_text()

    def left_text(self) -> str:
        if not self.left:
            return ""
        return " Not restored: " + "; ".join(f"{c.shown} ({why})" for c, why in self.left) + "."

    def skipped_text(self) -> str:
        """What an undo without the asked files says it skipped, and why."""
        if not self.asked:
            return ""
        unsure = UNSURE.format(files=_names(self.asked), them=_them(self.asked))
        return (
            f" Skipped: {unsure} (%agent undo shows their diffs; %agent undo --yes --all "
            "restores them too)."
        )

    def diffs(self) -> list[str]:
        """The diffs the person should see: each asked file's whole change in the turn,
        and what changed in each left file after the agent wrote it."""
        shown = [c.diff.diff for c in self.asked]
        return shown + [c.since for c, _ in self.left if c.origin == CHANGED and c.since]


def _them(changes: list[Change]) -> str:
    return "it" if len(changes) == 1 else "them"


def _changed_since(change: Change) -> bool:
    if os.path.realpath(change.path) != str(change.path):
        return True  # a folder on the way became a symlink (or the name did)
    now = read_state(change.path, MAX_FILE_BYTES)
    if now is None:
        return True
    return now.digest != change.after_digest or (
        now.data is not None and now.mode != change.after_mode
    )


def plan_undo(turn: TurnChanges) -> UndoPlan:
    """Check the files of ``turn`` against what the turn left and sort them."""
    restore: list[Change] = []
    asked: list[Change] = []
    left: list[tuple[Change, str]] = []
    for change in turn.changes:
        if not _inside(change.path, turn.cwd):
            left.append((change, "outside the working folder"))
        elif change.origin == CHANGED:
            left.append((change, LATER))
        else:
            if change.origin == AGENT and change.agent_before is None:
                left.append((change, TOO_LARGE))
            elif change.origin == AGENT:
                restore.append(change)
            if change.asked and change.before is None:
                left.append((change, TOO_LARGE))
            elif change.asked:
                asked.append(change)
    moved = [c for c in turn.changes if c in restore or c in asked if _changed_since(c)]
    refusal = None
    if moved:
        refusal = (
            f"Undo refused: {_names(moved)} changed after the last turn ended, and "
            "restoring would lose that change; nothing was restored."
        )
    elif not restore and not asked and not turn.cells:
        refusal = "Nothing to undo: the last turn changed no file that can be restored."
        refusal += UndoPlan(turn, left=left).left_text()
    return UndoPlan(turn, restore, asked, left, refusal)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _targets(plan: UndoPlan, everything: bool) -> dict[Path, tuple[Change, FileState]]:
    """Each file to write and the state to put back (the asked ones only with
    ``everything``, where the state before the turn wins)."""
    targets: dict[Path, tuple[Change, FileState]] = {}
    for change in plan.restore:
        assert change.agent_before is not None
        targets[change.path] = (change, change.agent_before)
    for change in plan.asked if everything else []:
        assert change.before is not None
        targets[change.path] = (change, change.before)
    return targets


def apply_undo(
    plan: UndoPlan, files: ConfinedFiles | None = None, *, everything: bool = False
) -> list[str]:
    """Restore the files of ``plan`` (bytes and mode; created ones removed, deleted ones
    back); the asked ones too with ``everything``. Returns one sentence per file that
    could not be restored."""
    files = files or confined_files([plan.turn.cwd])
    problems: list[str] = []
    for change, state in _targets(plan, everything).values():
        path = str(change.path)
        try:
            if state.data is None:
                if files.kind(path) != "missing":
                    files.remove(path)
                continue
            files.makedirs(os.path.dirname(path))
            files.write(path, state.data, state.mode)
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            problems.append(f"{change.shown} could not be restored: {reason}")
    return problems


def undo_last_turn(tracker: ChangeTracker, plan: UndoPlan, *, everything: bool = False) -> str:
    """Carry out ``plan`` (checked by :func:`plan_undo` just before), the asked files
    too with ``everything``, and tell the model in its next request. The turn is
    forgotten (a second undo has nothing to do), but for the asked files skipped: a
    later ``--all`` can still restore them. Returns what to show the person."""
    problems = apply_undo(plan, everything=everything)
    done = sorted((c for c, _ in _targets(plan, everything).values()), key=lambda c: c.shown)
    if done or not plan.turn.cells:
        tracker.notes.append(REVERTED.format(files=_names(done)))
    if tracker.last is plan.turn:
        rest = [] if everything else [_rest(c) for c in plan.asked]
        tracker.last = TurnChanges(plan.turn.turn, plan.turn.cwd, tuple(rest)) if rest else None
    if everything:
        text = f"Restored to their state before the last turn: {_names(done)}."
    elif done:
        text = f"Restored to their state before the agent's tools wrote them: {_names(done)}."
        text += plan.skipped_text()
    elif plan.asked or not plan.turn.cells:
        text = "Nothing restored." + plan.skipped_text()
    else:
        text = ""  # only cells of the open notebook: the caller tells what became of them
    return " ".join([text + plan.left_text(), *problems])


def undo_record(plan: UndoPlan, *, everything: bool, cells: list[str]) -> dict[str, Any]:
    """The session file's line for an undo: the files put back, and the cells."""
    done = plan.restore + (plan.asked if everything else [])
    line: dict[str, Any] = {"type": "undo", "files": sorted(dict.fromkeys(c.shown for c in done))}
    if cells:
        line["cells"] = cells
    return line


async def undo_turn(
    tracker: ChangeTracker,
    plan: UndoPlan,
    *,
    everything: bool,
    record: Callable[[dict[str, Any]], None] | None = None,
) -> str:
    """Undo the turn of ``plan`` as every front end does: the open notebook's cells it
    edited first, through the editor's document (all of them or, when it cannot be
    reached, nothing at all), then its files (:func:`undo_last_turn`). ``record``: where
    the session file's line goes. Returns what to show the person."""
    edits = plan.turn.cells
    done: list[str] = []
    cells = names = ""
    if edits:
        names = ", ".join(dict.fromkeys(e.path.name for e in edits))
        try:
            done, left = await revert_cells(edits)
        except LiveUnavailable as exc:
            return (
                f"Undo refused: the open notebook {names} cannot be reached ({exc.reason}); "
                "nothing was restored."
            )
        cells = cells_outcome(names, done, left)
    text = undo_last_turn(tracker, plan, everything=everything)
    if record is not None:
        record(undo_record(plan, everything=everything, cells=done))
    if done:
        tracker.notes.append(REVERTED_CELLS.format(path=names, cells="; ".join(done)))
    return " ".join(filter(None, [cells, text]))


def _rest(change: Change) -> Change:
    """An asked file after an undo of the agent's own writes: what is left of its change
    (for a file the agent wrote after commands ran, the part before that write)."""
    if change.origin != AGENT or change.agent_before is None:
        return change
    now = change.agent_before
    status, diff = file_diff(change.shown, change.before, now)
    return Change(
        change.path,
        change.shown,
        change.before,
        now.digest,
        now.mode,
        FileDiff(change.shown, status, diff),
        COMMANDS,
    )
