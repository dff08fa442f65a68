"""run_cell: the agent runs a cell of the kernel's own notebook, and its outputs and
execution count land in that cell of the live document, as they come.

Against a real ``jupyter server`` with jupyter-collaboration on 127.0.0.1 (the harness of
``tests/jupyter/kernel/test_live_notebook.py``), the kernel the server started for ``a.ipynb``
(found as JupyterLab's kernels are), a scripted model on 127.0.0.1, and the person's
editor as a peer of the notebook's room that types in a cell and does not save. Without a
server the cell is read from the file and the outputs stay in the card, said once.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call
from agent_magics.testing import message as say
from agent_magics.transcript.html import python_html
from tests.helpers.jupyter_server import Server, ServerKernel, server_fixture, turns_done
from tests.helpers.kernels import Kernel, agent_cell
from tests.helpers.live_rooms import TYPED, open_session, person_types_in, save, wait_until

assert server_fixture  # the ``server`` fixture

pytestmark = pytest.mark.slow
v4: Any = nbformat.v4

SLEEPS = "import time\ntime.sleep(60)"
CELLS = [
    v4.new_code_cell("x = 1", id="one"),
    v4.new_markdown_cell("# Notes", id="two"),
    v4.new_code_cell("print('sum', x + 1)\nx * 21", id="three"),
    v4.new_code_cell(
        "import time\nprint('tick', flush=True)\ntime.sleep(3)\nprint('tock')", id="slow"
    ),
]


def write(path: Path) -> None:
    nb = v4.new_notebook()
    nb.cells = [nbformat.from_dict(c) for c in CELLS]
    nbformat.write(nb, str(path))


def cell(doc: Any, ident: str) -> dict[str, Any]:
    for c in doc.room.notebook.ycells:
        if str(c.get("id")) == ident:
            value: dict[str, Any] = c.to_py()
            return value
    raise AssertionError(f"no cell {ident}")


def texts(outputs: list[dict[str, Any]]) -> list[str]:
    """Each output's text: a stream's, a result's text/plain, an error's name."""
    shown = []
    for o in outputs:
        if o["output_type"] == "stream":
            shown.append(str(o["text"]))
        elif o["output_type"] == "error":
            shown.append(f"{o['ename']}: {o['evalue']}")
        else:
            shown.append(str(o["data"].get("text/plain")))
    return shown


async def seen(doc: Any, what: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        await doc.room.flush(10)
        if what():
            return
        assert time.monotonic() < deadline, "not seen in time"
        await asyncio.sleep(0.1)


async def test_cells_run_by_the_agent_show_their_outputs_in_the_open_notebook(
    server: Server,
) -> None:
    pytest.importorskip("pycrdt", reason="pip install -e '.[browser]'")
    root = server.notebooks
    write(root / "a.ipynb")
    kernel = ServerKernel(open_session(server, "a.ipynb"), root)
    person = await person_types_in(server, "a.ipynb")  # in the markdown cell, unsaved
    on_disk = (root / "a.ipynb").read_bytes()
    script = [
        [function_call("run_cell", {"cell_id": "one"}, "r1")],
        [function_call("run_cell", {"index": 2}, "r2")],
        [function_call("run_cell", {"cell_id": "slow"}, "r3")],
        [function_call("run_cell", {"source": "display('shown')\n1 / 0"}, "r4")],
        [say("ran them")],
    ]
    try:
        kernel.run("%load_ext agent_magics")
        with ScriptedResponsesServer(script) as model:
            agent = kernel.execute(agent_cell(model.base_url, "-a never", "run the cells"))
            # While the slow cell sleeps, its first line is already in the notebook.
            await seen(person, lambda: "tick\n" in texts(cell(person, "slow")["outputs"]))
            assert "tock" not in "".join(texts(cell(person, "slow")["outputs"]))
            kernel.wait_for(lambda: turns_done(kernel) == 1, timeout=120)
            reply = kernel.wait_for(lambda: kernel.execute_reply(agent))
            said = {k: v for n in range(1, 5) for k, v in model.outputs(n).items()}
        await person.room.flush(10)
        one, three, slow = (cell(person, i) for i in ("one", "three", "slow"))
        counts = [int(c["execution_count"]) for c in (one, three, slow)]  # Y numbers: floats
        assert counts[0] > 1 and counts == [counts[0], counts[0] + 1, counts[0] + 2], counts
        assert one["outputs"] == []
        assert texts(three["outputs"]) == ["sum 2\n", "21"]
        assert int(three["outputs"][1]["execution_count"]) == counts[1]
        assert texts(slow["outputs"]) == ["tick\ntock\n"]
        new = person.room.notebook.ycells[len(CELLS)].to_py()
        assert new["source"] == "display('shown')\n1 / 0"
        assert texts(new["outputs"]) == ["'shown'", "ZeroDivisionError: division by zero"]
        assert int(new["execution_count"]) == counts[0] + 3
        assert cell(person, "two")["source"] == "# Notes" + TYPED  # the typing stays
        assert (root / "a.ipynb").read_bytes() == on_disk  # nothing wrote the file
        assert f"Ran cell three as In [{counts[1]}]" in said["r2"], said["r2"]
        assert "its outputs are in that cell of the user's notebook" in said["r2"]
        assert "sum 2" in said["r2"] and "21" in said["r2"]
        assert "ZeroDivisionError" in said["r4"]
        # The kernel's history has the cells under their numbers, the agent's cell apart.
        history = kernel.value(f"[In[{counts[0]}], In[{counts[1]}]]")
        assert history == ["x = 1", "print('sum', x + 1)\nx * 21"]
        assert kernel.value("x") == 1
        # The agent's cell is numbered after the cells it ran, its source under that number.
        agent_number = reply["content"]["execution_count"]
        assert agent_number == counts[0] + 4, agent_number
        assert kernel.value(f"In[{agent_number}]").startswith("await get_ipython()")
        # The person's save writes the outputs and numbers, as nbformat has them.
        save(person)
        await wait_until(lambda: "division by zero" in (root / "a.ipynb").read_text())
        saved = nbformat.read(str(root / "a.ipynb"), as_version=4)
        nbformat.validate(saved)
        assert [c.get("execution_count") for c in saved.cells] == [
            *counts[:1],
            None,
            *counts[1:],
            counts[0] + 3,
        ]
        assert saved.cells[1].source == "# Notes" + TYPED
    finally:
        kernel.close()
        await person.close()


def test_without_a_live_document_the_outputs_stay_in_the_card(kernel: Kernel) -> None:
    """A kernel no server runs: the cell comes from the notebook's file, the model is told
    once that the outputs are only in the card, and the file is not written."""
    notebook = kernel.ws / "a.ipynb"
    write(notebook)
    kernel.run(f"import os; os.environ['JPY_SESSION_NAME'] = {str(notebook)!r}; x = 1")
    before = notebook.read_bytes()
    script = [
        [function_call("run_cell", {"index": 2}, "r1")],
        [function_call("run_cell", {"source": "print('new')"}, "r2")],
        [function_call("run_cell", {"source": SLEEPS, "timeout_ms": 1500}, "r3")],
        [say("ran")],
    ]
    with ScriptedResponsesServer(script) as model:
        kernel.run(agent_cell(model.base_url, "-a never", "run it"), timeout=120)
        kernel.wait_for(lambda: turns_done(kernel) == 1, timeout=90)
        first, second = model.outputs(1)["r1"], model.outputs(2)["r2"]
        stopped = model.outputs(3)["r3"]
    assert "sum 2" in first and "only in the tool's card, not in the notebook" in first, first
    assert "could not be reached" not in second and "only in the tool's card" in second
    assert "new" in second
    assert "Interrupted: still running after the timeout of 1500 ms" in stopped, stopped
    assert "KeyboardInterrupt" in stopped
    assert notebook.read_bytes() == before
    assert json.loads(before)["cells"][2]["outputs"] == []


@pytest.mark.parametrize("policy", ["untrusted", "on-request"])
def test_it_asks_as_run_python_does_and_a_denial_runs_nothing(kernel: Kernel, policy: str) -> None:
    notebook = kernel.ws / "a.ipynb"
    write(notebook)
    kernel.run(f"import os; os.environ['JPY_SESSION_NAME'] = {str(notebook)!r}")
    script = [[function_call("run_cell", {"cell_id": "one"}, "r1")], [say("no")]]
    with ScriptedResponsesServer(script) as model:
        kernel.execute(agent_cell(model.base_url, f"-a {policy}", "run it"))
        deny = kernel.wait_for(lambda: kernel.buttons("Deny"), timeout=90)
        # The card shows the code that would run, read from the notebook, not the id.
        code = python_html("x = 1")  # cell one's code, as run_python's card shows code
        assert any(code in v for v in kernel.html_values()), kernel.html_values()
        kernel.click(deny[0])
        kernel.wait_for(lambda: turns_done(kernel) == 1, timeout=90)
        said = model.outputs(1)["r1"]
    assert "did not allow this cell to run" in said
    assert kernel.value("'x' in dir()") is False


async def test_the_kernels_stop_button_ends_a_running_cell_and_the_cell_says_so(
    server: Server,
) -> None:
    """The person presses stop (JupyterLab's interrupt, through the server's API) while
    the agent's cell sleeps: the turn ends, the cell shows what it printed and the
    KeyboardInterrupt, and no writer of its outputs is left running in the kernel."""
    pytest.importorskip("pycrdt", reason="pip install -e '.[browser]'")
    root = server.notebooks
    write(root / "a.ipynb")
    connection = open_session(server, "a.ipynb")
    kernel = ServerKernel(connection, root)
    person = await person_types_in(server, "a.ipynb")
    code = "print('started', flush=True)\n" + SLEEPS
    script = [[function_call("run_cell", {"source": code}, "r1")], [say("not reached")]]
    try:
        kernel.run("%load_ext agent_magics")
        with ScriptedResponsesServer(script) as model:
            agent = kernel.execute(agent_cell(model.base_url, "-a never", "run it"))
            new = lambda: person.room.notebook.ycells[len(CELLS)].to_py()  # noqa: E731
            await seen(person, lambda: len(person.room.notebook.ycells) > len(CELLS))
            await seen(person, lambda: texts(new()["outputs"]) == ["started\n"])
            kernel_id = connection.stem.removeprefix("kernel-")
            request = urllib.request.Request(
                f"http://127.0.0.1:{server.port}/api/kernels/{kernel_id}/interrupt",
                b"",
                {"Authorization": f"token {server.token}"},
            )
            urllib.request.urlopen(request, timeout=30).close()
            kernel.wait_for(lambda: kernel.idle(agent), timeout=60)
        await seen(person, lambda: "KeyboardInterrupt: " in texts(new()["outputs"]))
        assert texts(new()["outputs"]) == ["started\n", "KeyboardInterrupt: "]
        writers = "[t.name for t in __import__('threading').enumerate()]"
        assert "cell-outputs" not in kernel.value(writers)
        assert cell(person, "two")["source"] == "# Notes" + TYPED
    finally:
        kernel.close()
        await person.close()
