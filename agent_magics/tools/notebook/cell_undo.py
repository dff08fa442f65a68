"""The agent's edits to the open notebook, kept so that ``%agent undo`` can take them back.

An edit of the notebook this kernel belongs to goes into its editor's document (no file
is written), so the file undo of :mod:`agent_magics.store.undo` never sees it. Each live
edit that succeeded is kept here for the turn (:func:`record_cell_edit`): the cell's id,
its source as the agent left it, and what was there before. Undo reverts them through the
same document, newest first, and only where the cell still is as the agent left it: an
inserted cell is deleted while it holds the agent's source, a replaced one gets its old
source back while it holds the agent's, a deleted one is inserted again at its position
unless a cell with its id is back. A cell the person changed since is left as it is and
named. Nothing read back from disk decides what is reverted: only what this process kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.errors import RespondToModel

if TYPE_CHECKING:
    from agent_magics.tools.context import SessionServices
    from agent_magics.tools.notebook.document import LiveDocument, LiveNotebook

CELL_EDITS_KEY = "live_cell_edits"
"""The session's state (:meth:`SessionServices.state`) that lists this turn's live edits."""
PLACE_LINE_CHARS = 40  # of a cell's first line, in the words that name it for a person
REVERTED_CELLS = "The user took back your edits to the open notebook {path}: {cells}."
"""What the model is told in its next request."""
LATER = "changed after the turn; undoing would lose that change"
GONE = "no longer in the notebook"


def shown_line(source: str) -> str:
    """A cell's first line as a person finds it (``"import pandas as pd"``, cut with …),
    or ``empty``."""
    lines = source.strip().splitlines()
    first = lines[0].strip() if lines else ""
    if len(first) > PLACE_LINE_CHARS or len(lines) > 1:
        first = first[: PLACE_LINE_CHARS - 1].rstrip() + "…"
    return f'"{first}"' if first else "empty"


@dataclass(frozen=True, eq=False)
class CellEdit:
    """One edit the agent made to the open notebook ``path``. ``position`` counts from 0:
    where the inserted cell went, the replaced cell stood, the deleted cell was.
    ``before``: the whole cell before a replace or delete; ``after``: the agent's source
    and cell type (insert, replace)."""

    live: LiveNotebook = field(repr=False)
    path: Path
    mode: str
    cell_id: str
    position: int
    before: dict[str, Any] | None = None
    after: str | None = None
    after_type: str | None = None

    def record(self) -> dict[str, Any]:
        """The edit as the session file keeps it (positions from 1, as a person counts)."""
        before = None if self.before is None else str(self.before.get("source", ""))
        return {"edit": self.mode, "path": str(self.path), "cell_id": self.cell_id,
                "position": self.position + 1, "before": before, "after": self.after}  # fmt: skip

    def named(self) -> str:
        """The cell as the undo question names it."""
        if self.mode == "insert":
            return f"cell {self.position + 1} ({shown_line(self.after or '')}, which it inserted)"
        old = shown_line(str((self.before or {}).get("source", "")))
        if self.mode == "replace":
            return f"cell {self.position + 1} ({shown_line(self.after or '')}, back to {old})"
        return f"cell {self.position + 1} ({old}, which it deleted)"


def record_cell_edit(services: SessionServices, edit: CellEdit) -> None:
    """Keep ``edit`` for the turn's undo (called once the edit reached the document)."""
    edits: list[CellEdit] = services.state(CELL_EDITS_KEY, list)
    edits.append(edit)


def take_cell_edits(services: SessionServices) -> tuple[CellEdit, ...]:
    """The live edits made since the last call (a turn's, at its end)."""
    edits: list[CellEdit] = services.state(CELL_EDITS_KEY, list)
    taken = tuple(edits)
    edits.clear()
    return taken


def plain_cell(cell: Any) -> dict[str, Any]:
    """A copy of a parsed cell made of plain JSON values, kept apart from the notebook."""
    copied: dict[str, Any] = json.loads(json.dumps(cell))
    return copied


def cells_question(edits: tuple[CellEdit, ...]) -> str:
    """What the undo question says of the notebook's cells."""
    if not edits:
        return ""
    paths = ", ".join(dict.fromkeys(e.path.name for e in edits))
    named = "; ".join(e.named() for e in reversed(edits))
    return (
        f"Undo takes back the agent's edits to the open notebook {paths}: {named}. A cell "
        "changed since the turn is left as it is."
    )


async def revert_cells(edits: tuple[CellEdit, ...]) -> tuple[list[str], list[str]]:
    """Take back ``edits`` (newest first) through the notebook's document: the cells
    reverted, and those left as they are with why. Raises
    :class:`~agent_magics.tools.notebook.document.LiveUnavailable` when the document cannot be
    reached before anything was changed."""
    done: list[str] = []
    left: list[str] = []
    docs: dict[int, LiveDocument] = {}
    try:
        for edit in edits:  # reach every document first: all or nothing when one is away
            if id(edit.live) not in docs:
                docs[id(edit.live)] = await edit.live.open()
        for edit in reversed(edits):
            try:
                said = await _revert(docs[id(edit.live)], edit)
            except RespondToModel as exc:  # the cell moved away meanwhile
                said = (False, f"{edit.named()}: {exc}")
            (done if said[0] else left).append(said[1])
    finally:
        for doc in docs.values():
            await doc.close()
    return done, left


async def _revert(doc: LiveDocument, edit: CellEdit) -> tuple[bool, str]:
    """Revert one edit: whether it was, and the cell named with what happened (the cell
    alone is read, not the whole notebook)."""
    if not edit.cell_id:
        return False, f"{edit.named()}: its notebook's cells have no ids to find it by"
    at = doc.find(edit.cell_id)
    if edit.mode == "delete":
        assert edit.before is not None
        if at is not None:
            return False, f"{edit.named()}: a cell with its id is in the notebook again"
        after = min(edit.position, doc.count()) - 1
        await doc.apply("insert", None if after < 0 else after, edit.before)
        return True, f"cell {after + 2} ({shown_line(str(edit.before.get('source', '')))}) put back"
    if at is None:
        return False, f"{edit.named()}: {GONE}"
    cell = doc.cell(at)
    now = f"cell {at + 1} ({shown_line(str(cell.get('source', '')))})"
    if str(cell.get("source", "")) != edit.after or cell.get("cell_type") != edit.after_type:
        return False, f"{now}: {LATER}"
    if edit.mode == "insert":
        await doc.apply("delete", at, None)
        return True, f"{now} removed"
    await doc.apply("replace", at, edit.before)
    return True, f"{now} given back its source from before the turn"


def cells_outcome(path_names: str, done: list[str], left: list[str]) -> str:
    """The sentences that tell what undo did in the open notebook."""
    text = f"In the open notebook {path_names}: " + "; ".join(done) + "." if done else ""
    if left:
        text += f" Left as they are in {path_names}: " + "; ".join(left) + "."
    return text.strip()
