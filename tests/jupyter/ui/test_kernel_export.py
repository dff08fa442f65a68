"""``%agent export`` in real kernels (both ipykernel lines): the kernel's own session, a
command approved by a click and a run_python figure, exported from its file with who
approved each call; without a file, from its history, saying what is missing."""

from __future__ import annotations

import nbformat
import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow

COMMAND = "touch made.txt && echo made-it"
FIGURE = "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nprint('plotted')"


def test_the_kernel_session_exports_with_its_decisions_and_figure(kernel: Kernel) -> None:
    script = [
        [function_call("exec_command", {"cmd": COMMAND}, "c1")],
        [function_call("run_python", {"code": FIGURE}, "c2")],
        [message("Made it and plotted.")],
        [message("Nothing more to do.")],
    ]
    with ScriptedResponsesServer(script) as server:
        kernel.execute(agent_cell(server.base_url, "-a untrusted", "make and plot"))
        kernel.click(kernel.wait_for(lambda: kernel.buttons("Approve"))[-1])
        kernel.wait_for(lambda: len(kernel.buttons("Approve")) == 2)
        kernel.click(kernel.buttons("Approve")[-1])
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        # a later cell's new option is saved as a settings record, which the export
        # knows (it once counted it as "of an unknown kind")
        kernel.run(agent_cell(server.base_url, "-a never", "anything else?"))
    text = kernel.outputs_text(kernel.run("%agent export session.md"))
    assert text.startswith("Exported session ") and "(2 turns)" in text
    assert "unknown kind" not in (kernel.ws / "session.md").read_text()
    said = kernel.outputs_text(kernel.run("%agent export session.ipynb"))
    path = kernel.ws / "session.ipynb"
    assert said.startswith("Exported session ") and said.endswith(f"(2 turns) to {path}.\n")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = {c.metadata["agent_magics"]["tool"]: c for c in nb.cells if c.cell_type == "code"}
    command = code["exec_command"]
    assert command.source == COMMAND
    assert command.metadata["agent_magics"]["decision"] == "approved"
    assert command.metadata["agent_magics"]["decided_by"] == "user"
    assert command.outputs[0].text == "made-it\n"
    python = code["run_python"]
    assert python.source == FIGURE
    kinds = [o.output_type for o in python.outputs]
    assert kinds == ["stream", "display_data"] and "plotted" in python.outputs[0].text
    assert python.outputs[1].data["image/png"]
    again = kernel.outputs_text(kernel.run("%agent export session.ipynb"))
    assert again == f"agent: {path} exists already; add --force to replace it.\n"


def test_a_session_not_saved_exports_its_history(kernel: Kernel) -> None:
    script = [[function_call("exec_command", {"cmd": "echo from-history"}, "c1")], [message("ok")]]
    with ScriptedResponsesServer(script) as server:
        kernel.run(agent_cell(server.base_url, "-a never -c sessions_dir=false", "say it"))
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
    assert not (kernel.ws / ".agent_magics" / "sessions").exists()
    said = kernel.outputs_text(kernel.run("%agent export live.md"))
    assert said.endswith(f"(1 turn) to {kernel.ws / 'live.md'}.\n")
    text = (kernel.ws / "live.md").read_text()
    assert "*This session was not saved to disk, so who approved each call" in text
    assert "> say it\n\n" in text
    assert "```console\n$ echo from-history\n```" in text
    assert "```text\nfrom-history\n```" in text
    assert text.endswith("\n\nok\n")
