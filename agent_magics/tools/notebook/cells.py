"""One cell's edit, planned on the cells it reads and checked on the cell it writes.

An edit names one cell and makes one cell, so it reads the notebook a cell at a time
(:class:`~agent_magics.tools.notebook.document.NotebookCells`): the open notebook's
document answers from its shared Y document without converting the other cells, a
notebook read from its file from the parsed copy (:class:`ParsedCells`). The cell an
edit writes is checked against nbformat's schema of the notebook's version on its own
(:func:`checked_cell`): the cells it leaves alone are as the editor or the file had them.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, NamedTuple

from agent_magics.errors import RespondToModel
from agent_magics.tools.notebook.cell_undo import plain_cell, shown_line
from agent_magics.tools.notebook.document import (
    LiveUnavailable,
    NotebookCells,
    cell_id,
    nbformat_module,
    no_such_cell,
)
from agent_magics.tools.notebook.graded import edit_refusal, touched_ids


class ParsedCells:
    """:class:`~agent_magics.tools.notebook.document.NotebookCells` of a parsed notebook."""

    def __init__(self, nb: Any) -> None:
        self.nb = nb

    def version(self) -> tuple[int, int]:
        return int(self.nb.nbformat), int(self.nb.nbformat_minor)

    def count(self) -> int:
        return len(self.nb.cells)

    def find(self, wanted: str) -> int | None:
        return next((i for i in range(len(self.nb.cells)) if cell_id(self.nb, i) == wanted), None)

    def ids(self) -> list[str]:
        return [cell_id(self.nb, i) for i in range(len(self.nb.cells))]

    def cell(self, index: int) -> Any:
        return copy.deepcopy(self.nb.cells[index])


def locate(cells: NotebookCells, wanted: str) -> int:
    """Where the cell ``wanted`` is; the model is told the ids there are when none has it."""
    found = cells.find(wanted)
    if found is None:
        raise RespondToModel(no_such_cell(wanted, cells.ids()))
    return found


def checked_version(path: Path, major: Any, minor: Any) -> tuple[int, int]:
    """A document's nbformat version (numbers from a Y document may be floats), refused
    as :func:`~.document.parse` refuses a file's."""
    if not major:
        raise LiveUnavailable("the editor's document was empty when the kernel joined it")
    if int(major) != 4:
        raise RespondToModel(f"{path} uses nbformat {int(major)}; only version 4 is read")
    return 4, int(minor or 0)


def read_content(content: dict[str, Any]) -> Any:
    """A notebook made of plain JSON values (as a Y document gives it) as nbformat reads
    one from a file: multi-line values joined, transient metadata (``trusted``) dropped."""
    from nbformat.v4.nbjson import JSONReader

    return JSONReader().to_notebook(content)  # type: ignore[no-untyped-call]


def read_cell(cell: dict[str, Any], version: tuple[int, int]) -> Any:
    """One cell made of plain JSON values as :func:`read_content` reads it."""
    shell = {"nbformat": version[0], "nbformat_minor": version[1], "metadata": {},
             "cells": [cell]}  # fmt: skip
    return read_content(shell).cells[0]  # a copy: nbformat makes its nodes anew


def checked_cell(cell: Any, version: tuple[int, int]) -> None:
    """Refuse (to the model) a cell that would make a notebook of ``version`` invalid."""
    nbformat = nbformat_module()
    shell = nbformat.from_dict({"nbformat": version[0], "nbformat_minor": version[1],
                                "metadata": {}, "cells": [cell]})  # fmt: skip
    try:
        nbformat.validate(shell)
    except nbformat.ValidationError as exc:
        first = str(exc).strip().splitlines()[0]
        raise RespondToModel(f"the edit would make the notebook invalid: {first}") from None


def new_cell(version: tuple[int, int], kind: str, source: str) -> Any:
    """A new ``code``, ``markdown`` or ``raw`` cell for a notebook of ``version``."""
    v4 = nbformat_module().v4
    make = {"code": v4.new_code_cell, "markdown": v4.new_markdown_cell, "raw": v4.new_raw_cell}
    cell = make[kind](source)
    if version < (4, 5):
        del cell["id"]  # ids came with nbformat 4.5; an older notebook must not have them
    return cell


class PlannedEdit(NamedTuple):
    """One cell's edit, checked against the cells as read (:func:`plan_edit`)."""

    line: str  # what reports it
    named: int | None  # where the cell ``cell_id`` names was read (None: no cell named)
    at: int  # where the new cell goes, or where the replaced or deleted cell is
    cell: Any  # the cell written (a ``NotebookNode``), None for a delete
    place: str  # where the edit acts, as a person finds it
    before: dict[str, Any] | None  # the cell replaced or deleted, as plain JSON
    touched: list[str]  # the grade id of the graded cell it replaces, if any


def plan_edit(
    cells: NotebookCells,
    mode: str,
    wanted: str | None,
    kind: str | None,
    source: str,
    solution_cells: str = "edit",
) -> PlannedEdit:
    """Replace, insert or delete one cell: the cell it names is read, the one it writes
    made. Where it acts reads ``cell 4 ("import pandas as pd")``, ``after cell 2 (...)``
    or ``at the top`` (positions count from 1, before the edit). A cell nbgrader (or the
    teacher's ``solution_cells``) keeps from the agent is refused (see
    :mod:`agent_magics.tools.notebook.graded`)."""
    index: int | None = None
    old: Any = None
    place = "at the top"
    if wanted is not None:
        index = locate(cells, wanted)
        old = cells.cell(index)
        place = f"cell {index + 1} ({shown_line(str(old.get('source', '')))})"
        place = f"after {place}" if mode == "insert" else place
    if mode == "insert":
        if kind is None:
            raise RespondToModel("cell_type is required to insert a cell")
        at = 0 if index is None else index + 1
        cell = new_cell(cells.version(), kind, source)
        line = f"Inserted {kind} cell {cell.get('id') or f'cell-{at + 1}'} as cell {at + 1}"
        return PlannedEdit(line, index, at, cell, place, None, [])
    if index is None:
        raise RespondToModel(f"cell_id is required to {mode} a cell")
    before = plain_cell(old)
    touched = touched_ids([old], solution_cells) if mode == "replace" else []
    refusal = edit_refusal(old, mode, kind, solution_cells)
    if refusal is not None:
        raise RespondToModel(refusal)
    if mode == "delete":
        return PlannedEdit(f"Deleted cell {wanted}", index, index, None, place, before, touched)
    kind = kind or old.cell_type
    if kind != old.cell_type:
        cell = new_cell(cells.version(), kind, source)
        if "id" in old:
            cell["id"] = old["id"]
        if "metadata" in old:
            cell["metadata"] = old["metadata"]
    else:
        cell = old
        cell.source = source
        if kind == "code":
            cell.outputs = []
            cell.execution_count = None
    return PlannedEdit(f"Replaced cell {wanted} ({kind})", index, index, cell, place, before,
                       touched)  # fmt: skip
