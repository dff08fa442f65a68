"""What a notebook run headlessly (nbclient, as papermill does) tells the model of
approvals (issue 34): nobody answers them, so the headless policy does, denying or (with
``AGENT_MAGICS_HEADLESS_APPROVAL=approve``) approving every one, and the instructions say
which, with what runs without asking under the cell's policy and sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from agent_magics.agent.headless_rules import headless_rules
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.testing import ScriptedResponsesServer, message
from tests.helpers.kernels import KERNEL_PYTHONS, agent_cell, write_kernelspec

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("python", KERNEL_PYTHONS[:1])
@pytest.mark.parametrize("answer", ["deny", "approve"])
def test_a_headless_notebook_tells_the_model_nobody_answers_and_what_becomes_of_calls(
    python: str, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, answer: str
) -> None:
    if answer == "approve":
        monkeypatch.setenv("AGENT_MAGICS_HEADLESS_APPROVAL", "approve")
    kernel = write_kernelspec(python, tmp_path / "specs")
    turns: list[Any] = [[message("Looked.")]]
    with ScriptedResponsesServer(turns) as server:
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext agent_magics"),
            nbformat.v4.new_code_cell(agent_cell(server.base_url, "-a on-request")),
        ]
        resources = {"metadata": {"path": str(tmp_path)}}
        NotebookClient(nb, kernel_name=kernel, timeout=120, resources=resources).execute()
    told = server.requests[0]["instructions"]
    flat = " ".join(told.split())
    assert "Nobody can answer an approval question here" in flat
    assert "A person reads your messages in the notebook" not in flat
    fate = "the run approves every call" if answer == "approve" else "is denied, and you are told"
    assert fate in flat
    rules = headless_rules(
        ApprovalPolicy.ON_REQUEST, SandboxMode.WORKSPACE_WRITE, answer == "approve"
    )
    assert all(f"- {rule}\n" in told for rule in rules)
