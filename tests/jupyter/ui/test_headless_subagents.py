"""Sub-agents in a notebook run headlessly (nbclient, as papermill and Run All do): a cell
whose model starts a helper and answers without waiting still ends only once the helper
is done, so the next cell reads the helper's file and the next ``%%agent`` cell's request
carries its result; the saved cell shows the helper nested and completed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from agent_magics.testing import ConversationsServer, HttpFailure, function_call, message
from tests.helpers.agents import agent_call, spawned_ids
from tests.helpers.kernels import KERNEL_PYTHONS, agent_cell, write_kernelspec

pytestmark = pytest.mark.slow

PARENT = "Start a helper to write the summary, then tell me you started it."
CHILD = "Write summary.txt saying 'rows: 3'."
LATER = "What did the helper report?"


@pytest.mark.parametrize("python", KERNEL_PYTHONS[:1])
def test_run_all_waits_for_the_helpers_a_cell_started(
    python: str, tmp_path: Path, home: Path
) -> None:
    kernel = write_kernelspec(python, tmp_path / "specs")
    write = {"cmd": "sleep 2; echo 'rows: 3' > summary.txt"}  # inside the workspace: no question
    scripts = {
        PARENT: [[agent_call("spawn_agent", {"message": CHILD}, "s1")], [message("Started.")]],
        CHILD: [[function_call("exec_command", write, "c1")], [message("summary.txt written")]],
        LATER: [[message("It wrote summary.txt.")]],
    }
    with ConversationsServer(scripts) as server:
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext agent_magics"),
            nbformat.v4.new_code_cell(agent_cell(server.base_url, "", PARENT)),
            nbformat.v4.new_code_cell("print(open('summary.txt').read().strip())"),
            nbformat.v4.new_code_cell(agent_cell(server.base_url, "", LATER)),
        ]
        resources = {"metadata": {"path": str(tmp_path)}}
        NotebookClient(nb, kernel_name=kernel, timeout=120, resources=resources).execute()
        later = json.dumps(server.by_conversation[LATER][0]["input"])
    assert nb.cells[2].outputs[0]["text"] == "rows: 3\n"  # the helper had finished
    assert "<subagent_notification>" in later and "summary.txt written" in later
    [bundle] = [o["data"] for o in nb.cells[1].outputs if o.get("output_type") == "display_data"]
    assert "completed" in bundle["text/markdown"] and CHILD in bundle["text/markdown"]
    assert 'class="agent-magics-subagent"' in bundle["text/html"]


FAILING = "Fetch the remote table."
FIRST, SECOND = "Start a helper to fetch the table.", "Close that helper."


@pytest.mark.parametrize("python", KERNEL_PYTHONS[:1])
def test_a_failed_helper_and_a_helper_closed_later_read_as_ended(
    python: str, tmp_path: Path, home: Path
) -> None:
    """A helper whose model server refused it reads as errored, not still "Working…"
    (its own turn never ended); closing it in the next cell adds no nameless spawn_agent
    card reading "Starting…" (the close_agent card says it)."""
    kernel = write_kernelspec(python, tmp_path / "specs")
    refused = HttpFailure(400, json.dumps({"error": {"message": "bad request"}}))

    def close(body: dict[str, Any]) -> list[dict[str, Any]]:
        [agent_id] = spawned_ids(body, "s1")
        return [agent_call("close_agent", {"target": agent_id}, "x1")]

    scripts = {
        FIRST: [[agent_call("spawn_agent", {"message": FAILING}, "s1")], [message("Started.")]],
        FAILING: [refused],
        SECOND: [close, [message("Closed.")]],
    }
    with ConversationsServer(scripts) as server:
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext agent_magics"),
            nbformat.v4.new_code_cell(agent_cell(server.base_url, "", FIRST)),
            nbformat.v4.new_code_cell(agent_cell(server.base_url, "", SECOND)),
        ]
        resources = {"metadata": {"path": str(tmp_path)}}
        NotebookClient(nb, kernel_name=kernel, timeout=120, resources=resources).execute()
    [first] = [o["data"] for o in nb.cells[1].outputs if o.get("output_type") == "display_data"]
    assert "errored" in first["text/markdown"] and "bad request" in first["text/markdown"]
    assert "Working…" not in first["text/markdown"] + first["text/html"]
    [second] = [o["data"] for o in nb.cells[2].outputs if o.get("output_type") == "display_data"]
    assert "close_agent" in second["text/markdown"]
    assert "spawn_agent" not in second["text/markdown"]
    assert "Starting…" not in second["text/markdown"] + second["text/html"]
