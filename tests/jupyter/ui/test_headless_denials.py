"""A notebook run headlessly (nbclient, as papermill does) where nobody can approve: the
first denied call says once why and how to let such calls run, and the end of the turn
counts the denied calls, in the saved markdown and HTML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from agent_magics.jupyter.ui.approver import HEADLESS_NOTES
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.runtimes.shell import EXEC_REJECTED
from agent_magics.tools.unified_exec.format import create_process_failed
from agent_magics.transcript.denials import NOT_RUN
from tests.helpers.kernels import KERNEL_PYTHONS, agent_cell, write_kernelspec

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("python", KERNEL_PYTHONS[:1])
def test_a_headless_notebook_explains_the_first_denial_once_and_counts_them(
    python: str, tmp_path: Path, home: Path
) -> None:
    kernel = write_kernelspec(python, tmp_path / "specs")
    turns: list[Any] = [
        [function_call("exec_command", {"cmd": "touch one.txt"}, "c1")],
        [function_call("exec_command", {"cmd": "touch two.txt"}, "c2")],
        [message("Nothing could run.")],
    ]
    with ScriptedResponsesServer(turns) as server:
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext agent_magics"),
            nbformat.v4.new_code_cell(agent_cell(server.base_url, "-a untrusted")),
        ]
        resources = {"metadata": {"path": str(tmp_path)}}
        NotebookClient(nb, kernel_name=kernel, timeout=120, resources=resources).execute()
    data = [o["data"] for o in nb.cells[1].outputs if o.get("output_type") == "display_data"]
    (bundle,) = data  # one display, replaced by the finished transcript
    markdown, html = bundle["text/markdown"], bundle["text/html"]
    note = HEADLESS_NOTES["deny"]
    assert markdown.count("· denied") == 2
    assert markdown.count(note) == 1  # said once, on the first denied call
    assert markdown.index(note) < markdown.index("`touch two.txt`")
    assert "*2 tool calls denied by the headless policy.*" in markdown
    assert "AGENT_MAGICS_HEADLESS_APPROVAL=approve" in note and "`-a never`" in note
    assert html.count("nobody can approve in a headless run") == 1
    assert "2 tool calls denied by the headless policy.</div>" in html
    assert not (tmp_path / "one.txt").exists() and not (tmp_path / "two.txt").exists()
    # nobody was there to reject anything: the person reads our words, not Codex's
    for shown in (markdown, html, bundle["text/plain"]):
        assert "CreateProcess" not in shown and "by user" not in shown
    assert markdown.count(NOT_RUN) == 1 and html.count(NOT_RUN) == 1  # the second call
    # while the model still reads Codex's answer, byte for byte
    assert server.outputs(1)["c1"] == create_process_failed(EXEC_REJECTED)
