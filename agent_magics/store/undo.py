"""Undo the last turn: put the files it changed back as they were before it.

Only what this process recorded is used (:class:`~agent_magics.store.changes.TurnChanges`
in memory): nothing read back from disk decides what is written or where. Writes go
through :class:`~agent_magics.apply_patch.files.ConfinedFiles` rooted at the working
folder (its ``.git`` and ``.agent_magics`` stay read-only), so a folder swapped for a
symlink after the turn cannot send a write elsewhere. A file the turn changed outside the
working folder, or one too large to have been kept, is named and left as it is.

Nothing is restored when any file was changed again since the turn ended: its content,
mode or kind differs from what the turn left, or its path now passes through a symlink.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from agent_magics.apply_patch.files import MAX_FILE_BYTES, ConfinedFiles
from agent_magics.store.changes import Change, ChangeTracker, TurnChanges
from agent_magics.store.diff import read_state
from agent_magics.tools.sandbox.roots import confined_files

REVERTED = "The user reverted the changes of your last turn to: {files}."
"""What the model is told in its next request (the files are as before that turn)."""


def _names(changes: list[Change]) -> str:
    return ", ".join(c.shown for c in changes)


@dataclass(frozen=True)
class UndoPlan:
    """What an undo of ``turn`` would do, or the sentence refusing it."""

    turn: TurnChanges
    restore: list[Change] = field(default_factory=list)
    left: list[tuple[Change, str]] = field(default_factory=list)
    refusal: str | None = None

    def summary(self) -> str:
        """One line for the confirmation: what will be restored and what cannot be."""
        text = f"Undo restores {len(self.restore)} file(s) to their state before the last "
        text += f"turn: {_names(self.restore)}."
        return text + self.left_text()

    def left_text(self) -> str:
        if not self.left:
            return ""
        return " Not restored: " + "; ".join(f"{c.shown} ({why})" for c, why in self.left) + "."


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
    left: list[tuple[Change, str]] = []
    for change in turn.changes:
        if not _inside(change.path, turn.cwd):
            left.append((change, "outside the working folder"))
        elif change.before is None:
            left.append((change, "too large to have been kept"))
        else:
            restore.append(change)
    moved = [c for c in restore if _changed_since(c)]
    refusal = None
    if moved:
        refusal = (
            f"Undo refused: {_names(moved)} changed after the last turn ended, and "
            "restoring would lose that change; nothing was restored."
        )
    elif not restore:
        refusal = "Nothing to undo: the last turn changed no file that can be restored."
        refusal += UndoPlan(turn, left=left).left_text()
    return UndoPlan(turn, restore, left, refusal)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def apply_undo(plan: UndoPlan, files: ConfinedFiles | None = None) -> list[str]:
    """Restore the files of ``plan`` (bytes and mode; created ones removed, deleted ones
    back). Returns one sentence per file that could not be restored."""
    files = files or confined_files([plan.turn.cwd])
    problems: list[str] = []
    for change in plan.restore:
        before = change.before
        assert before is not None
        path = str(change.path)
        try:
            if before.data is None:
                if files.kind(path) != "missing":
                    files.remove(path)
                continue
            files.makedirs(os.path.dirname(path))
            files.write(path, before.data, before.mode)
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            problems.append(f"{change.shown} could not be restored: {reason}")
    return problems


def undo_last_turn(tracker: ChangeTracker, plan: UndoPlan) -> str:
    """Carry out ``plan`` (checked by :func:`plan_undo` just before), tell the model in
    its next request, and forget the turn (a second undo has nothing to do). Returns
    what to show the person."""
    problems = apply_undo(plan)
    tracker.notes.append(REVERTED.format(files=_names(plan.restore)))
    if tracker.last is plan.turn:
        tracker.last = None
    text = f"Restored to their state before the last turn: {_names(plan.restore)}."
    return " ".join([text + plan.left_text(), *problems])
