"""The graded answers a teacher withholds, as this kernel knows them: kept out of the
notebook context, and their lines masked in every other output the model gets.

Under ``solution_cells = "withhold"`` a cell nbgrader marks as a solution never reaches
the model: not through read_notebook (:mod:`agent_magics.tools.notebook.graded`), and not here,
in the cells the person ran that each turn is told about. The kernel hears a cell's
source, not its marks, so the marks are read from the saved notebook: a cell is withheld
when its id is a withheld cell's id (JupyterLab sends the id of each cell it runs) or
its source is a withheld cell's source (nbclient and papermill send no id, but run the
saved source). When the notebook cannot be read, no cell's text is sent: with nothing to
tell the answers apart, all of them are kept back.

The answers' lines also travel in other cells' outputs (a test cell's traceback through
the answer, a print of its source) and in run_python's: :class:`KernelWithheld` gives the
one mask (:mod:`agent_magics.tools.notebook.masking`) they all go through, with the saved
answers and the source each withheld cell last ran (an unsaved edit included), and ties
a traceback's frames to the cells whose code they ran through IPython's own caches.

Variables a withheld cell defines stay in the namespace: the person's later cells use
them, and list_variables and inspect_variable show values, not the cell's text (a value
that quotes its lines, ``In`` or a string of its source, goes through the same mask).
"""

from __future__ import annotations

import json
import linecache
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_magics.jupyter.kernel.cell_log import (
    SOURCE_HEAD_CHARS,
    SOURCE_TAIL_CHARS,
    CellLog,
    CellRecord,
    Clip,
    clip,
)
from agent_magics.jupyter.kernel.notebook_context import NotebookContext, notebook_file
from agent_magics.tools.notebook.graded import withheld_sources
from agent_magics.tools.notebook.masking import OutputMask, Withheld

Found = tuple[set[str], set[str]]
"""The ids and the sources of a notebook's withheld cells."""
_CELL_REF = re.compile(r"In\[(\d+)\]")


def _read(path: Path) -> Found | None:
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        cells = notebook["cells"]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not isinstance(cells, list):
        return None
    return withheld_sources((c for c in cells if isinstance(c, Mapping)), "withhold")


class KernelWithheld:
    """The withheld cells of the notebook ``shell`` belongs to, read from its file when
    the teacher's policy (``solution_cells``, read at each call) withholds them; the
    file is parsed again only when it changed."""

    def __init__(
        self,
        shell: Any,
        log: CellLog,
        solution_cells: Callable[[], str],
        env: Mapping[str, str] = os.environ,
    ) -> None:
        self.shell = shell
        self.log = log
        self.solution_cells = solution_cells
        self.env = env
        self._cached: tuple[object, Found | None] | None = None

    def active(self) -> bool:
        return self.solution_cells() == "withhold"

    def found(self) -> Found | None:
        """The ids and sources of the withheld cells, or None when the notebook is not
        known or cannot be read."""
        path = notebook_file(self.shell, self.env)
        if path is None:
            return None
        try:
            info = path.stat()
        except OSError:
            return None
        key = (str(path), info.st_ino, info.st_size, info.st_mtime_ns)
        if self._cached is None or self._cached[0] != key:
            self._cached = (key, _read(path))
        return self._cached[1]

    def withheld(self) -> Withheld:
        """What the policy withholds now: the saved answers and what their cells last
        ran; nothing when the policy withholds nothing or the notebook cannot be read."""
        found = self.found() if self.active() else None
        if found is None:
            return Withheld()
        ids, sources = found
        return Withheld.of([*sources, *self.log.sources_of(ids)])

    def mask(self) -> OutputMask | None:
        """The mask of this kernel's outputs, or None when nothing is withheld."""
        withheld = self.withheld()
        return OutputMask(withheld, self.code_of) if withheld else None

    def code_of(self, ref: str) -> list[str]:
        """The code a traceback frame names (a file IPython compiled a cell under, or
        ``In[N]``), as the kernel's caches hold it: the compiled copy and the raw one."""
        names = getattr(getattr(self.shell, "compile", None), "_filename_map", None)
        numbers: dict[str, int] = dict(names) if isinstance(names, dict) else {}
        match = _CELL_REF.fullmatch(ref)
        number = int(match[1]) if match is not None else numbers.get(ref)
        files = [n for n, c in numbers.items() if c == number] if match is not None else [ref]
        codes = []
        for name in files:
            entry: Any = linecache.cache.get(name)  # never the disk: a name in an output is data
            lines = entry[2] if isinstance(entry, tuple) and len(entry) > 2 else None
            if isinstance(lines, list):
                codes.append("".join(str(line) for line in lines))
        history = getattr(getattr(self.shell, "history_manager", None), "input_hist_raw", None)
        if isinstance(number, int) and isinstance(history, list) and 0 <= number < len(history):
            codes.append(str(history[number]))
        return codes


def kept_cells(cells: list[CellRecord], found: Found | None) -> tuple[list[CellRecord], int]:
    """``cells`` without the withheld ones, and how many were left out."""
    if found is None:
        return [], len(cells)
    ids, sources = found
    clipped = {clip(s, SOURCE_HEAD_CHARS, SOURCE_TAIL_CHARS).text() for s in sources}
    kept = [c for c in cells if c.cell_id not in ids and c.source.text() not in clipped]
    return kept, len(cells) - len(kept)


def masked_clip(text: Clip, mask: OutputMask) -> Clip:
    """A copy of ``text`` masked; where the budget cut it, the pieces of lines at the
    cut are kept only when they cannot be part of a withheld line."""
    kept = Clip(text.head_budget, text.tail_budget)
    if not text.cut:
        kept.head = mask(text.head + text.tail)
        return kept
    kept.head = mask(text.head, cut_after=not text.head.endswith("\n"))
    kept.tail = mask(text.tail, cut_before=True)
    kept.cut = text.cut
    return kept


def masked_record(record: CellRecord, mask: OutputMask) -> CellRecord:
    """A copy of ``record`` with its output and error masked (the log keeps its own)."""
    error = None if record.error is None else masked_clip(record.error, mask)
    return replace(record, output=masked_clip(record.output, mask), error=error)


class GradedNotebookContext(NotebookContext):
    """:class:`NotebookContext` that leaves out, and only counts, the cells the teacher's
    policy withholds, and masks their lines in the outputs of the others."""

    def __init__(
        self, log: CellLog, withheld: KernelWithheld, env: Mapping[str, str] = os.environ
    ) -> None:
        super().__init__(log, env)
        self.withheld = withheld

    def _text(
        self, cwd: Path, new_conversation: bool, cells: list[CellRecord], dropped: int
    ) -> str | None:
        if cells and self.withheld.active():
            cells, hidden = kept_cells(cells, self.withheld.found())
            dropped += hidden
            mask = self.withheld.mask()
            if mask is not None:
                cells = [masked_record(cell, mask) for cell in cells]
        return super()._text(cwd, new_conversation, cells, dropped)
