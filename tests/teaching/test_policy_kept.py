"""A teacher's policy the agent cannot take off its notebook, through real turns: the
notebook run by nbclient in a real kernel that knows it (``JPY_SESSION_NAME``), the
home as the working folder (as on Binder), a scripted model on 127.0.0.1 whose
commands, patches and helper try to strip ``metadata.agent_magics`` from the notebook,
under bubblewrap and under Landlock; then the kernel started again, as a restart does.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from agent_magics.testing import ConversationsServer, custom_tool_call, function_call, message
from agent_magics.tools.sandbox.platform import MECHANISM_ENV
from tests.helpers.agents import agent_call
from tests.helpers.kernels import KERNEL_PYTHONS, NO_LOGIN, write_kernelspec
from tests.helpers.sandbox import LINUX_MECHANISMS, require_mechanism

pytestmark = pytest.mark.slow

NOTE = {"session": "s0", "time": "2026-01-01T00:00:00+00:00", "grade_id": "q1", "action": "read"}
POLICY = {"run_python": False, "max_sandbox": "workspace-write", "graded_turns": [NOTE]}
STRIP = (
    "import json, os, shutil\n"
    "p = 'course.ipynb'\n"
    "nb = json.load(open(p))\n"
    "nb['metadata'].pop('agent_magics', None)\n"
    "text = json.dumps(nb)\n"
    "def in_place():\n"
    "    with open(p, 'w') as f:\n"
    "        f.write(text)\n"
    "def renamed():\n"
    "    with open('.stripped.tmp', 'w') as f:\n"
    "        f.write(text)\n"
    "    os.replace('.stripped.tmp', p)\n"
    "def unpin():\n"
    "    shutil.rmtree(os.path.expanduser('~/.agent_magics/policies'))\n"
    "for how in (in_place, renamed, lambda: os.remove(p), unpin):\n"
    "    try:\n"
    "        how()\n"
    "        print('WRITTEN')\n"
    "    except OSError as e:\n"
    "        print('refused:', e.strerror)\n"
)
STRIP_CMD = f"python3 -c {shlex.quote(STRIP)}; echo end"
LOOSEN = """*** Begin Patch
*** Update File: course.ipynb
@@
-   "run_python": false
+   "run_python": true
*** End Patch"""
BY_COMMAND, BY_PATCH = "Strip it by command.", "Strip it by patch."
BY_HELPER = "Strip it by helper."
CHILD = "Strip the policy from course.ipynb."
PYTHON = "Try python."
SCRIPTS = {
    BY_COMMAND: [[function_call("exec_command", {"cmd": STRIP_CMD}, "c1")], [message("tried")]],
    BY_PATCH: [[custom_tool_call("apply_patch", LOOSEN, "p1")], [message("tried")]],
    BY_HELPER: [[agent_call("spawn_agent", {"message": CHILD}, "s1")], [message("started")]],
    CHILD: [[function_call("exec_command", {"cmd": STRIP_CMD}, "c2")], [message("tried")]],
    PYTHON: [[function_call("run_python", {"code": "print(6 * 7)"}, "py")], [message("no")]],
}


def write_course(home: Path, policy: dict[str, Any]) -> Path:
    path = home / "course.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.metadata["agent_magics"] = policy
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(nb, path)
    return path


def run_kernel(home: Path, cells: list[str], mechanism: str = "bwrap") -> Any:
    """``cells`` run by nbclient in a new kernel that belongs to ``course.ipynb``."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in ["%load_ext agent_magics", *cells]]
    kernel = write_kernelspec(KERNEL_PYTHONS[0].values[0], home / "specs")
    client = NotebookClient(
        nb, kernel_name=kernel, timeout=180, allow_errors=True,
        resources={"metadata": {"path": str(home)}},
    )  # fmt: skip
    env = {**os.environ, "JPY_SESSION_NAME": str(home / "course.ipynb"), MECHANISM_ENV: mechanism}
    client.execute(env=env)
    return nb


def text_of(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs)


def offered(bodies: list[dict[str, Any]]) -> set[str]:
    return {str(t.get("name")) for body in bodies for t in body.get("tools", [])}


def said(server: ConversationsServer, call_id: str) -> str:
    found = [
        str(item["output"])
        for body in server.requests
        for item in body["input"]
        if item.get("type") in ("function_call_output", "custom_tool_call_output")
        and item.get("call_id") == call_id
    ]
    return found[-1]


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_no_command_patch_or_helper_takes_the_policy_off_the_notebook(
    mechanism: str, home: Path
) -> None:
    """Under ``-a never`` nobody is asked: a sandboxed ``python3 -c`` that rewrites,
    replaces or removes the notebook, a patch that loosens it, the same command from a
    helper, and a command that removes the pinned policy all fail; the notebook keeps
    every byte, and a kernel started afresh is held to the policy."""
    require_mechanism(mechanism)
    course = write_course(home, POLICY)
    before = course.read_bytes()
    with ConversationsServer(SCRIPTS) as server:
        url = f"--base-url {server.base_url} {NO_LOGIN} -a never -s workspace-write"
        run_kernel(
            home,
            [f"%%agent {url}\n{prompt}" for prompt in (BY_COMMAND, BY_PATCH, BY_HELPER)],
            mechanism,
        )
        first = len(server.requests)
        nb = run_kernel(home, ["%agent status", f"%%agent --base-url {server.base_url}\n{PYTHON}"])
        again = server.requests[first:]
        patched, by_command, by_helper = said(server, "p1"), said(server, "c1"), said(server, "c2")
    assert course.read_bytes() == before
    for output in (by_command, by_helper):
        assert "WRITTEN" not in output and output.count("refused:") == 4, output
        assert "end" in output
    limit = "allows sandbox up to workspace-write, so no command or patch runs outside"
    assert "Operation not permitted" in patched or limit in patched, patched
    pins = list((home / ".agent_magics" / "policies").glob("course-*.json"))
    assert len(pins) == 1  # the command could not remove it
    status = text_of(nb.cells[1])
    assert "policy:          Teacher's policy (this notebook's metadata): sandbox up to" in status
    assert "no run_python" in status
    assert again and not {"run_python", "run_cell"} & offered(again)
    assert said(server, "py") == "unsupported call: run_python"


def test_the_first_policy_seen_is_pinned_outside_the_working_folder(home: Path) -> None:
    """What strips the policy off the notebook from outside the sandbox (a command a
    person approved to run unsandboxed, the person's own editor) loosens nothing: the
    next kernel is held to the pinned copy, which ``%agent status`` names; once the
    person deletes that file, the notebook's own (now empty) metadata decides."""
    course = write_course(home, {"run_python": False})
    with ConversationsServer({PYTHON: SCRIPTS[PYTHON]}) as server:
        cell = f"%%agent --base-url {server.base_url} {NO_LOGIN}\n{PYTHON}"
        run_kernel(home, ["%agent status"])
        nb = nbformat.read(course, 4)
        del nb.metadata["agent_magics"]
        nbformat.write(nb, course)
        pinned = run_kernel(home, ["%agent status", cell])
        held = list(server.requests)
        (pin,) = (home / ".agent_magics" / "policies").glob("course-*.json")
        assert json.loads(pin.read_text())["policy"] == {"run_python": False}
        pin.unlink()
        freed = run_kernel(home, ["%agent status", cell])
        after = server.requests[len(held) :]
    status = text_of(pinned.cells[1])
    assert "policy:          Teacher's policy (this notebook's pinned policy): no run_python." in (
        status
    )
    assert f"policy pin:      {pin} (the first policy seen for this notebook" in status
    assert "a teacher deletes this file and restarts the kernel" in status
    assert held and "run_python" not in offered(held)
    assert "\npolicy:" not in text_of(freed.cells[1])
    assert "run_python" in offered(after)
