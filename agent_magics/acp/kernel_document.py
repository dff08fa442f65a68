"""The live documents of a chat's notebook tools, lent by the notebook's kernel.

read_notebook and edit_notebook run in the chat's session (edit_notebook asks there,
under its writable roots, as any write does), and reach the notebook the chat belongs
to, and the others a Jupyter server holds open, through the kernel's own bridge to
their rooms (:mod:`agent_magics.jupyter.kernel.live_notebook`): the edit goes into the
document the person's editor shows, merged with their typing, and the file under the
editor is never written. A cell is named to the kernel by its id, so a cell the person
moved in between is still the one edited.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from agent_magics.acp.kernel_tools import Bridged
from agent_magics.tools.notebook.cells import ParsedCells
from agent_magics.tools.notebook.document import MetadataChange, cell_id, parse


class BridgedNotebook:
    """:class:`~agent_magics.tools.notebook.document.LiveNotebooks` for the notebook
    ``path`` (absolute), through its kernel; ``target`` as the server resolved it."""

    def __init__(self, bridged: Bridged, path: Path, target: Path | None = None) -> None:
        self.bridged = bridged
        self.path = path
        self._target = path if target is None else target

    @property
    def target(self) -> Path:
        return self._target

    async def owns(self, path: Path) -> bool:
        return os.path.realpath(path) == os.path.realpath(self.path)

    async def open(self) -> BridgedDocument:
        answer = await self.bridged({"op": "notebook", "path": str(self.path)})
        data = json.dumps(answer.get("notebook") or {}).encode("utf-8")
        return BridgedDocument(self, parse(data, self.path))

    async def close(self) -> None:
        """Nothing is kept here: the kernel keeps its own room."""

    async def held_open(self, path: Path) -> BridgedNotebook | None:
        answer = await self.bridged({"op": "held", "path": str(path)})
        target = answer.get("held")
        if not isinstance(target, str):
            return None
        return BridgedNotebook(self.bridged, path, Path(target))


class BridgedDocument(ParsedCells):
    """:class:`~agent_magics.tools.notebook.document.LiveDocument`: the notebook as the
    kernel read it from the editor's document (its cells read from that copy), and
    edits sent back there."""

    def __init__(self, owner: BridgedNotebook, nb: Any) -> None:
        super().__init__(nb)
        self.owner = owner
        self._nb = nb

    def notebook(self) -> Any:
        return copy.deepcopy(self._nb)  # the tools edit their copy to check an edit

    async def apply(
        self,
        edit_mode: str,
        index: int | None,
        cell: dict[str, Any] | None,
        note: MetadataChange | None = None,
    ) -> None:
        anchor = None if index is None else cell_id(self._nb, index)
        request = {"op": "apply", "path": str(self.owner.path), "edit_mode": edit_mode,
                   "anchor": anchor, "cell": cell, "metadata": self._changed(note)}  # fmt: skip
        await self.owner.bridged(json.loads(json.dumps(request)))

    async def note(self, change: MetadataChange) -> None:
        request = {"op": "note", "path": str(self.owner.path), "metadata": self._changed(change)}
        await self.owner.bridged(json.loads(json.dumps(request)))

    def _changed(self, change: MetadataChange | None) -> dict[str, Any]:
        """The top-level metadata keys ``change`` sets, with their new values (the kernel
        sets them in the document's metadata, as its own room does)."""
        if change is None:
            return {}
        before = json.loads(json.dumps(self._nb.get("metadata") or {}))
        after = copy.deepcopy(before)
        change(after)
        return {k: v for k, v in after.items() if before.get(k) != v}

    async def close(self) -> None:
        """Nothing is kept: each edit opens the kernel's document afresh."""
