"""``read_notebook``: a Jupyter notebook as numbered cells, never as raw JSON.

Each cell shows its number, id, type, execution count and source; outputs follow as
text (cut in the middle when long), errors without terminal colours, and images listed
by size. With ``include_images`` the images are attached the way ``view_image`` sends
them (same size limits and formats), at most :data:`MAX_IMAGES` per call.

The notebook this kernel belongs to is read from its editor's document when a
:class:`LiveNotebook` can reach it (the file may lack the person's unsaved edits), else
from the file, with a line that says so.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_magics.errors import RespondToModel
from agent_magics.events import GradedCellsNoted
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ContentItem, ToolInvocation, ToolOutput
from agent_magics.tools.images import IMAGE_DETAIL, UnreadableImage, prepare_image
from agent_magics.tools.notebook.document import (
    LiveNotebook,
    LiveUnavailable,
    read_notebook_file,
    render,
    used_live,
)
from agent_magics.tools.notebook.graded import (
    NOTED_KEY,
    add_notes,
    entries,
    fresh,
    shown_path,
    touched_ids,
    withheld,
    withheld_sources,
)
from agent_magics.tools.notebook.masking import OutputMask, Withheld
from agent_magics.tools.sandbox.platform import off_limits
from agent_magics.tools.spec import FunctionSpec, ToolSpec, boolean, number, obj, string

READ_NOTEBOOK_DESCRIPTION = (
    "Show a Jupyter notebook (.ipynb) as numbered cells: each cell's id (what edit_notebook "
    "takes), type, execution count and source, then its outputs as text. Use it instead of "
    "reading the notebook's JSON. Images in outputs are listed; ask for them with "
    "include_images to see them."
)


def read_notebook_spec(config: ToolsConfig) -> ToolSpec:
    params = obj(
        {
            "path": string("The notebook file, absolute or relative to the working folder."),
            "start_cell": number("Number of the first cell to show, counted from 1."),
            "end_cell": number("Number of the last cell to show; the last cell if omitted."),
            "include_outputs": boolean("Show the cells' outputs (true by default)."),
            "include_images": boolean("Attach the images found in the outputs shown."),
        },
        ["path"],
    )
    return FunctionSpec("read_notebook", READ_NOTEBOOK_DESCRIPTION, params)


MAX_IMAGES = 8
"""Output images attached to one read_notebook answer."""
MAX_CELL_NUMBER = 1 << 31


class ReadNotebookArgs(BaseModel):
    path: str
    start_cell: int = Field(default=1, ge=1, le=MAX_CELL_NUMBER)
    end_cell: int | None = Field(default=None, ge=1, le=MAX_CELL_NUMBER)
    include_outputs: bool = True
    include_images: bool = False


def _images(found: list[tuple[str, bytes]]) -> tuple[list[ContentItem], list[str]]:
    items: list[ContentItem] = []
    notes: list[str] = []
    for label, raw in found:
        if len(items) >= MAX_IMAGES:
            notes.append(f"{label}: not attached (at most {MAX_IMAGES} images per call)")
            continue
        try:
            image = prepare_image(raw)
        except UnreadableImage:
            notes.append(f"{label}: not attached (not an image that can be decoded)")
            continue
        items.append({"type": "input_text", "text": f"{label}:"})
        items.append({"type": "input_image", "image_url": image.data_url(), "detail": IMAGE_DETAIL})
    return items, notes


FROM_FILE_AGAIN = "(read from the file, as before: unsaved edits in the editor are not shown)"
SAID_WHY = "read_notebook.said_why"
"""Session state: holds :data:`FROM_FILE` once the session was told why the open notebook
is read from its file (told once a session, not once a turn)."""
FROM_FILE = "from_file"


async def _read_open(live: LiveNotebook, path: Path, said: bool) -> tuple[Any, str, bool]:
    """The open notebook from its editor, or from its file with a line saying why (the
    why once: ``said`` when an earlier call of the session gave it), and whether it came
    from the file."""
    try:
        doc = await live.open()
    except LiveUnavailable as exc:
        nb = await asyncio.to_thread(read_notebook_file, path)
        if said:
            return nb, FROM_FILE_AGAIN, True
        why = f"(read from the file: unsaved edits in the editor are not shown, {exc.reason})"
        return nb, why, True
    try:
        return doc.notebook(), "(read from the editor's document, unsaved edits included)", False
    finally:
        await doc.close()


async def _note_reads(
    inv: ToolInvocation, live: LiveNotebook | None, path: Path, cells: Any, policy: str
) -> None:
    """Note the graded cells this call showed the model, once a turn each (see
    :mod:`agent_magics.tools.notebook.graded`): in the turn's saved output always, and in
    the open notebook's metadata through its editor (``live``), as a read never writes
    a file."""
    notes = entries(inv.turn.thread_id, touched_ids(cells, policy), "read")
    notes = fresh(inv.services.state(NOTED_KEY, list), inv.turn, str(path), notes)
    if not notes:
        return
    inv.emit(GradedCellsNoted(inv.call_id, shown_path(path, inv.turn.cwd), tuple(notes)))
    if live is None:
        return
    try:
        doc = await live.open()
        try:
            await doc.note(lambda metadata: add_notes(metadata, notes))
        finally:
            await doc.close()
    except LiveUnavailable:
        pass  # the editor went away after the read: the model's answer stands


class ReadNotebookHandler:
    """The ``read_notebook`` tool; ``live`` reaches the notebook this kernel belongs to."""

    name = "read_notebook"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def __init__(
        self,
        live: LiveNotebook | None = None,
        solution_cells: Callable[[], str] = lambda: "edit",
        also_withheld: Callable[[], Withheld] = Withheld,
    ) -> None:
        self.live = live
        self.solution_cells = solution_cells  # the teacher's policy, read at each call
        self.also_withheld = also_withheld  # the kernel's notebook's, for any notebook read

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return read_notebook_spec(config)

    def _mask(self, nb: Any, policy: str) -> Callable[[str], str]:
        """The mask of the outputs shown: the lines of the notebook's own withheld
        answers and of the kernel's notebook's (a saved output ties no frame to a cell)."""
        if policy != "withhold":
            return str
        _, sources = withheld_sources(nb.cells, policy)
        found = Withheld.of(sources) | self.also_withheld()
        return OutputMask(found) if found else str

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(ReadNotebookArgs, inv)
        end = args.end_cell if args.end_cell is not None else MAX_CELL_NUMBER
        if end < args.start_cell:
            raise RespondToModel("end_cell must not be smaller than start_cell")
        path = inv.resolve(args.path)
        if (why := off_limits(inv.turn.cwd, path)) is not None:
            raise RespondToModel(why)
        policy = self.solution_cells()
        live: LiveNotebook | None = None
        if self.live is not None and await self.live.owns(path):
            live = used_live(inv.services, self.live)
            said: set[str] = inv.services.state(SAID_WHY, set)  # tools are made per turn
            nb, source, from_file = await _read_open(live, path, FROM_FILE in said)
            if from_file:
                said.add(FROM_FILE)
                live = None  # the file of the open notebook is never written
        else:
            nb, source = await asyncio.to_thread(read_notebook_file, path), ""
        if args.start_cell > max(len(nb.cells), 1):
            raise RespondToModel(f"start_cell {args.start_cell} is past the last cell")
        hide = functools.partial(withheld, solution_cells=policy)
        mask = self._mask(nb, policy)
        text, found = render(nb, path, args.start_cell, end, args.include_outputs, hide, mask)
        await _note_reads(inv, live, path, nb.cells[args.start_cell - 1 : end], policy)
        if source:
            head, _, rest = text.partition("\n")
            text = f"{head} {source}\n{rest}" if rest else f"{head} {source}"
        if not (args.include_images and found):
            return ToolOutput(text)
        if not inv.turn.supports_images:
            return ToolOutput(text + "\n(images cannot be attached: this model takes no images)")
        items, notes = await asyncio.to_thread(_images, found)
        head = "\n".join([text, *notes])
        return ToolOutput([{"type": "input_text", "text": head}, *items])
