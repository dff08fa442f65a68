"""Cells nbgrader marks in the open notebook: a real ``jupyter server`` with
jupyter-collaboration on 127.0.0.1 (the fixture of
:mod:`tests.jupyter.kernel.test_live_notebook`), a
second peer of the room standing for the person's editor, which types and never saves."""

from __future__ import annotations

from typing import Any

import nbformat
import pytest

from agent_magics.errors import RespondToModel
from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
from agent_magics.tools.handlers.read_notebook import ReadNotebookHandler
from tests.helpers.jupyter_server import (
    Recorder,
    Server,
    call,
    kernel_side,
    server_fixture,  # noqa: F401 (the ``server`` fixture)
)

pytestmark = pytest.mark.slow

v4: Any = nbformat.v4
ANSWER = "secret_answer_4242 = 42"


def marked(cell: Any, grade_id: str, **marks: Any) -> Any:
    base = {"grade_id": grade_id, "schema_version": 3, "solution": False, "grade": False}
    cell.metadata["nbgrader"] = {**base, "locked": False, **marks}
    return cell


@pytest.fixture
async def person(server: Server) -> Any:
    """The assignment open in the person's editor, with an unsaved edit in its answer."""
    nb = v4.new_notebook()
    nb.cells = [
        marked(v4.new_code_cell(ANSWER, id="answer"), "answer", solution=True),
        marked(v4.new_code_cell("assert True", id="tests"), "tests", grade=True, locked=True),
    ]
    nbformat.write(nb, str(server.notebooks / "a.ipynb"))
    doc = await kernel_side(server).open()

    def type_in_the_answer(ynb: Any) -> None:
        text = ynb.ycells[0]["source"]
        text.insert(len(text), "\n# typed, not saved")

    await doc.room.change(type_in_the_answer, 10)
    try:
        yield doc
    finally:
        await doc.close()


def notes(person: Any) -> list[dict[str, str]]:
    metadata = person.notebook().metadata
    found: list[dict[str, str]] = metadata.get("agent_magics", {}).get("graded_turns", [])
    return found


async def test_locked_cell_refused_live_and_graded_work_noted(server: Server, person: Any) -> None:
    nb, recorder = server.notebooks / "a.ipynb", Recorder([])
    on_disk = nb.read_bytes()
    edit = EditNotebookHandler(kernel_side(server))
    text, ok = await call(edit, server.notebooks, {"path": "a.ipynb", "cell_id": "tests",
                                                   "new_source": "pass"}, recorder)  # fmt: skip
    assert not ok and text.startswith("The notebook was not changed: cell tests is locked")
    assert recorder.asked == 0
    await person.room.flush(10)
    assert [c.source for c in person.notebook().cells][1] == "assert True"

    withhold = ReadNotebookHandler(kernel_side(server), lambda: "withhold")
    read, ok = await call(withhold, server.notebooks, {"path": "a.ipynb"}, recorder)
    assert ok and "withheld: the teacher keeps this graded answer" in read
    assert "secret_answer_4242" not in read and "typed, not saved" not in read

    read, ok = await call(ReadNotebookHandler(kernel_side(server)), server.notebooks,
                          {"path": "a.ipynb"}, recorder)  # fmt: skip
    assert ok and "# typed, not saved" in read
    answer = {"path": "a.ipynb", "cell_id": "answer", "new_source": "answer = 1"}
    text, ok = await call(edit, server.notebooks, answer, recorder)
    assert ok, text
    await person.room.flush(10)
    assert [(n["grade_id"], n["action"]) for n in notes(person)] == [
        ("tests", "read"),  # the withheld answer was not read
        ("answer", "read"),
        ("tests", "read"),
        ("answer", "edit"),
    ]
    assert nb.read_bytes() == on_disk  # nothing wrote the file under the editor


async def test_a_cell_locked_after_the_agent_read_it_is_still_refused(
    server: Server,
    person: Any,
) -> None:
    """The editor's cell as it is when the edit goes in decides, not the copy read before
    the person was asked: a teacher's lock that came meanwhile holds."""
    doc = await kernel_side(server).open()
    try:
        copy = doc.notebook()
        cell = dict(copy.cells[0], source="answer = 1")

        def lock(ynb: Any) -> None:
            ynb.ycells[0]["metadata"] = {"nbgrader": {"grade_id": "answer", "locked": True}}

        await person.room.change(lock, 10)
        await doc.room.flush(10)
        with pytest.raises(RespondToModel, match="cell answer is locked by the teacher"):
            await doc.apply("replace", 0, cell)
    finally:
        await doc.close()
    await person.room.flush(10)
    assert person.notebook().cells[0].source == ANSWER + "\n# typed, not saved"
