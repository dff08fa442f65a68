"""``%agent undo`` takes back the turn's edits to the open notebook, never the person's.

A real kernel runs in the folder of a real ``jupyter server`` with jupyter-collaboration
on 127.0.0.1 (the harness of ``tests/jupyter/kernel/test_live_notebook.py``), the
notebook it belongs to
named as Jupyter names it. A turn against a scripted model puts a cell into the open
notebook through its room (no file is written); a second peer of the room stands for the
person in JupyterLab, and reads what undo left.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_magics.jupyter.kernel.live_notebook import PARENT_PID_ENV, KernelLiveNotebook
from agent_magics.store.readback import read_session
from agent_magics.testing import ScriptedResponsesServer, Turn, function_call
from agent_magics.testing import message as say
from agent_magics.tools.notebook.document import SESSION_ENV
from tests.helpers.jupyter_server import (
    INSERT,
    Server,
    server_fixture,  # noqa: F401 (the ``server`` fixture)
    write_notebook,
)
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell, kernel_manager

pytestmark = pytest.mark.slow

DELETE = {"path": "a.ipynb", "cell_id": "two", "edit_mode": "delete"}
REPLACE = {"path": "a.ipynb", "cell_id": "two", "edit_mode": "replace", "new_source": "# Plan"}


def peer(server: Server) -> KernelLiveNotebook:
    """The person's editor: another peer of the notebook's room."""
    nb = server.notebooks / "a.ipynb"
    return KernelLiveNotebook(None, {SESSION_ENV: str(nb), PARENT_PID_ENV: str(server.process.pid)})


def sources(server: Server) -> list[str]:
    """The cells the person sees now."""

    async def read() -> list[str]:
        doc = await peer(server).open()
        try:
            return [str(c.source) for c in doc.notebook().cells]
        finally:
            await doc.close()

    return asyncio.run(read())


def person_types(server: Server, in_cell: int, text: str) -> None:
    async def edit() -> None:
        doc = await peer(server).open()

        def type_it(nb: Any) -> None:
            source = nb.ycells[in_cell]["source"]
            source.insert(len(source), text)

        try:
            await doc.room.change(type_it, 10)
        finally:
            await doc.close()

    asyncio.run(edit())


def started(server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Kernel:
    """A kernel working in the server's folder, belonging to its notebook ``a.ipynb``."""
    write_notebook(server.notebooks / "a.ipynb")
    monkeypatch.setenv(SESSION_ENV, str(server.notebooks / "a.ipynb"))
    kernel = Kernel(kernel_manager(sys.executable, tmp_path / "specs"), server.notebooks)
    kernel.run("%load_ext agent_magics")
    return kernel


def run_turn(kernel: Kernel, script: list[Turn]) -> None:
    with ScriptedResponsesServer(script) as model:
        kernel.execute(agent_cell(model.base_url, "-a never", "add a cell"))
        kernel.wait_for(lambda: kernel.shows(TURN_DONE), timeout=120)


def said(kernel: Kernel, text: str) -> str | None:
    """The first text output (streams and displays, updates too) holding ``text``."""
    kernel.pump()
    found = [kernel.outputs_text([m]) for m in kernel.log]
    return next((t for t in found if text in t), None)


def test_undo_yes_removes_the_inserted_cell_and_puts_the_deleted_one_back(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = started(server, tmp_path, monkeypatch)
    try:
        calls = [function_call("edit_notebook", INSERT, "e1"),
                 function_call("edit_notebook", DELETE, "e2")]  # fmt: skip
        run_turn(kernel, [calls, [say("Done.")]])
        assert sources(server) == ["x = 1", "y = x + 1"]
        kernel.run("%agent undo --yes")
        out = kernel.wait_for(lambda: said(kernel, "agent: In the open notebook"), timeout=60)
        assert out == (
            'agent: In the open notebook a.ipynb: cell 3 ("# Notes") put back; cell 2 '
            '("y = x + 1") removed.'
        ), out
        assert sources(server) == ["x = 1", "# Notes"]  # seen by the person's editor
        again = kernel.outputs_text(kernel.run("%agent undo --yes"))
        assert again.startswith("agent: nothing to undo"), again
    finally:
        kernel.close()
    (path,) = (server.notebooks / ".agent_magics" / "sessions").glob("*.jsonl")
    saved = read_session(path)
    assert saved.verified  # the lines are sealed like the rest of the file
    (edits,) = [r["cells"] for r in saved.records if r["type"] == "cell_edits"]
    nb = str(server.notebooks / "a.ipynb")
    assert [{k: e[k] for k in ("edit", "path", "position", "before", "after")} for e in edits] == [
        {"edit": "insert", "path": nb, "position": 2, "before": None, "after": "y = x + 1"},
        {"edit": "delete", "path": nb, "position": 3, "before": "# Notes", "after": None},
    ]
    assert edits[1]["cell_id"] == "two"
    (undone,) = [r for r in saved.records if r["type"] == "undo"]
    assert undone["files"] == []
    assert undone["cells"] == ['cell 3 ("# Notes") put back', 'cell 2 ("y = x + 1") removed']


def test_undo_keeps_a_cell_the_person_edited_after_the_turn_and_reverts_the_rest(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = started(server, tmp_path, monkeypatch)
    try:
        calls = [function_call("edit_notebook", INSERT, "e1"),
                 function_call("edit_notebook", REPLACE, "e2")]  # fmt: skip
        run_turn(kernel, [calls, [say("Done.")]])
        assert sources(server) == ["x = 1", "y = x + 1", "# Plan"]
        person_types(server, 1, "\nprint(y)")  # the person's own line in the agent's cell
        asked = kernel.outputs_text(kernel.run("%agent undo"))
        assert asked.startswith(
            "Undo takes back the agent's edits to the open notebook a.ipynb: cell 3 "
            '("# Plan", back to "# Notes"); cell 2 ("y = x + 1", which it inserted). A cell '
            "changed since the turn is left as it is."
        ), asked
        assert sources(server)[1] == "y = x + 1\nprint(y)"  # nothing before the click
        kernel.click(kernel.wait_for(lambda: kernel.buttons("Undo"))[-1])
        kernel.wait_for(lambda: kernel.shows("In the open notebook a.ipynb"), timeout=60)
        assert kernel.shows(
            'In the open notebook a.ipynb: cell 3 ("# Plan") given back its source from '
            'before the turn. Left as they are in a.ipynb: cell 2 ("y = x + 1…"): changed '
            "after the turn; undoing would lose that change."
        ), kernel.html_values()
        assert sources(server) == ["x = 1", "y = x + 1\nprint(y)", "# Notes"]
    finally:
        kernel.close()


def test_undo_changes_nothing_when_the_open_notebook_cannot_be_reached(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = started(server, tmp_path, monkeypatch)
    try:
        run_turn(kernel, [[function_call("edit_notebook", INSERT, "e1")], [say("Done.")]])
        server.close()  # JupyterLab was shut down
        kernel.run("%agent undo --yes")
        out = kernel.wait_for(lambda: said(kernel, "agent: Undo refused"), timeout=90)
        assert out.startswith(
            "agent: Undo refused: the open notebook a.ipynb cannot be reached ("
        ), out
        assert out.endswith("); nothing was restored."), out
        asked = kernel.outputs_text(kernel.run("%agent undo"))
        assert asked.startswith("Undo takes back the agent's edits"), asked  # still to do
    finally:
        kernel.close()
