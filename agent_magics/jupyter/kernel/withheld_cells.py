"""The notebook context without the graded answers a teacher withholds.

Under ``solution_cells = "withhold"`` a cell nbgrader marks as a solution never reaches
the model: not through read_notebook (:mod:`agent_magics.tools.notebook.graded`), and not here,
in the cells the person ran that each turn is told about. The kernel hears a cell's
source, not its marks, so the marks are read from the saved notebook: a cell is withheld
when its id is a withheld cell's id (JupyterLab sends the id of each cell it runs) or
its source is a withheld cell's source (nbclient and papermill send no id, but run the
saved source). When the notebook cannot be read, no cell's text is sent: with nothing to
tell the answers apart, all of them are kept back.

Variables a withheld cell defines stay in the namespace: the person's later cells use
them, and list_variables and inspect_variable show values, not the cell's text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from agent_magics.jupyter.kernel.cell_log import (
    SOURCE_HEAD_CHARS,
    SOURCE_TAIL_CHARS,
    CellLog,
    CellRecord,
    clip,
)
from agent_magics.jupyter.kernel.notebook_context import NotebookContext, notebook_path
from agent_magics.tools.notebook.graded import withheld_sources


def _withheld(path: Path | None) -> tuple[set[str], set[str]] | None:
    """The ids and sources of the withheld cells of the notebook at ``path``, or None
    when it cannot be read."""
    if path is None:
        return None
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        cells = notebook["cells"]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not isinstance(cells, list):
        return None
    return withheld_sources((c for c in cells if isinstance(c, Mapping)), "withhold")


def kept_cells(cells: list[CellRecord], path: Path | None) -> tuple[list[CellRecord], int]:
    """``cells`` without the withheld ones, and how many were left out."""
    found = _withheld(path)
    if found is None:
        return [], len(cells)
    ids, sources = found
    clipped = {clip(s, SOURCE_HEAD_CHARS, SOURCE_TAIL_CHARS).text() for s in sources}
    kept = [c for c in cells if c.cell_id not in ids and c.source.text() not in clipped]
    return kept, len(cells) - len(kept)


class GradedNotebookContext(NotebookContext):
    """:class:`NotebookContext` that leaves out, and only counts, the cells the teacher's
    policy withholds (``solution_cells`` reads it at each turn)."""

    def __init__(
        self,
        log: CellLog,
        solution_cells: Callable[[], str],
        env: Mapping[str, str] = os.environ,
    ) -> None:
        super().__init__(log, env)
        self.solution_cells = solution_cells

    def _text(
        self, cwd: Path, new_conversation: bool, cells: list[CellRecord], dropped: int
    ) -> str | None:
        if cells and self.solution_cells() == "withhold":
            user_ns = getattr(self.log.shell, "user_ns", None) or {}
            named = notebook_path(Path.cwd(), self.env, user_ns)
            cells, hidden = kept_cells(cells, None if named is None else Path.cwd() / named)
            dropped += hidden
        return super()._text(cwd, new_conversation, cells, dropped)
