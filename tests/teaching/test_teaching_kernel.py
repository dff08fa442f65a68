"""A teacher's policy through real turns: notebooks written with their metadata and run
by nbclient in real kernels that know their notebook as Jupyter Server tells them
(``JPY_SESSION_NAME``), a site file where an administrator puts it (in a kernel
environment of the test's own), and a scripted model on 127.0.0.1 that keeps every
request it receives."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from tests.helpers.kernels import KERNEL_PYTHONS, NO_LOGIN, write_kernelspec
from tests.helpers.teaching import site_file

pytestmark = pytest.mark.slow

LOOSEN = """*** Begin Patch
*** Update File: course.ipynb
@@
-   "run_python": false
+   "run_python": true
*** End Patch"""
PLAYS = {
    "try python": [function_call("run_python", {"code": "print(6 * 7)"}, "call_py")],
    "loosen": [custom_tool_call("apply_patch", LOOSEN, "call_patch")],
    "read the homework": [function_call("read_notebook", {"path": "homework.ipynb"}, "call_r")],
}
NOTEBOOK = "this notebook's metadata"


def play(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The model: a tool call for the prompts in :data:`PLAYS`, then (or else) an answer."""
    last = body["input"][-1]
    if last.get("type") != "message":
        return [message("ok")]
    return PLAYS.get(last["content"][0]["text"], [message("done")])


@pytest.fixture
def model() -> Iterator[ScriptedResponsesServer]:
    with ScriptedResponsesServer([play] * 100) as server:
        yield server


def run_notebook(python: str, home: Path, policy: Any, cells: list[str]) -> Any:
    """Write ``course.ipynb`` with ``policy`` in its metadata and run it as a person's
    server would: the kernel is told which notebook it belongs to."""
    path = home / "course.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.metadata["agent_magics"] = policy
    nb.cells = [nbformat.v4.new_code_cell(c) for c in ["%load_ext agent_magics", *cells]]
    nbformat.write(nb, path)
    kernel = write_kernelspec(python, home / "specs")
    client = NotebookClient(
        nb,
        kernel_name=kernel,
        timeout=120,
        allow_errors=True,
        resources={"metadata": {"path": str(home)}},
    )
    client.execute(env={**os.environ, "JPY_SESSION_NAME": str(path)})
    return nb


def error_of(cell: Any) -> str:
    (error,) = [o for o in cell.outputs if o["output_type"] == "error"]
    assert error["ename"] == "AgentTurnFailed"
    return str(error["evalue"])


def transcript(cell: Any) -> str:
    assert not [o for o in cell.outputs if o["output_type"] == "error"]
    shown = [
        o["data"]["text/markdown"] for o in cell.outputs if "text/markdown" in o.get("data", {})
    ]
    return str(shown[-1])


def text_of(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs)


def offered(server: ScriptedResponsesServer) -> list[set[str]]:
    return [{t.get("name") for t in body.get("tools", [])} for body in server.requests]


@pytest.mark.parametrize("python", KERNEL_PYTHONS)
def test_notebook_policy_keeps_run_python_out_and_refuses_a_loosening(
    python: str, home: Path, model: ScriptedResponsesServer
) -> None:
    url = f"--base-url {model.base_url} {NO_LOGIN}"
    policy = {"run_python": False, "max_approval_policy": "on-request"}
    policy |= {"max_sandbox": "workspace-write"}
    nb = run_notebook(
        python,
        home,
        policy,
        [
            f"%%agent {url} -a never -s danger-full-access\ngo",
            f"%%agent {url} -s read-only\ntry python",  # a cell may tighten
            "%agent status",
            f"%%agent --new {url}\nloosen",  # the turn tries to rewrite its metadata
            "%%agent\ntry python",
        ],
    )
    refused, tightened, status, loosen, after = nb.cells[1:]
    assert error_of(refused) == (
        "The teacher's policy (this notebook's metadata) allows approval up to on-request and "
        "sandbox up to workspace-write; this cell asks for -a never -s danger-full-access."
    )
    header = (
        "Teacher's policy (this notebook's metadata): approval up to on-request and sandbox "
        "up to workspace-write; no run_python."
    )
    assert header in transcript(tightened)
    assert "sandbox:         read-only" in text_of(status)
    assert f"policy:          {header}" in text_of(status)
    assert "**apply_patch**" in transcript(loosen)
    saved = json.loads((home / "course.ipynb").read_text())
    assert saved["metadata"]["agent_magics"]["run_python"] is False  # read-only to patches
    inputs = [json.dumps(body["input"]) for body in model.requests]
    refused = "so no command or patch runs outside the sandbox here: not this one."
    assert any(refused in i for i in inputs)  # outside the writable roots: refused
    assert header in transcript(after)  # ...and the next turn is bound all the same
    tools = offered(model)
    assert len(tools) == 6 and all("exec_command" in t for t in tools)
    assert not any("run_python" in t for t in tools)  # in no request the server received
    py = [
        o for i in range(len(model.requests)) for k, o in model.outputs(i).items() if k == "call_py"
    ]
    assert py == ["unsupported call: run_python"] * 2  # a call anyway is to an unknown tool


def test_a_site_file_stricter_than_the_notebook_wins(
    site_python: Path, home: Path, model: ScriptedResponsesServer
) -> None:
    site = site_file(site_python, 'max_sandbox = "read-only"\nrun_python = false\n')
    url = f"--base-url {model.base_url} {NO_LOGIN}"
    nb = run_notebook(
        str(site_python),
        home,
        {"max_sandbox": "workspace-write"},
        [
            f"%%agent {url} -s workspace-write\ngo",
            "%config AgentMagics.sandbox = 'workspace-write'",
            f"%%agent {url}\ngo",
            "%config AgentMagics.sandbox = None",
            f"%%agent --new {url}\ngo",
            "%agent status",
        ],
    )
    refused, _, by_config, _, ran, status = nb.cells[1:]
    limit = f"The teacher's policy (the site file {site}) allows sandbox up to read-only; "
    assert error_of(refused) == f"{limit}this cell asks for -s workspace-write."
    assert error_of(by_config) == (
        f"{limit}the settings (%config, AGENT_MAGICS_*, a config file, -c or a resume) ask "
        "for -s workspace-write."
    )
    assert "done" in transcript(ran)
    assert "sandbox:         read-only" in text_of(status)  # the default, brought down
    assert not any("run_python" in t for t in offered(model))
    # agent-magics exec honours the site file too
    argv = [str(site_python), "-m", "agent_magics", "exec", "--base-url", model.base_url]
    done = subprocess.run(
        [*argv, "-s", "danger-full-access", "go"], capture_output=True, text=True, cwd=home
    )
    assert done.returncode == 1
    assert "allows sandbox up to read-only; these settings ask for -s danger-full-access." in (
        done.stderr
    )
    site.write_text("max_sandbox = 'read-only'\ndenied_tools = ['apply_patch']\n")
    done = subprocess.run([*argv, "go"], capture_output=True, text=True, cwd=home)
    assert done.returncode == 0, done.stderr
    assert "apply_patch" not in offered(model)[-1] and "exec_command" in offered(model)[-1]


def test_a_site_policy_withholds_answers_from_agent_magics_exec_too(
    site_python: Path, home: Path, model: ScriptedResponsesServer
) -> None:
    """``agent-magics exec`` with the notebook tools asked for holds them to the site
    file's ``solution_cells`` as a kernel does (it once offered the plain ones)."""
    answer = nbformat.v4.new_code_cell("ANSWER_TEXT_4f1c = 42")
    answer.metadata["nbgrader"] = {
        "grade_id": "answer", "schema_version": 3, "solution": True, "grade": False,
        "locked": False,
    }  # fmt: skip
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Homework"), answer])
    nbformat.write(nb, home / "homework.ipynb")
    site = site_file(site_python, 'solution_cells = "withhold"\n')
    argv = [str(site_python), "-m", "agent_magics", "exec", "--base-url", model.base_url]
    argv += ["-c", 'experimental_supported_tools=["read_notebook"]', "read the homework"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, cwd=home)
    finally:
        site.unlink()
    assert done.returncode == 0, done.stderr
    outputs = [i for i in model.requests[-1]["input"] if i.get("call_id") == "call_r"]
    assert "withheld" in json.dumps(outputs[-1])
    assert not any("ANSWER_TEXT_4f1c" in json.dumps(body) for body in model.requests)


@pytest.mark.parametrize(
    ("policy", "sentence"),
    [
        pytest.param(
            {"enabled": False},
            "The teacher's policy (this notebook's metadata) turns the agent off here.",
            id="off",
        ),
        pytest.param(
            {"run_python": "no"},
            "The teacher's policy in this notebook's metadata cannot be read (run_python must "
            "be true or false, not 'no'), so the agent is off until it is fixed.",
            id="broken",
        ),
    ],
)
def test_an_agent_turned_off_or_a_broken_policy_starts_no_turn(
    policy: Any, sentence: str, home: Path, model: ScriptedResponsesServer
) -> None:
    url = f"--base-url {model.base_url} {NO_LOGIN}"
    python = KERNEL_PYTHONS[0].values[0]
    nb = run_notebook(python, home, policy, [f"%%agent {url}\ngo", "%agent status"])
    assert error_of(nb.cells[1]) == sentence
    assert f"policy:          {sentence}" in text_of(nb.cells[2])
    assert model.requests == []
