"""Cells nbgrader marks, through real turns: notebooks written by nbformat with nbgrader's
metadata, run by nbclient in a real kernel that knows its notebook (``JPY_SESSION_NAME``,
as Jupyter Server sets it), a scripted model on 127.0.0.1 that keeps every request body.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.agents import agent_call
from tests.helpers.kernels import NO_LOGIN, write_kernelspec

pytestmark = pytest.mark.slow

SECRET_SOURCE = "zebra_quartz_7781"
"""Only in the student's answers: their sources..."""
SECRET_OUTPUT = "kumquat-output-5519"
"""...and their outputs."""
SOLUTION = f'{SECRET_SOURCE} = "{SECRET_OUTPUT}"\nprint({SECRET_SOURCE})'
EARLY = f"early_{SECRET_SOURCE} = 1"  # run before %load_ext: the context reads history
HELPER_TOOLS = ("spawn_agent", "wait_agent")


def marked(cell: Any, grade_id: str, **marks: Any) -> Any:
    cell.metadata["nbgrader"] = {"grade_id": grade_id, "schema_version": 3, **marks}
    cell.metadata["nbgrader"].setdefault("solution", False)
    cell.metadata["nbgrader"].setdefault("grade", False)
    cell.metadata["nbgrader"].setdefault("locked", False)
    return cell


def assignment() -> Any:
    """An nbgrader student notebook: an answer (with a saved output), a locked test."""
    v4 = nbformat.v4
    nb = v4.new_notebook()
    answer = marked(v4.new_code_cell(SOLUTION), "answer", solution=True)
    answer.outputs = [v4.new_output("stream", name="stdout", text=SECRET_OUTPUT + "\n")]
    test = marked(v4.new_code_cell("assert True"), "tests", grade=True, locked=True, points=1)
    nb.cells = [answer, test]
    return nb


def calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The model: the prompt names the tool calls to make, as JSON; then it answers."""
    last = body["input"][-1]
    if last.get("type") != "message":
        return [message("done")]
    text = last["content"][0]["text"]
    planned = json.loads(text) if text.startswith("[") else []
    made = [(agent_call if name in HELPER_TOOLS else function_call) for name, _ in planned]
    return [make(name, args, f"call_{i}") for i, (make, (name, args)) in
            enumerate(zip(made, planned, strict=True))] or [message("done")]  # fmt: skip


@pytest.fixture
def model() -> Iterator[ScriptedResponsesServer]:
    with ScriptedResponsesServer([calls] * 50) as server:
        yield server


def run(home: Path, policy: dict[str, Any] | None, cells: list[Any]) -> Any:
    """``course.ipynb`` (``policy`` in its metadata) with ``cells``, run by nbclient."""
    path = home / "course.ipynb"
    nb = nbformat.v4.new_notebook()
    if policy is not None:
        nb.metadata["agent_magics"] = policy
    nb.cells = cells
    nbformat.write(nb, path)
    client = NotebookClient(
        nb,
        kernel_name=write_kernelspec(sys.executable, home / "specs"),
        timeout=120,
        allow_errors=True,
        resources={"metadata": {"path": str(home)}},
    )
    client.execute(env={**os.environ, "JPY_SESSION_NAME": str(path)})
    return nb


def agent_cell(model: ScriptedResponsesServer, planned: list[Any]) -> Any:
    url = f"--base-url {model.base_url} {NO_LOGIN}"
    return nbformat.v4.new_code_cell(f"%%agent {url}\n{json.dumps(planned)}")


def outputs_of(model: ScriptedResponsesServer, call: str) -> str:
    found = [
        item["output"]
        for body in model.requests
        for item in body["input"]
        if item.get("type") == "function_call_output" and item.get("call_id") == call
    ]
    return str(found[-1])


def test_withheld_answers_never_reach_the_model_server(
    home: Path, model: ScriptedResponsesServer
) -> None:
    """Under ``solution_cells = "withhold"``: the answers ran (before and after the
    extension loaded), the model reads the notebook and tries to edit an answer; no
    request body the server received holds an answer's source or output."""
    v4 = nbformat.v4
    early = marked(v4.new_code_cell(EARLY), "early", solution=True)
    saved = assignment()
    cells = [early, v4.new_code_cell("%load_ext agent_magics"), *saved.cells]
    answer_id = saved.cells[0].id
    plan = [
        ["read_notebook", {"path": "course.ipynb"}],
        ["edit_notebook", {"path": "course.ipynb", "cell_id": answer_id, "new_source": "x"}],
    ]
    nb = run(home, {"solution_cells": "withhold"}, [*cells, agent_cell(model, plan)])
    assert SECRET_OUTPUT in "".join(o.get("text", "") for o in nb.cells[2].outputs)  # it ran
    bodies = [json.dumps(body) for body in model.requests]
    assert len(bodies) >= 2
    assert "withheld: the teacher keeps this graded answer" in outputs_of(model, "call_0")
    assert "assert True" in outputs_of(model, "call_0")  # the other cells are shown
    for body in bodies:
        assert SECRET_SOURCE not in body
        assert SECRET_OUTPUT not in body


def test_locked_cell_refused_and_graded_edit_noted(
    home: Path, model: ScriptedResponsesServer
) -> None:
    """Without a policy: edit_notebook on a locked test cell, or deleting an answer, is
    answered with one sentence and the file keeps every byte; an answer's edit goes in
    and the notebook notes it for the teacher."""
    locked, answers = home / "locked.ipynb", home / "answers.ipynb"
    nbformat.write(assignment(), locked)
    nbformat.write(assignment(), answers)
    before = locked.read_bytes()
    test_id = nbformat.read(locked, 4).cells[1].id
    answer_id = nbformat.read(answers, 4).cells[0].id
    plan = [
        ["edit_notebook", {"path": "locked.ipynb", "cell_id": test_id, "new_source": "pass"}],
        ["edit_notebook", {"path": "locked.ipynb", "cell_id": answer_id, "edit_mode": "delete"}],
        ["edit_notebook", {"path": "answers.ipynb", "cell_id": answer_id, "new_source": "y = 2"}],
    ]
    answer_in_locked = nbformat.read(locked, 4).cells[0].id
    plan[1][1]["cell_id"] = answer_in_locked
    run(home, None, [nbformat.v4.new_code_cell("%load_ext agent_magics"), agent_cell(model, plan)])
    assert outputs_of(model, "call_0") == (
        "The notebook was not changed: cell tests is locked by the teacher (nbgrader checks "
        "it is unchanged), so it cannot be edited or deleted; put your code in another cell."
    )
    assert outputs_of(model, "call_1") == (
        "The notebook was not changed: cell answer is a graded answer that nbgrader grades, "
        "so it cannot be deleted."
    )
    assert locked.read_bytes() == before
    edited = nbformat.read(answers, 4)
    assert edited.cells[0].source == "y = 2"
    (note,) = edited.metadata["agent_magics"]["graded_turns"]
    assert (note["grade_id"], note["action"]) == ("answer", "edit")
    assert note["session"] and note["time"]


def saved_notes(cell: Any) -> list[dict[str, str]]:
    """The notes for the teacher in the metadata of a cell's saved outputs."""
    return [
        note
        for o in cell.outputs
        for note in o.get("metadata", {}).get("agent_magics", {}).get("graded_turns", [])
    ]


def test_a_read_of_graded_cells_is_noted_where_the_notebook_cannot_be_written(
    home: Path, model: ScriptedResponsesServer
) -> None:
    """The kernel's own notebook with no editor's document to reach (no server, as in a
    kernel without the live extra): its file is not written, and the turn's read, and its
    helper's, are noted in the metadata of the ``%%agent`` cell's saved output."""
    read = [["read_notebook", {"path": "course.ipynb"}]]
    plan = [*read, ["spawn_agent", {"message": json.dumps(read)}]]
    cells = [nbformat.v4.new_code_cell("%load_ext agent_magics"), *assignment().cells]
    nb = run(home, None, [*cells, agent_cell(model, plan)])
    notes = saved_notes(nb.cells[-1])
    assert [(n["notebook"], n["grade_id"], n["action"]) for n in notes] == [
        ("course.ipynb", "answer", "read"),
        ("course.ipynb", "tests", "read"),
        ("course.ipynb", "answer", "read"),  # the helper's read, in its own session
        ("course.ipynb", "tests", "read"),
    ]
    assert notes[0]["session"] != notes[2]["session"] and all(n["time"] for n in notes)
    assert "agent_magics" not in nbformat.read(home / "course.ipynb", 4).metadata
