"""Scripted notebooks: a parameter reaching the prompt (``%%agent -f``), and a turn run
from code that waits and returns its answer (``agent_magics.ask``, ``ask_async``).

Before, a papermill parameter never reached a ``%%agent`` prompt (``{task}`` was sent
as written), and ``get_ipython().run_cell_magic("agent", ...)`` from code returned at
once, the saved notebook keeping "Starting…". papermill is not installed here, so the
notebook runs under nbclient with the parameters cell papermill injects (its tag
``injected-parameters``, after the cell tagged ``parameters``). Real kernels (ipykernel
7.4 and 6), a scripted model server on 127.0.0.1, a plain script in a subprocess.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from agent_magics.testing import ScriptedResponsesServer, function_call, message, user_texts
from tests.helpers.kernels import (
    KERNEL_PYTHONS,
    NO_LOGIN,
    TURN_DONE,
    Kernel,
    kernel_manager,
    write_kernelspec,
)
from tests.helpers.notebooks import transcript

pytestmark = pytest.mark.slow

FILLED = 'Please {task} in {folder!r}; answer as {{"rows": N}}.'
AS_WRITTEN = "Keep {task} and {{this}} as they are."
WRITE = function_call("exec_command", {"cmd": "echo asked > result.txt"}, "c1")


def code(source: str, *tags: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = list(tags)
    return cell


def parametrized(cells: list[nbformat.NotebookNode]) -> nbformat.NotebookNode:
    """A notebook with a parameters cell and the cell papermill injects after it."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        code("%load_ext agent_magics\nimport agent_magics"),
        code('task = "count the rows"\nfolder = "."', "parameters"),
        code('# Parameters\ntask = "count the orders"\nfolder = "data"\n', "injected-parameters"),
        *cells,
    ]
    return nb


def run(nb: nbformat.NotebookNode, python: str, home: Path) -> nbformat.NotebookNode:
    kernel = write_kernelspec(python, home / "specs")
    client = NotebookClient(
        nb, kernel_name=kernel, timeout=120, resources={"metadata": {"path": str(home)}}
    )
    client.execute()
    return nb


def stream_text(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o["output_type"] == "stream")


@pytest.mark.parametrize("python", KERNEL_PYTHONS)
def test_a_parameter_reaches_the_prompt_and_ask_returns(python: str, home: Path) -> None:
    with ScriptedResponsesServer([[message("filled")], [message("as written")]]) as server:
        base = f"--base-url {server.base_url} {NO_LOGIN}"
        nb = parametrized(
            [
                code(f"%%agent {base} -f\n{FILLED}"),
                code(f"%%agent\n{AS_WRITTEN}"),
                code('answer = await agent_magics.ask_async("and the total?")\nprint(answer)'),
            ]
        )
        run(nb, python, home)
        prompts = [user_texts(body)[-1] for body in server.requests]
    assert prompts == [
        "Please count the orders in 'data'; answer as {\"rows\": N}.",
        AS_WRITTEN,
        "and the total?",
    ]
    asked = nb.cells[-1]
    assert stream_text(asked) == "done\n"  # the answer, returned
    saved = transcript(asked)
    assert "done" in saved and "*Tokens: " in saved  # a finished transcript, with its footer
    assert "Starting" not in saved


@pytest.mark.parametrize("python", KERNEL_PYTHONS)
def test_a_missing_name_fails_the_cell_before_a_turn(python: str, home: Path) -> None:
    with ScriptedResponsesServer() as server:
        nb = parametrized(
            [
                code(f"%%agent --base-url {server.base_url} -f\nPlease {{tsak}}."),
                code("print('ran after it')"),
            ]
        )
        with pytest.raises(CellExecutionError):
            run(nb, python, home)
        assert server.requests == []  # no turn started
    (error,) = [o for o in nb.cells[-2].outputs if o["output_type"] == "error"]
    assert error["ename"] == "AgentTurnFailed"
    assert error["evalue"].startswith("The prompt names {tsak}, but the notebook has no variable")
    assert nb.cells[-1].outputs == []


def test_run_cell_magic_from_code_says_what_waits(home: Path) -> None:
    with ScriptedResponsesServer() as server:
        line = f"--base-url {server.base_url}"
        nb = parametrized([code(f"get_ipython().run_cell_magic('agent', {line!r}, 'go')")])
        with pytest.raises(CellExecutionError):
            run(nb, KERNEL_PYTHONS[0].values[0], home)
        assert server.requests == []
    said = stream_text(nb.cells[-1])  # IPython says a UsageError in one line, no traceback
    assert said.startswith("UsageError: run_cell_magic('agent', ...) called from code")
    assert "await agent_magics.ask_async(prompt)" in said


@pytest.fixture(params=KERNEL_PYTHONS)
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kernel]:
    """A kernel driven as a front end drives it (``allow_stdin`` true: not headless)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    k = Kernel(kernel_manager(request.param, tmp_path / "specs"), ws)
    try:
        k.run("import agent_magics")
        yield k
    finally:
        k.close()


def test_ask_async_in_a_cell_takes_clicks_where_the_kernel_can(live: Kernel) -> None:
    """On ipykernel >= 7.4 the awaiting cell's card takes the click; older kernels give a
    busy cell no clicks, so the call that asks is denied, the transcript saying why."""
    with ScriptedResponsesServer([[WRITE], [message("wrote it")]]) as server:
        call = (
            f"answer = await agent_magics.ask_async('write it', base_url={server.base_url!r}, "
            "approval_policy='untrusted', sandbox='danger-full-access', "
            "config=['allow_login_shell=false'])\nprint(answer)"
        )
        takes_clicks = live.ipykernel_version() >= (7, 4)  # asked first: the cell holds the queue
        msg_id = live.execute(call)
        if takes_clicks:
            live.click(live.wait_for(lambda: live.buttons("Approve"))[-1])
            live.wait_for(lambda: live.idle(msg_id))
            assert (live.ws / "result.txt").read_text() == "asked\n"
            assert live.shows(TURN_DONE)
        else:
            live.wait_for(lambda: live.idle(msg_id))
            assert not (live.ws / "result.txt").exists()
            assert live.buttons("Approve") == []
            saved = live.saved_outputs(msg_id)
            shown = "".join(str(o.get("data", {}).get("text/markdown", "")) for o in saved)
            assert "gives a busy cell no clicks" in shown
        messages = [m for m in live.log if m["parent_header"].get("msg_id") == msg_id]
        assert live.outputs_text([m for m in messages if m["msg_type"] == "stream"]) == (
            "wrote it\n"
        )
        assert live.value("answer") == "wrote it"
        assert user_texts(server.requests[0])[-1] == "write it"


def test_ask_in_a_cell_points_to_ask_async(live: Kernel) -> None:
    messages = live.run("agent_magics.ask('hello')")
    (error,) = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert error["ename"] == "UserError"
    assert "await agent_magics.ask_async(prompt)" in error["evalue"]


SCRIPT = """
import asyncio, sys
import agent_magics

url = sys.argv[1]
print(agent_magics.ask("first", base_url=url, config=["allow_login_shell=false"]))
print(asyncio.run(agent_magics.ask_async("second")))
try:
    agent_magics.ask("third", base_url="http://127.0.0.1:9/v1",
                     config=["request_max_retries=0", "stream_max_retries=0"])
except agent_magics.AgentTurnFailed as exc:
    print("failed:", exc)
"""


def test_ask_blocks_in_a_plain_script(home: Path) -> None:
    """No kernel, no loop: ``ask`` blocks and returns; calls continue one conversation;
    awaited with ``asyncio.run`` it does the same; a failed turn raises."""
    (home / "script.py").write_text(textwrap.dedent(SCRIPT))
    with ScriptedResponsesServer([[message("one")], [message("two")]]) as server:
        done = subprocess.run(
            [sys.executable, "script.py", server.base_url],
            cwd=home,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[:2] == ["one", "two"]
        assert lines[2].startswith("failed: ") and "127.0.0.1:9" in lines[2]
        assert user_texts(server.requests[1])[-2:] == ["first", "second"]
