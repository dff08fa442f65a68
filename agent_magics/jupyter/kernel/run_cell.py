"""``run_cell``: run a code cell of the kernel's own notebook, its outputs in that cell.

The cell is found in the notebook as the person's editor holds it (the live document of
:mod:`.live_notebook`, unsaved typing included) by its id or position; with ``source``
a new code cell is added first (after the named cell, else at the end). Its code runs as
a numbered cell of the kernel (``In`` keeps it under its number, and the ``%%agent``
cell is numbered after the cells it ran: :mod:`.cell_numbers`), with its outputs
captured as run_python's are (:mod:`.capture`), written into the cell of the live
document while it runs (:mod:`.cell_writer`) and answered to the model within
run_python's budgets.

The code runs in the kernel, so it asks as run_python does, under the same rules and
policies (a teacher's ``run_python = false`` takes this tool away too); the person is
asked about the exact code that runs, read before the question. Stop (the kernel's
stop button) and ``timeout_ms`` interrupt it as they interrupt run_python.

Where the live document cannot be reached (a headless run, no jupyter-collaboration) the
cell is read from the notebook's file, or ``source`` is run, and the model is told once a
session that the outputs are only in the tool's card.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from agent_magics.errors import RespondToModel
from agent_magics.jupyter.kernel.cell_outputs import notebook_outputs
from agent_magics.jupyter.kernel.cell_writer import OutputWriter
from agent_magics.jupyter.kernel.live_notebook import KernelLiveNotebook
from agent_magics.jupyter.kernel.run_python import (
    BAD_TIMEOUT,
    DEFAULT_TIMEOUT_MS,
    HIDDEN_FILES,
    MAX_TIMEOUT_MS,
    run_code,
)
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.notebook.document import (
    LiveDocument,
    LiveUnavailable,
    cell_id,
    find_cell,
    nbformat_module,
    read_notebook_file,
    used_live,
)
from agent_magics.tools.notebook.masking import OutputMask
from agent_magics.tools.runtimes.kernel_code import asked_in_kernel
from agent_magics.tools.spec import FunctionSpec, ToolSpec, number, obj, string

NAME = "run_cell"
SESSION_KEY = (NAME,)
NOTED = "run_cell_unreachable"  # the session's state: the notebooks it said were unreachable

DESCRIPTION = (
    "Run a code cell of the notebook this kernel belongs to, as if the user ran it: its "
    "outputs and execution count land in that cell of their open notebook, and you get "
    "the outputs as run_python gives them. Name the cell by cell_id (as read_notebook "
    "shows it) or by index; give source to add a new code cell (after the named cell, "
    "else at the end) and run it. It runs in the user's kernel, outside the sandbox, and "
    "blocks the kernel while it runs."
)
CELL_ID = "The id of the cell to run (or to add the new cell after), as read_notebook shows."
INDEX = "The cell's position, counted from 0, when no cell_id is given."
SOURCE = "Code for a new code cell, added and then run."
TIMEOUT = (
    f"Interrupt the cell (KeyboardInterrupt) after this many milliseconds "
    f"(default {DEFAULT_TIMEOUT_MS}, at most {MAX_TIMEOUT_MS})."
)
REJECTED = "The user did not allow this cell to run; nothing ran and the notebook is unchanged."
NOT_IN_KERNEL = "run_cell is not available: this session has no IPython shell"
NO_NOTEBOOK = (
    "run_cell found no notebook for this kernel, so no cell can be named: give source to "
    "run new code, or use run_python"
)
BOTH = "give cell_id or index, not both"


class RunCellArgs(BaseModel):
    cell_id: str | None = None
    index: int | None = None
    source: str | None = None
    timeout_ms: float | None = None


@dataclass
class Target:
    """The cell to run: its code, its id (None: in no document), the live document that
    holds it (None: its outputs stay in the card), the cell in words, and the new cell
    to add first (the index it goes after, and the cell), if any."""

    code: str
    ident: str | None
    doc: LiveDocument | None
    place: str
    insert: tuple[int | None, dict[str, Any]] | None


class RunCellHandler:
    """Runs cells of the notebook of ``live`` in ``shell``."""

    name = NAME
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def __init__(
        self,
        shell: Any,
        live: KernelLiveNotebook,
        mask: Callable[[], OutputMask | None] = lambda: None,
    ) -> None:
        self.shell = shell
        self.live = live
        self.mask = mask
        self._said: set[str] = set()  # replaced by the session's own set at the first call

    def spec(self, config: ToolsConfig) -> ToolSpec:
        props = {
            "cell_id": string(CELL_ID),
            "index": number(INDEX),
            "source": string(SOURCE),
            "timeout_ms": number(TIMEOUT),
        }
        return FunctionSpec(self.name, DESCRIPTION, obj(props, []))

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(RunCellArgs, inv)
        if args.cell_id is not None and args.index is not None:
            raise RespondToModel(BOTH)
        timeout_ms = DEFAULT_TIMEOUT_MS if args.timeout_ms is None else args.timeout_ms
        if not 1 <= timeout_ms <= MAX_TIMEOUT_MS:
            raise RespondToModel(BAD_TIMEOUT)
        if args.source is not None and not args.source.strip():
            raise RespondToModel("source is empty: give the code of the new cell")
        if self.shell is None:
            raise RespondToModel(NOT_IN_KERNEL)
        self._said = inv.services.state(NOTED, set)
        target, unreachable = await self._target(inv, args)
        images = inv.turn.supports_images

        async def run() -> ToolOutput:
            return await self._run(target, timeout_ms, images, unreachable)

        try:
            return await asked_in_kernel(inv, self.name, target.code, SESSION_KEY, REJECTED, run)
        finally:
            if target.doc is not None:
                await target.doc.close()

    async def _target(self, inv: ToolInvocation, args: RunCellArgs) -> tuple[Target, str | None]:
        """The cell to run, and why the live document could not be reached (said to the
        model once a session), or None."""
        doc: LiveDocument | None = None
        reason: str | None = None
        try:
            doc = await used_live(inv.services, self.live).open()
        except LiveUnavailable as exc:
            reason = exc.reason
        if doc is not None:
            nb = doc.notebook()
        else:
            path = self.live.path()
            if path is None or not path.exists():
                if args.source is None:
                    raise RespondToModel(NO_NOTEBOOK)
                return Target(args.source, None, None, "the new code", None), reason
            nb = read_notebook_file(path)
        at = self._position(nb, args)
        if args.source is not None:
            new = nbformat_module().v4.new_code_cell(args.source)
            after = len(nb.cells) - 1 if at is None else at
            where = "at the end" if at is None else f"after cell {cell_id(nb, at)}"
            insert = (after if after >= 0 else None, dict(new))
            if doc is None:
                return Target(args.source, None, None, f"a new cell {where}", None), reason
            return Target(args.source, str(new["id"]), doc, f"new cell {new['id']}", insert), None
        if at is None:
            raise RespondToModel("name the cell to run by cell_id or index, or give source")
        cell = nb.cells[at]
        if cell.get("cell_type") != "code":
            kind = cell.get("cell_type")
            raise RespondToModel(f"cell {cell_id(nb, at)} is a {kind} cell: only code cells run")
        code = str(cell.get("source", ""))
        if not code.strip():
            raise RespondToModel(f"cell {cell_id(nb, at)} is empty: there is nothing to run")
        ident = cell_id(nb, at)
        return Target(code, ident if doc is not None else None, doc, f"cell {ident}", None), reason

    @staticmethod
    def _position(nb: Any, args: RunCellArgs) -> int | None:
        if args.cell_id is not None:
            return find_cell(nb, args.cell_id)
        if args.index is None:
            return None
        if not 0 <= args.index < len(nb.cells):
            raise RespondToModel(
                f"index {args.index} is out of range: the notebook has {len(nb.cells)} cells"
            )
        return args.index

    async def _run(
        self, target: Target, timeout_ms: float, images: bool, unreachable: str | None
    ) -> ToolOutput:
        writer = None
        if target.doc is not None and target.ident is not None:
            if target.insert is not None:
                after, cell = target.insert
                await target.doc.apply("insert", after, cell)
            writer = OutputWriter(self.live.fresh_room, target.ident)
        count = self._count()
        entries: list[Any] = []
        if writer is not None:
            writer.start(lambda: notebook_outputs(entries, None))
        try:
            ran = await run_code(self.shell, target.code, timeout_ms, True, entries)
        except BaseException:  # stopped (the turn ends): the cell says it was interrupted
            if writer is not None:
                stopped = notebook_outputs(entries, count, KeyboardInterrupt(), HIDDEN_FILES)
                await writer.finish(stopped, count)
            raise
        where = f"Ran {target.place} as In [{count}]"
        if writer is not None:
            outputs = notebook_outputs(ran.entries, count, ran.error, HIDDEN_FILES)
            failed = await writer.finish(outputs, count)
            where += (
                f"; its outputs could not be written into the notebook ({failed})"
                if failed
                else "; its outputs are in that cell of the user's notebook"
            )
        elif unreachable is not None:
            where += self._unreachable(unreachable)
        return ran.answer(self.shell, images, self.mask(), head=where + ".")

    def _unreachable(self, reason: str) -> str:
        """Said once a session (the first call that could not reach the document)."""
        if reason in self._said:
            return "; its outputs are only in the tool's card"
        self._said.add(reason)
        return (
            f"; the notebook's open document could not be reached ({reason}), so its "
            "outputs are only in the tool's card, not in the notebook"
        )

    def _count(self) -> int:
        """The number the cell runs as: the shell's next one (see :mod:`.cell_numbers`)."""
        return int(self.shell.execution_count)
