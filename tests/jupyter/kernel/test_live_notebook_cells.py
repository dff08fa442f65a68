"""An edit of the open notebook reads the cell it names, checks the cell it writes, and
is one change to the shared document.

Against a real ``jupyter server`` with jupyter-collaboration on 127.0.0.1; the person's
editor is a peer of the notebook's room that watches the cells array: each change the
agent makes arrives there as one transaction. Needs the ``browser`` extra; skipped
without it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import nbformat
import pytest

from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
from tests.helpers.jupyter_server import (
    INSERT,
    Recorder,
    Server,
    call,
    kernel_side,
    server_fixture,  # noqa: F401 (the ``server`` fixture)
    write_notebook,
)

v4: Any = nbformat.v4
nbf: Any = nbformat


@pytest.fixture
async def person(server: Server) -> AsyncIterator[Any]:
    """The person's editor of ``a.ipynb`` (cells ``one``, ``two``), a peer of its room."""
    write_notebook(server.notebooks / "a.ipynb")
    doc = await kernel_side(server).open()
    try:
        yield doc
    finally:
        await doc.close()


def changes(doc: Any) -> list[list[Any]]:
    """The transactions that reach ``doc``'s cells array from now on, each the list of
    its events (the cells array's own and those inside its cells)."""
    seen: list[list[Any]] = []
    doc.room.notebook.ycells.observe_deep(lambda events: seen.append(list(events)))
    return seen


@pytest.mark.slow
async def test_a_cell_other_tools_left_invalid_does_not_stop_an_edit_of_another(
    server: Server, person: Any
) -> None:
    """Only the cell the edit names is read: a cell elsewhere that nbformat's schema
    refuses (a key some extension put there) is no reason to refuse the edit, and stays
    as it is. The inserted cell arrives as one insert into the cells array."""

    def mark(nb: Any) -> None:
        nb.ycells[1]["extension_state"] = "kept"  # not in nbformat's schema

    await person.room.change(mark, 10)
    seen = changes(person)
    text, ok = await call(EditNotebookHandler(kernel_side(server)), server.notebooks, INSERT,
                          Recorder([]))  # fmt: skip
    assert ok, text
    await person.room.flush(10)
    assert len(seen) == 1 and len(seen[0]) == 1, seen
    delta = seen[0][0].delta
    assert delta[0] == {"retain": 1} and len(delta) == 2 and len(delta[1]["insert"]) == 1
    new = delta[1]["insert"][0].to_py()
    assert text == (f"Inserted code cell {new['id']} as cell 2 in {server.notebooks / 'a.ipynb'}, "
                    "the notebook open in the user's editor")  # fmt: skip
    assert (new["source"], new["cell_type"], new["outputs"]) == ("y = x + 1", "code", [])
    assert person.room.notebook.ycells[2]["extension_state"] == "kept"


@pytest.mark.slow
async def test_replace_and_delete_are_one_change_each_and_the_written_cell_is_checked(
    server: Server, person: Any
) -> None:
    live, recorder = kernel_side(server), Recorder([])
    seen = changes(person)
    replace = {"path": "a.ipynb", "cell_id": "one", "new_source": "x = 2"}
    text, ok = await call(EditNotebookHandler(live), server.notebooks, replace, recorder)
    assert (text, ok) == (
        f"Replaced cell one (code) in {server.notebooks / 'a.ipynb'}, the notebook open in the "
        "user's editor",
        True,
    )
    await person.room.flush(10)
    assert len(seen) == 1 and str(person.room.notebook.ycells[0]["source"]) == "x = 2"
    delete = {"path": "a.ipynb", "cell_id": "two", "edit_mode": "delete"}
    text, ok = await call(EditNotebookHandler(live), server.notebooks, delete, recorder)
    assert ok, text
    await person.room.flush(10)
    assert len(seen) == 2 and [e.delta for e in seen[1]] == [[{"retain": 1}, {"delete": 1}]]

    def fold(nb: Any) -> None:  # the person's extension: a value nbformat's schema refuses
        nb.ycells[0]["metadata"]["collapsed"] = "yes"

    await person.room.change(fold, 10)
    seen.clear()
    text, ok = await call(EditNotebookHandler(live), server.notebooks, replace, recorder)
    assert not ok and text.startswith("the edit would make the notebook invalid: "), text
    await person.room.flush(10)
    assert seen == [] and str(person.room.notebook.ycells[0]["source"]) == "x = 2"


@pytest.mark.slow
async def test_cells_of_a_notebook_older_than_ids_are_named_by_position(server: Server) -> None:
    """nbformat 4.4 has no cell ids: the cells are ``cell-<n>``, found by position in the
    editor's document, and the inserted cell gets no id in the notebook."""
    path = server.notebooks / "a.ipynb"
    nb = v4.new_notebook(nbformat_minor=4)
    nb.cells = [v4.new_code_cell("x = 1"), v4.new_markdown_cell("# Notes")]
    for cell in nb.cells:
        del cell["id"]
    nbf.write(nb, str(path))
    live, recorder = kernel_side(server), Recorder([])
    insert = dict(INSERT, cell_id="cell-1")
    text, ok = await call(EditNotebookHandler(live), server.notebooks, insert, recorder)
    assert (text, ok) == (
        f"Inserted code cell cell-2 as cell 2 in {path}, the notebook open in the user's editor",
        True,
    )
    replace = {"path": "a.ipynb", "cell_id": "cell-3", "new_source": "# Results"}
    text, ok = await call(EditNotebookHandler(live), server.notebooks, replace, recorder)
    assert ok and text.startswith("Replaced cell cell-3 (markdown) in "), text
    missing = {"path": "a.ipynb", "cell_id": "cell-4", "new_source": "w"}
    text, ok = await call(EditNotebookHandler(live), server.notebooks, missing, recorder)
    assert (text, ok) == ("no cell has id 'cell-4'; the cell ids are: cell-1, cell-2, cell-3",
                          False)  # fmt: skip
    doc = await live.open()
    try:
        cells = doc.notebook().cells
    finally:
        await doc.close()
    assert [(c.cell_type, c.source, "id" in c) for c in cells] == [
        ("code", "x = 1", False),
        ("code", "y = x + 1", False),
        ("markdown", "# Results", False),
    ]
