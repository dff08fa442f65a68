"""A teacher's ``max_sandbox`` bounds every call of the agent (issue 31, item 4): under
``max_sandbox = "read-only"`` (in the notebook's metadata, or in the site file for
``agent-magics exec``) no command, patch or helper's command runs with more access than
that sandbox, even when a person approves every question. An escalation is refused before
anyone is asked, a command the sandbox blocked is not offered again without it, a patch
outside the writable roots is refused; the model reads one sentence naming the policy.

Real kernels run the notebook through nbclient, under bubblewrap and Landlock; the headless
approver approves every question (the most a person could say yes to)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from agent_magics.tools.sandbox.platform import MECHANISM_ENV
from tests.helpers.agents import agent_call
from tests.helpers.kernels import KERNEL_PYTHONS, NO_LOGIN, write_kernelspec
from tests.helpers.sandbox import LINUX_MECHANISMS, require_mechanism
from tests.helpers.teaching import site_file

pytestmark = pytest.mark.slow

NOTEBOOK_LIMIT = "The teacher's policy (this notebook's metadata) allows sandbox up to read-only"
REFUSED = "so no command or patch runs outside the sandbox here"


def plays(outside: Path) -> dict[str, list[dict[str, Any]]]:
    escalate = {
        "cmd": f"touch {outside / 'escalated'}",
        "sandbox_permissions": "require_escalated",
        "justification": "write outside",
    }
    patch = f"*** Begin Patch\n*** Add File: {outside / 'patched'}\n+x\n*** End Patch"
    child = dict(escalate, cmd=f"touch {outside / 'by_helper'}")
    return {
        "escalate": [function_call("exec_command", escalate, "call_esc")],
        "retry": [function_call("exec_command", {"cmd": "touch blocked.txt"}, "call_retry")],
        "patch": [custom_tool_call("apply_patch", patch, "call_patch")],
        "delegate": [agent_call("spawn_agent", {"message": "helper escalates"}, "call_spawn")],
        "helper escalates": [function_call("exec_command", child, "call_child")],
    }


def model_for(outside: Path) -> ScriptedResponsesServer:
    scripted = plays(outside)

    def play(body: dict[str, Any]) -> list[dict[str, Any]]:
        last = body["input"][-1]
        if last.get("type") != "message":
            return [message("ok")]
        return scripted.get(last["content"][0]["text"], [message("done")])

    return ScriptedResponsesServer([play] * 100)


def outputs_of(server: ScriptedResponsesServer) -> dict[str, str]:
    return {k: v for i in range(len(server.requests)) for k, v in server.outputs(i).items()}


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
@pytest.mark.parametrize("python", KERNEL_PYTHONS)
def test_no_call_runs_with_more_access_than_the_notebooks_max_sandbox(
    python: str, mechanism: str, home: Path
) -> None:
    require_mechanism(mechanism)
    outside = home / "outside"
    outside.mkdir()
    ws = home / "ws"
    ws.mkdir()
    path = ws / "course.ipynb"
    with model_for(outside) as server:
        url = f"--base-url {server.base_url} {NO_LOGIN}"
        nb = nbformat.v4.new_notebook()
        nb.metadata["agent_magics"] = {"max_sandbox": "read-only"}
        cells = [
            "%load_ext agent_magics",
            f"%%agent {url} -a on-request\nescalate",
            f"%%agent {url} -a untrusted\nretry",
            f"%%agent {url} -a on-request\npatch",
            f"%%agent {url} -a on-request\ndelegate",
        ]
        nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
        nbformat.write(nb, path)
        kernel = write_kernelspec(python, home / "specs")
        client = NotebookClient(
            nb, kernel_name=kernel, timeout=120, allow_errors=True,
            resources={"metadata": {"path": str(ws)}},
        )  # fmt: skip
        env = {**os.environ, "JPY_SESSION_NAME": str(path), MECHANISM_ENV: mechanism}
        client.execute(env={**env, "AGENT_MAGICS_HEADLESS_APPROVAL": "approve"})
        said = outputs_of(server)
    assert sorted(p.name for p in outside.iterdir()) == []  # nothing was written outside
    assert not (ws / "blocked.txt").exists()  # nor inside: the sandbox is read-only
    for call in ("call_esc", "call_retry", "call_patch", "call_child"):
        assert NOTEBOOK_LIMIT in said[call] and REFUSED in said[call], (call, said[call])
    assert "the sandbox blocked this one" in said["call_retry"]
    assert all(not o.get("text", "").startswith("Traceback") for c in nb.cells for o in c.outputs)


def test_agent_magics_exec_is_bound_by_the_site_files_max_sandbox(
    site_python: Path, home: Path
) -> None:
    site = site_file(site_python, 'max_sandbox = "read-only"\n')
    outside = home / "outside"
    outside.mkdir()
    ws = home / "ws"
    ws.mkdir()
    argv = [str(site_python), "-m", "agent_magics", "exec", "-c", "allow_login_shell=false"]
    try:
        with model_for(outside) as server:
            for prompt, policy in [("escalate", "on-request"), ("patch", "on-request")]:
                args = [*argv, "--base-url", server.base_url, "-a", policy, prompt]
                done = subprocess.run(args, capture_output=True, text=True, cwd=ws, timeout=120)
                assert done.returncode == 0, done.stderr
                assert "approval denied" not in done.stderr  # refused before anyone is asked
            said = outputs_of(server)
    finally:
        site.unlink()
    limit = f"The teacher's policy (the site file {site}) allows sandbox up to read-only"
    assert limit in said["call_esc"] and limit in said["call_patch"]
    assert list(outside.iterdir()) == []
