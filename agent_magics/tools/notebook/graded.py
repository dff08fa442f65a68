"""Cells nbgrader marks: the student's graded answers and the teacher's tests and texts.

nbgrader keeps its marks in each cell's ``metadata.nbgrader`` (``solution``, ``grade``,
``locked``, ``task``, ``grade_id``, ``points``, ``schema_version``). Its validator and
autograder match cells by ``grade_id`` and compare a checksum of the source, the cell
type, the marks and the points of every locked cell (grade cells are always locked,
solution cells never); a solution cell's type is checked against the one it was given.
The position of a cell is checked nowhere, but a deleted graded cell is a lost answer or
a lost test. So, whatever the teacher's policy says:

* a locked cell (nbgrader's rule, a ``task`` cell, or a cell Jupyter itself marks
  ``editable: false``) is never written, replaced or deleted;
* no cell nbgrader marks, or Jupyter marks ``deletable: false`` (as nbgrader's
  ``LockCells`` does), is deleted, and no graded cell is turned into another cell type.

The policy's ``solution_cells`` adds: ``read-only`` keeps edits out of solution cells;
``withhold`` also keeps their source and outputs from the model (hidden tests, which
only the teacher's copy holds, are withheld with them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

SolutionCells = Literal["edit", "read-only", "withhold"]
HIDDEN_TESTS = "### BEGIN HIDDEN TESTS"
"""nbgrader's marker of the tests a grade cell keeps from the students."""
WITHHELD = (
    "[withheld: the teacher keeps this graded answer from the agent; its source and "
    "outputs are not shown]"
)
"""What read_notebook shows instead of a withheld cell."""
READ_NOTEBOOK_INSTEAD = (
    "This notebook holds graded answers the teacher withholds from the agent, so its "
    "raw JSON is not read here; use read_notebook, which shows the other cells."
)


def marks(cell: Mapping[str, Any]) -> Mapping[str, Any]:
    """The cell's ``metadata.nbgrader`` (empty when it has none or it is not a mapping)."""
    metadata = cell.get("metadata")
    found = metadata.get("nbgrader") if isinstance(metadata, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def is_solution(cell: Mapping[str, Any]) -> bool:
    return bool(marks(cell).get("solution"))


def is_graded(cell: Mapping[str, Any]) -> bool:
    """Whether nbgrader marks the cell at all (an answer, a test, a task or a locked text)."""
    found = marks(cell)
    return any(bool(found.get(key)) for key in ("solution", "grade", "task", "locked"))


def is_locked(cell: Mapping[str, Any]) -> bool:
    """nbgrader's own rule (a solution cell never, a grade cell always, else its
    ``locked`` mark), a task cell, or a cell Jupyter marks as not editable."""
    found = marks(cell)
    metadata = cell.get("metadata")
    if isinstance(metadata, Mapping) and metadata.get("editable") is False:
        return True
    if found.get("solution"):
        return False
    return bool(found.get("grade") or found.get("task") or found.get("locked"))


def grade_id(cell: Mapping[str, Any], fallback: str) -> str:
    found = marks(cell).get("grade_id")
    return found if isinstance(found, str) and found else fallback


def withheld(cell: Mapping[str, Any], solution_cells: str) -> bool:
    """Whether the policy keeps this cell's source and outputs from the model."""
    if solution_cells != "withhold":
        return False
    if is_solution(cell):
        return True
    source = cell.get("source", "")
    text = "".join(source) if isinstance(source, list) else str(source)
    return bool(marks(cell).get("grade")) and HIDDEN_TESTS in text


def edit_refusal(
    cell: Mapping[str, Any], mode: str, new_type: str | None, solution_cells: str
) -> str | None:
    """The sentence that refuses ``mode`` (replace or delete) on ``cell``, or None when
    the edit may go on."""
    metadata = cell.get("metadata")
    if mode == "delete" and isinstance(metadata, Mapping) and metadata.get("deletable") is False:
        return (
            "The notebook was not changed: the cell is marked as not deletable (the "
            "teacher's or nbgrader's mark), so it stays."
        )
    if not is_graded(cell) and not is_locked(cell):
        return None
    name = grade_id(cell, "this cell")
    kind = "a graded answer" if is_solution(cell) else "part of the graded assignment"
    if is_locked(cell):
        return (
            f"The notebook was not changed: cell {name} is locked by the teacher (nbgrader "
            "checks it is unchanged), so it cannot be edited or deleted; put your code in "
            "another cell."
        )
    if mode == "delete":
        return (
            f"The notebook was not changed: cell {name} is {kind} that nbgrader grades, "
            "so it cannot be deleted."
        )
    if new_type is not None and new_type != cell.get("cell_type"):
        return (
            f"The notebook was not changed: cell {name} is {kind} that nbgrader grades "
            f"as a {cell.get('cell_type')} cell, so its type cannot change."
        )
    if is_solution(cell) and solution_cells != "edit":
        return (
            f"The notebook was not changed: cell {name} is a graded answer and the "
            "teacher's policy keeps the agent from editing graded answers; explain to the "
            "student what to write instead."
        )
    return None


def withheld_sources(
    cells: Iterable[Mapping[str, Any]], solution_cells: str
) -> tuple[set[str], set[str]]:
    """The ids and the sources of the cells ``solution_cells`` withholds."""
    ids: set[str] = set()
    sources: set[str] = set()
    for cell in cells:
        if not withheld(cell, solution_cells):
            continue
        if cell.get("id"):
            ids.add(str(cell["id"]))
        source = cell.get("source", "")
        sources.add("".join(source) if isinstance(source, list) else str(source))
    return ids, sources


NOTE_KEY = "agent_magics"
TOUCHED_KEY = "graded_turns"
"""``metadata.agent_magics.graded_turns``: where a notebook notes the turns that read or
changed its graded cells, for the teacher (a policy reader skips this key). The open
notebook gets them through its editor and a notebook file with the edit that changes
it; every note also goes to the turn's saved output (as an event, see
:class:`agent_magics.events.GradedCellsNoted`), under the same key of its metadata."""
MAX_NOTES = 1000
"""Entries a notebook keeps (the oldest go first): the note must not outgrow the work."""
NOTED_KEY = "graded.noted"
"""Session state: the turn, and the (notebook, grade_id, action) already noted in it."""


def touched_ids(cells: Iterable[Mapping[str, Any]], solution_cells: str) -> list[str]:
    """The grade ids of the graded cells among ``cells`` that the model is shown."""
    return [
        grade_id(cell, str(cell.get("id") or "?"))
        for cell in cells
        if is_graded(cell) and not withheld(cell, solution_cells)
    ]


def shown_path(path: Path, cwd: Path) -> str:
    """``path`` as a note names its notebook: relative to the working folder inside it."""
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def entries(session: str, ids: Iterable[str], action: str) -> list[dict[str, str]]:
    """One note per cell: which session, when (UTC), which cell, read or edit."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    return [{"session": session, "time": now, "grade_id": i, "action": action} for i in ids]


def fresh(
    state: list[Any], turn: object, where: str, notes: list[dict[str, str]]
) -> list[dict[str, str]]:
    """``notes`` not yet noted for ``where`` in this ``turn`` (a turn that reads a
    notebook five times notes each cell once); ``state`` is the session's list that
    remembers them (``[turn, set]``)."""
    if not state or state[0] is not turn:
        state[:] = [turn, set()]
    seen: set[tuple[str, str, str]] = state[1]
    kept = []
    for note in notes:
        key = (where, note["grade_id"], note["action"])
        if key not in seen:
            seen.add(key)
            kept.append(note)
    return kept


def add_notes(metadata: Any, notes: list[dict[str, str]]) -> bool:
    """Append ``notes`` to ``metadata[agent_magics][graded_turns]`` in place; False (and
    nothing changed) when ``metadata.agent_magics`` is there but is not a table (a policy
    that cannot be read, which must stay as the teacher wrote it)."""
    if not notes:
        return True
    ours = metadata.get(NOTE_KEY, {})
    if not isinstance(ours, dict):
        return False
    kept = ours.get(TOUCHED_KEY)
    kept = list(kept) if isinstance(kept, list) else []
    # set, not changed in place: nbformat's metadata copies a table it is given
    metadata[NOTE_KEY] = {**ours, TOUCHED_KEY: [*kept, *notes][-MAX_NOTES:]}
    return True
