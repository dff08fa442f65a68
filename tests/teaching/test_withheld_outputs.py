"""Withheld answers stay out of the other cells' outputs, through real turns: nbgrader
notebooks run by nbclient in real kernels that know their notebook (``JPY_SESSION_NAME``),
a teacher's test cell whose call into the student's answer fails, and a scripted model on
127.0.0.1 that keeps every request body. Each way a cell's output reaches the model is
checked on its own: the notebook context (cells run after ``%load_ext`` and before it),
``%agent context``, run_python, the variables ``In`` and ``Out`` and the list of
variables, read_notebook on the file under four names (itself, its checkpoint, through
``./sub/../``, through a symlink) and a helper's read_notebook."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from agent_magics.testing import (
    ConversationsServer,
    ScriptedResponsesServer,
    function_call,
    message,
    user_texts,
)
from agent_magics.tools.notebook.masking import FRAME_MARK, LINE_MARK
from tests.helpers.agents import agent_call, outputs
from tests.helpers.kernels import (
    KERNEL_PYTHONS,
    Kernel,
    agent_cell,
    kernel_manager,
    write_kernelspec,
)

pytestmark = pytest.mark.slow

v4: Any = nbformat.v4
SOLUTION = (
    "def answer(x):\n"
    '    scale = len("kumquat_scale_5519")\n'
    "    return scale / (x - 2)  # zebra_quartz_7781"
)
SECRETS = ("kumquat_scale_5519", "zebra_quartz_7781")
"""In the answer's source only: the line that fails and the line before it (IPython's
tracebacks show a few lines around the one that failed)."""
TEST = "assert answer(2) == 9"
SHOWS_SOURCE = (
    "import inspect\nsource = inspect.getsource(answer)\nprint(source)\ninspect.getsource(answer)"
)
POLICY = {"solution_cells": "withhold"}

TRY = "Call the student's answer."
READ = "Read the notebook under each of its names and ask a helper to read it too."
HELPER = "Read course.ipynb for me."
NAMES = {
    "the file": "course.ipynb",
    "its checkpoint": ".ipynb_checkpoints/course-checkpoint.ipynb",
    "./sub/..": "./sub/../course.ipynb",
    "a symlink": "link.ipynb",
}


def marked(cell: Any, grade_id: str, **marks: Any) -> Any:
    base = {"grade_id": grade_id, "schema_version": 3, "solution": False, "grade": False}
    cell.metadata["nbgrader"] = {**base, "locked": False, **marks}
    return cell


def run(python: str, nb: Any, home: Path, kernels_notebook: Path) -> Any:
    client = NotebookClient(
        nb,
        kernel_name=write_kernelspec(python, home / "specs"),
        timeout=120,
        allow_errors=True,
        resources={"metadata": {"path": str(home)}},
    )
    client.execute(env={**os.environ, "JPY_SESSION_NAME": str(kernels_notebook)})
    return nb


def context_of(body: dict[str, Any]) -> str:
    (found,) = [t for t in user_texts(body) if t.startswith("<notebook_context>")]
    return found


def output_of(server: ConversationsServer, conversation: str, call_id: str) -> str:
    said = [outputs(body) for body in server.by_conversation[conversation]]
    return next(found[call_id] for found in said if call_id in found)


def text_of(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs)


def leaking(texts: dict[str, str]) -> list[str]:
    return [where for where, text in texts.items() if any(s in text for s in SECRETS)]


@pytest.fixture
def model() -> Any:
    py = "run_python"
    scripts = {
        TRY: [
            [
                function_call(py, {"code": "answer(2)"}, "py_error"),
                function_call(py, {"code": "print(inspect.getsource(answer))"}, "py_print"),
                function_call("inspect_variable", {"name": "Out"}, "var_out"),
                function_call("inspect_variable", {"name": "In"}, "var_in"),
                function_call("list_variables", {}, "var_list"),
            ],
            [message("ok")],
        ],
        READ: [
            [
                *[function_call("read_notebook", {"path": p}, w) for w, p in NAMES.items()],
                agent_call("spawn_agent", {"message": HELPER}, "spawn"),
            ],
            [message("ok")],
        ],
        HELPER: [[function_call("read_notebook", {"path": "course.ipynb"}, "h1")], [message("ok")]],
    }
    with ConversationsServer(scripts) as server:
        yield server


@pytest.mark.parametrize("python", KERNEL_PYTHONS)
def test_a_failing_test_cell_shows_no_line_of_the_withheld_answer(
    python: str, home: Path, model: ConversationsServer
) -> None:
    """The answer's lines are in the test cell's traceback, in a cell that prints the
    answer's source, in run_python's error and output, and in the saved notebook those
    runs leave; none reaches the model, and the test's own frame and error stay."""
    course = home / "course.ipynb"
    nb = v4.new_notebook()
    nb.metadata["agent_magics"] = POLICY
    nb.cells = [
        v4.new_code_cell("%load_ext agent_magics"),
        marked(v4.new_code_cell(SOLUTION), "answer", solution=True),
        marked(v4.new_code_cell(TEST), "tests", grade=True, locked=True, points=1),
        v4.new_code_cell(SHOWS_SOURCE),
        v4.new_code_cell("%agent context"),
        v4.new_code_cell(agent_cell(model.base_url, "-a never", TRY)),
    ]
    nbformat.write(nb, course)
    ran = run(python, nb, home, course)
    (error,) = ran.cells[2].outputs
    assert all(s in "".join(error["traceback"]) for s in SECRETS)  # the person sees them...
    assert "\x1b[" in "".join(error["traceback"])  # ...in IPython's colours, as saved
    nbformat.write(ran, course)  # saved as the person's server saves it, outputs and all
    (home / ".ipynb_checkpoints").mkdir()
    shutil.copy(course, home / ".ipynb_checkpoints" / "course-checkpoint.ipynb")
    (home / "sub").mkdir()
    (home / "link.ipynb").symlink_to(course)

    reader = v4.new_notebook()  # the same kernel's notebook, its cells run before %load_ext
    reader.cells = [
        v4.new_code_cell(SOLUTION),
        v4.new_code_cell(TEST),
        v4.new_code_cell("%load_ext agent_magics"),
        v4.new_code_cell(agent_cell(model.base_url, "", READ)),
    ]
    run(python, reader, home, course)

    context = context_of(model.by_conversation[TRY][0])
    seen = {
        "the notebook context": context,
        "%agent context": text_of(ran.cells[4]),
        "run_python's error": output_of(model, TRY, "py_error"),
        "run_python's output": output_of(model, TRY, "py_print"),
        "inspect_variable on Out": output_of(model, TRY, "var_out"),
        "inspect_variable on In": output_of(model, TRY, "var_in"),
        "list_variables": output_of(model, TRY, "var_list"),
        "the notebook context of cells run before %load_ext": context_of(
            model.by_conversation[READ][0]
        ),
        **{f"read_notebook on {w}": output_of(model, READ, w) for w in NAMES},
        "a helper's read_notebook": output_of(model, HELPER, "h1"),
    }
    assert leaking(seen) == []
    assert not [i for i, body in enumerate(model.requests) if leaking({"": json.dumps(body)})]
    assert FRAME_MARK in seen["the notebook context"] and LINE_MARK in seen["%agent context"]
    error = context.split("<error>")[1]  # the error stays, with the test cell's own frame
    assert "ZeroDivisionError: division by zero" in error and f"    {TEST}" in error
    saved = seen["read_notebook on the file"].split("[error] ZeroDivisionError")[1]
    assert f"----> 1 {TEST}" in saved and "Cell In[2], line 3, in answer(x)" in saved
    assert "ZeroDivisionError: division by zero" in seen["run_python's error"]


UNSAVED = "unsaved_walrus_3141"
EDITED = f"def answer(x):\n    return x / (x - 2)  # {UNSAVED}"


def run_as_jupyterlab(kernel: Kernel, code: str, cell_id: str) -> list[dict[str, Any]]:
    """Run ``code`` as JupyterLab runs a cell: the request names the cell's id."""
    content = {"code": code, "silent": False, "store_history": True, "allow_stdin": False}
    request = kernel.kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
    kernel.kc.shell_channel.send(request)
    msg_id = request["header"]["msg_id"]
    kernel.wait_for(lambda: kernel.idle(msg_id), 60)
    return [m for m in kernel.log if m["parent_header"].get("msg_id") == msg_id]


@pytest.mark.parametrize("python", KERNEL_PYTHONS)
def test_an_answer_edited_and_run_but_not_saved_is_masked_in_a_test_cells_traceback(
    python: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JupyterLab runs the answer's cell with the student's unsaved edit: the saved source
    is not what ran, but the cell's id ties the traceback's frame to the answer."""
    course = home / "course.ipynb"
    nb = v4.new_notebook()
    nb.metadata["agent_magics"] = POLICY
    answer = marked(v4.new_code_cell(SOLUTION), "answer", solution=True)
    test = marked(v4.new_code_cell(TEST), "tests", grade=True, locked=True, points=1)
    nb.cells = [answer, test]
    nbformat.write(nb, course)
    monkeypatch.setenv("JPY_SESSION_NAME", str(course))
    with ScriptedResponsesServer([[message("ok")]]) as server:
        kernel = Kernel(kernel_manager(python, home / "specs"), home)
        try:
            kernel.run("%load_ext agent_magics")
            run_as_jupyterlab(kernel, EDITED, answer.id)
            failed = run_as_jupyterlab(kernel, TEST, test.id)
            assert UNSAVED in json.dumps([m["content"] for m in failed])  # the student sees it
            kernel.run(agent_cell(server.base_url, "", TRY), 120)
            kernel.wait_for(lambda: server.requests, 60)  # ipykernel 6: the turn goes on
        finally:
            kernel.close()
    (body,) = server.requests
    context = context_of(body)
    assert UNSAVED not in json.dumps(body)
    assert FRAME_MARK in context and "ZeroDivisionError: division by zero" in context
