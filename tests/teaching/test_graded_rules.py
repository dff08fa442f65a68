"""The rules for cells nbgrader marks, as a table, and through the notebook tools on files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.errors import RespondToModel
from agent_magics.tools.context import FunctionPayload, SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
from agent_magics.tools.handlers.read_notebook import ReadNotebookHandler
from agent_magics.tools.notebook.graded import add_notes, edit_refusal, withheld
from agent_magics.tools.registry import ToolHandler

v4: Any = nbformat.v4


def cell(kind: str = "code", source: str = "x = 1", **metadata: Any) -> dict[str, Any]:
    return {"cell_type": kind, "source": source, "metadata": metadata}


def nbg(**marks: Any) -> dict[str, Any]:
    return {"grade_id": "q1", "schema_version": 3, **marks}


ANSWER = cell(nbgrader=nbg(solution=True, grade=False, locked=False))
TESTS = cell(nbgrader=nbg(solution=False, grade=True, locked=False, points=2))  # grade: locked
READ_ONLY = cell("markdown", nbgrader=nbg(solution=False, grade=False, locked=True))
TASK = cell("markdown", nbgrader=nbg(task=True, points=3))
MANUAL = cell("markdown", nbgrader=nbg(solution=True, grade=True, points=1))
NOT_EDITABLE = cell(editable=False)
PLAIN = cell()
LOCKED = "is locked by the teacher"


@pytest.mark.parametrize(
    ("target", "mode", "new_type", "policy", "refused"),
    [
        pytest.param(PLAIN, "replace", None, "withhold", None, id="plain-cell-free"),
        pytest.param(PLAIN, "delete", None, "edit", None, id="plain-cell-deleted"),
        pytest.param(cell(deletable=False), "delete", None, "edit", "not deletable", id="kept"),
        pytest.param(cell(deletable=False), "replace", None, "edit", None, id="kept-edited"),
        pytest.param(TESTS, "replace", None, "edit", LOCKED, id="grade-cell-always-locked"),
        pytest.param(READ_ONLY, "replace", None, "edit", LOCKED, id="read-only-cell"),
        pytest.param(TASK, "replace", None, "edit", LOCKED, id="task-cell"),
        pytest.param(NOT_EDITABLE, "delete", None, "edit", LOCKED, id="jupyter-not-editable"),
        pytest.param(ANSWER, "replace", None, "edit", None, id="answer-edited"),
        pytest.param(MANUAL, "replace", None, "edit", None, id="manual-answer-edited"),
        pytest.param(ANSWER, "delete", None, "edit", "cannot be deleted", id="answer-deleted"),
        pytest.param(ANSWER, "replace", "markdown", "edit", "type cannot change", id="retyped"),
        pytest.param(ANSWER, "replace", None, "read-only", "keeps the agent", id="read-only"),
        pytest.param(ANSWER, "replace", None, "withhold", "keeps the agent", id="withhold"),
    ],
)
def test_which_edits_of_graded_cells_are_refused(
    target: dict[str, Any], mode: str, new_type: str | None, policy: str, refused: str | None
) -> None:
    said = edit_refusal(target, mode, new_type, policy)
    if refused is None:
        assert said is None
    else:
        assert said is not None and refused in said and said.count(". ") == 0


def test_what_withhold_keeps_back() -> None:
    hidden = cell(source="### BEGIN HIDDEN TESTS\nassert f(2) == 4\n### END HIDDEN TESTS",
                  nbgrader=nbg(grade=True, solution=False, points=1))  # fmt: skip
    assert withheld(ANSWER, "withhold") and withheld(MANUAL, "withhold")
    assert withheld(hidden, "withhold")
    assert not withheld(TESTS, "withhold") and not withheld(PLAIN, "withhold")
    assert not withheld(ANSWER, "read-only")


def test_a_policy_that_cannot_be_read_is_left_as_the_teacher_wrote_it() -> None:
    metadata: dict[str, Any] = {"agent_magics": "solution_cells=withhold"}
    assert not add_notes(metadata, [{"grade_id": "q1", "action": "read"}])
    assert metadata == {"agent_magics": "solution_cells=withhold"}
    kept: dict[str, Any] = {"agent_magics": {"solution_cells": "withhold"}}
    assert add_notes(kept, [{"grade_id": "q1", "action": "read"}])
    assert kept["agent_magics"] == {
        "solution_cells": "withhold",
        "graded_turns": [{"grade_id": "q1", "action": "read"}],
    }


async def call(handler: ToolHandler, cwd: Path, args: dict[str, Any]) -> tuple[Any, bool]:
    payload = FunctionPayload(json.dumps(args))
    inv = ToolInvocation("c1", handler.name, payload, TurnContext(cwd=cwd), SessionServices())
    try:
        out = await handler.handle(inv)
    except RespondToModel as exc:
        return exc.message, False
    return out.content, out.success


def assignment(path: Path) -> None:
    nb = v4.new_notebook()
    answer = v4.new_code_cell("answer = 41 + 1", id="a1")
    answer.metadata["nbgrader"] = nbg(solution=True, grade=False, locked=False)
    answer.outputs = [v4.new_output("stream", name="stdout", text="printed 42\n")]
    nb.cells = [answer, v4.new_markdown_cell("Explain.", id="m1")]
    nbformat.write(nb, str(path))


async def test_read_only_answers_are_refused_and_withheld_ones_not_shown(tmp_path: Path) -> None:
    path = tmp_path / "hw.ipynb"
    assignment(path)
    before = path.read_bytes()
    edit = EditNotebookHandler(solution_cells=lambda: "read-only")
    text, ok = await call(edit, tmp_path, {"path": "hw.ipynb", "cell_id": "a1", "new_source": "0"})
    assert not ok and "keeps the agent from editing graded answers" in text
    assert path.read_bytes() == before
    read = ReadNotebookHandler(solution_cells=lambda: "withhold")
    text, ok = await call(read, tmp_path, {"path": "hw.ipynb"})
    assert ok
    assert "--- cell 1 · id a1 · code\n[withheld: the teacher keeps this graded answer" in text
    assert "41 + 1" not in text and "printed 42" not in text and "Explain." in text
    shown, ok = await call(ReadNotebookHandler(), tmp_path, {"path": "hw.ipynb"})
    assert ok and "answer = 41 + 1" in shown and "printed 42" in shown
