"""read_notebook and edit_notebook in real kernels (both ipykernel lines): a kernel
session is offered them without any setting, the model reads another notebook of the
folder as cells, and its approved edit leaves a file that nbformat's validator accepts."""

from __future__ import annotations

from typing import Any

import nbformat
import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow


def text_of(output: Any) -> str:
    if isinstance(output, str):
        return output
    return "\n".join(i.get("text", "") for i in output if i.get("type") == "input_text")


def test_a_notebook_file_is_read_as_cells_and_edited_into_a_valid_notebook(
    kernel: Kernel,
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("total = 1 + 1", id="first"),
                nbformat.v4.new_markdown_cell("# Notes", id="notes")]  # fmt: skip
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="made total\n")]
    path = kernel.ws / "analysis.ipynb"
    nbformat.write(nb, path)
    insert = {"path": "analysis.ipynb", "cell_id": "first", "edit_mode": "insert",
              "cell_type": "code", "new_source": "print(total * 10)"}  # fmt: skip
    script = [
        [function_call("read_notebook", {"path": "analysis.ipynb"}, "r1")],
        [function_call("edit_notebook", insert, "e1")],
        [message("inserted")],
    ]
    with ScriptedResponsesServer(script) as server:
        kernel.execute(agent_cell(server.base_url, "-a untrusted", "add a cell after the first"))
        kernel.wait_for(lambda: len(server.requests) == 2)
        offered = [t.get("name") for t in server.requests[0]["tools"]]
        assert {"read_notebook", "edit_notebook"} <= set(offered)
        read = text_of(server.outputs(1)["r1"])
        assert "--- cell 1 · id first · code" in read and "made total" in read
        assert "total = 1 + 1" in read and '"cells"' not in read  # cells, not JSON
        kernel.click(kernel.wait_for(lambda: kernel.buttons("Approve"))[-1])
        kernel.wait_for(lambda: len(server.requests) == 3)
        assert "Inserted code cell" in text_of(server.outputs(2)["e1"])
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
    edited = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    nbformat.validate(edited)
    assert [c.source for c in edited.cells] == ["total = 1 + 1", "print(total * 10)", "# Notes"]
    assert edited.cells[0].outputs[0]["text"] == "made total\n"  # the rest kept as it was
