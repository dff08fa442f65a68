"""``edit_notebook``: replace, insert or delete one cell of a notebook file, through nbformat.

The edit is made on the parsed notebook, which is validated before anything is written,
so the file on disk is always a valid notebook of its own nbformat version with its
metadata kept. An edit of an open notebook reads the cell it names and validates the
cell it writes, nothing else (:mod:`agent_magics.tools.notebook.cells`), and goes into
the editor's document as one change. It is a write like apply_patch: the same approval
rule (inside the writable roots it runs, outside it asks, or is refused under
``never``), the same confinement to the writable roots, and an atomic replace.

The notebook this kernel belongs to is open in an editor whose unsaved edits a write
would lose, so its file is never written: with a :class:`LiveNotebook` (the kernel's
bridge to JupyterLab's collaborative document) the edit goes into the editor's own
document under the same approval and confinement rules; without one, or when the
bridge cannot reach the editor, the model is told so in one sentence and the card shows
the proposed cell for the person to paste. Another notebook a Jupyter server holds open
is treated the same way (:meth:`LiveNotebooks.held_open`): a write would make the
server reload it from disk over what the person typed and it had not saved yet.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel

from agent_magics.errors import RespondToModel
from agent_magics.events import GradedCellsNoted
from agent_magics.text.rust import io_error_text
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.notebook.cell_undo import CellEdit, record_cell_edit
from agent_magics.tools.notebook.cells import ParsedCells, PlannedEdit, checked_cell, plan_edit
from agent_magics.tools.notebook.document import (
    OWN_NOTEBOOK,
    HeldNotebook,
    LiveDocument,
    LiveNotebook,
    LiveNotebooks,
    LiveUnavailable,
    NotebookCells,
    NotebookFiles,
    dumps,
    is_own_notebook,
    live_unavailable,
    nbformat_module,
    plain_replace,
    read_notebook_file,
    used_live,
)
from agent_magics.tools.notebook.graded import (
    add_notes,
    entries,
    shown_path,
)
from agent_magics.tools.runtimes.notebook_write import guarded_write
from agent_magics.tools.sandbox.platform import off_limits
from agent_magics.tools.sandbox.roots import (
    confined_files,
    is_writable,
    write_denied,
)
from agent_magics.tools.spec import FunctionSpec, ToolSpec, obj, string

EDIT_NOTEBOOK_DESCRIPTION = (
    "Change one cell of a Jupyter notebook file (.ipynb). edit_mode `replace` (the "
    "default) sets the source of the cell `cell_id` (and its type, if given), `insert` adds "
    "a new cell after `cell_id` (at the top when cell_id is omitted; cell_type is then "
    "required), `delete` removes the cell `cell_id`. Cell ids are shown by read_notebook. "
    "The notebook stays valid; a replaced code cell loses its stale outputs."
)


def edit_notebook_spec(config: ToolsConfig) -> ToolSpec:
    params = obj(
        {
            "path": string("The notebook file, absolute or relative to the working folder."),
            "cell_id": string("Id of the cell to change, or to insert after."),
            "new_source": string("The cell's new source (not used by delete)."),
            "cell_type": string("code, markdown or raw; required by insert."),
            "edit_mode": string("replace (default), insert or delete."),
        },
        ["path"],
    )
    return FunctionSpec("edit_notebook", EDIT_NOTEBOOK_DESCRIPTION, params)


class EditNotebookArgs(BaseModel):
    path: str
    cell_id: str | None = None
    new_source: str = ""
    cell_type: Literal["code", "markdown", "raw"] | None = None
    edit_mode: Literal["replace", "insert", "delete"] = "replace"


def plan(cells: NotebookCells, args: EditNotebookArgs, solution_cells: str = "edit") -> PlannedEdit:
    """The edit ``args`` asks for, planned on ``cells`` (see :func:`plan_edit`)."""
    return plan_edit(cells, args.edit_mode, args.cell_id, args.cell_type, args.new_source,
                     solution_cells)  # fmt: skip


def apply_edit(nb: Any, args: EditNotebookArgs, solution_cells: str = "edit") -> PlannedEdit:
    """Make the edit on the parsed notebook ``nb`` in place."""
    planned = plan(ParsedCells(nb), args, solution_cells)
    if args.edit_mode == "insert":
        nb.cells.insert(planned.at, planned.cell)
    elif planned.cell is None:
        del nb.cells[planned.at]
    else:
        nb.cells[planned.at] = planned.cell
    return planned


def _validated(nb: Any) -> bytes:
    try:
        return dumps(nb)
    except nbformat_module().ValidationError as exc:
        first = str(exc).strip().splitlines()[0]
        raise RespondToModel(f"the edit would make the notebook invalid: {first}") from None


def _prepare(
    path: Path, args: EditNotebookArgs, solution_cells: str, session: str
) -> tuple[bytes, str, str, list[dict[str, str]]]:
    """The edited notebook's bytes, the report line, where the edit acts, and the notes
    for the teacher: an edit of a graded cell is noted in the same write (see
    :func:`agent_magics.tools.notebook.graded.add_notes`)."""
    nb = read_notebook_file(path)
    planned = apply_edit(nb, args, solution_cells)
    notes = entries(session, planned.touched, "edit")
    add_notes(nb.metadata, notes)
    return _validated(nb), planned.line, planned.place, notes


def _noted(inv: ToolInvocation, path: Path, notes: list[dict[str, str]]) -> None:
    """The edit's notes for the teacher, told to the turn's saved output too."""
    if notes:
        inv.emit(GradedCellsNoted(inv.call_id, shown_path(path, inv.turn.cwd), tuple(notes)))


class LiveEdit(NamedTuple):
    """An edit checked on the open notebook's cells (:func:`_prepare_live`)."""

    line: str  # what reports it
    position: int | None  # the cell :meth:`LiveDocument.apply` takes, as the document found it
    cell: dict[str, Any] | None  # the new cell
    place: str  # where it acts
    undo: CellEdit  # what undo needs to take it back
    touched: list[str]  # the grade id of the graded cell it changes, if any


def _prepare_live(
    doc: LiveDocument, args: EditNotebookArgs, live: LiveNotebook, path: Path, solution_cells: str
) -> LiveEdit:
    """The edit planned on the open notebook's cells, the one cell it writes validated,
    before anyone is asked: the cell it names is read, none of the others."""
    planned = plan(doc, args, solution_cells)
    cell = None if planned.cell is None else dict(planned.cell)
    if cell is not None:
        checked_cell(cell, doc.version())
    kept = planned.before if cell is None else cell
    undo = CellEdit(live, path, args.edit_mode, str((kept or {}).get("id") or ""), planned.at,
                    planned.before, None if cell is None else str(cell.get("source", "")),
                    None if cell is None else str(cell.get("cell_type")))  # fmt: skip
    return LiveEdit(planned.line, planned.named, cell, planned.place, undo, planned.touched)


async def _apply_live(
    inv: ToolInvocation, doc: LiveDocument, path: Path, args: EditNotebookArgs, edit: LiveEdit
) -> tuple[str, bool]:
    """Make the checked ``edit`` in the open notebook's document, with its note for the
    teacher in the same change, and keep it for ``%agent undo``."""
    notes = entries(inv.turn.thread_id, edit.touched, "edit")
    try:
        if notes:
            await doc.apply(args.edit_mode, edit.position, edit.cell, lambda m: add_notes(m, notes))
        else:
            await doc.apply(args.edit_mode, edit.position, edit.cell)
    except LiveUnavailable as exc:
        return live_unavailable(path, exc.reason, exc.maybe), False
    _noted(inv, path, notes)
    record_cell_edit(inv.services, edit.undo)
    return f"{edit.line} in {path}, the notebook open in the user's editor", True


def _outside(held: HeldNotebook | None, confined: tuple[Path, ...] | None) -> bool:
    """Whether the file of another open notebook's document lies outside the writable
    roots of a confined edit: the path the model gave may name another file by now."""
    return held is not None and confined is not None and not is_writable(held.target, [*confined])


async def _edit_opened(
    inv: ToolInvocation, path: Path, args: EditNotebookArgs, live: LiveNotebook, policy: str
) -> tuple[str, bool]:
    """An allowed edit of a notebook that a server opened while the person was asked: it
    goes into the editor's document, as it would have had the notebook been open before."""
    try:
        doc = await live.open()
    except LiveUnavailable as exc:
        return live_unavailable(path, exc.reason, exc.maybe), False
    try:
        return await _apply_live(inv, doc, path, args, _prepare_live(doc, args, live, path, policy))
    finally:
        await doc.close()


def _describe(path: Path, args: EditNotebookArgs, place: str) -> str:
    head = f"{args.edit_mode} {place} of {path}"
    return head if args.edit_mode == "delete" else f"{head}:\n{args.new_source}"


class EditNotebookHandler:
    """The ``edit_notebook`` tool; ``live`` reaches the notebook this kernel belongs to,
    and the others a Jupyter server holds open."""

    name = "edit_notebook"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def __init__(
        self, live: LiveNotebooks | None = None, solution_cells: Callable[[], str] = lambda: "edit"
    ) -> None:
        self.live = live
        self.solution_cells = solution_cells  # the teacher's policy, read at each call

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return edit_notebook_spec(config)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(EditNotebookArgs, inv)
        path = inv.resolve(args.path)
        if (why := off_limits(inv.turn.cwd, path)) is not None:
            raise RespondToModel(why)
        if self.live is not None and await self.live.owns(path):
            return await self._edit_open(inv, path, args, used_live(inv.services, self.live))
        if is_own_notebook(path):
            raise RespondToModel(OWN_NOTEBOOK)
        if self.live is not None:
            try:
                held = await self.live.held_open(path)
            except LiveUnavailable as exc:  # open, or maybe: its file is not written either
                return ToolOutput(live_unavailable(path, exc.reason, exc.maybe), success=False)
            if held is not None:
                return await self._edit_open(inv, path, args, held, held)
        policy, session = self.solution_cells(), inv.turn.thread_id
        data, line, place, notes = await asyncio.to_thread(_prepare, path, args, policy, session)

        async def write_file(confined: tuple[Path, ...] | None) -> tuple[str, bool]:
            if self.live is not None:  # asked again: it may have been opened meanwhile
                try:
                    held = await self.live.held_open(path)
                except LiveUnavailable as exc:
                    return live_unavailable(path, exc.reason, exc.maybe), False
                if _outside(held, confined):
                    return write_denied(path), False
                if held is not None:
                    return await _edit_opened(inv, path, args, held, policy)
            written = inv.services.before_write([path])
            try:
                if confined is not None:
                    files = confined_files(list(confined), inv.turn.read_only_paths)
                    where = NotebookFiles(files.roots, files.read_only)
                    await asyncio.to_thread(where.replace, str(path), data)
                else:
                    await asyncio.to_thread(plain_replace, str(path), data)
            except (OSError, ValueError) as exc:
                return f"failed to write {path}: {io_error_text(exc)}", False
            finally:
                if written is not None:
                    written()
            _noted(inv, path, notes)
            return f"{line} in {path}", True

        return await guarded_write(
            inv, path, _describe(path, args, place), place, write_file, inv.turn.read_only_paths
        )

    async def _edit_open(
        self,
        inv: ToolInvocation,
        path: Path,
        args: EditNotebookArgs,
        live: LiveNotebook,
        held: HeldNotebook | None = None,
    ) -> ToolOutput:
        """The open notebook (``held``: another one a server holds open): the edit goes
        into its editor's document, or the model is told in one sentence why it could
        not (nobody is asked for what cannot be done)."""
        try:
            doc = await live.open()
        except LiveUnavailable as exc:
            return ToolOutput(live_unavailable(path, exc.reason, exc.maybe), success=False)
        try:
            edit = _prepare_live(doc, args, live, path, self.solution_cells())

            async def write_open(confined: tuple[Path, ...] | None) -> tuple[str, bool]:
                if _outside(held, confined):
                    return write_denied(path), False
                return await _apply_live(inv, doc, path, args, edit)

            # the edit goes into the editor's document, not the file kept read-only
            return await guarded_write(
                inv, path, _describe(path, args, edit.place), edit.place, write_open
            )
        finally:
            await doc.close()
