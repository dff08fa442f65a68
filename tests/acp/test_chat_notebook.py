"""A chat's kernel tools act on its notebook's kernel, through a real Jupyter server.

The server (with jupyter-collaboration) runs in the project's folder and starts a kernel
for ``analysis.ipynb``, as JupyterLab does when the person opens it. The chat's agent is
this test process: its parent is not the server, so :meth:`ChatNotebook.find` is given
the server's pid, and checks that process listens where its runtime file says, as it
checks the parent. The project holds an ``agent_magics/`` folder that marks a file when
imported: the kernel side must come from the installed package, never from there.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.acp.chat_notebook import ChatNotebook
from agent_magics.acp.kernel_channel import REQUEST_KEY
from agent_magics.errors import TurnAborted, UserError
from agent_magics.events import Event
from agent_magics.jupyter.kernel import bridge
from agent_magics.protocol.approval import ApprovalPolicy, ReviewDecision
from agent_magics.testing import function_call
from tests.helpers.chat_notebook import Asked, bare_kernelspec, chat_turn, write_notebook
from tests.helpers.jupyter_server import ProjectServer, Recorder, ServerKernel, call

pytestmark = pytest.mark.slow

TOKEN = "chat-notebook-test-token-97531"
PLANTED = "import pathlib\npathlib.Path(__file__).parent.with_name('PLANTED_RAN').touch()\n"
nbf: Any = nbformat


@dataclass
class Setup:
    server: ProjectServer
    project: Path
    kernel: ServerKernel


@pytest.fixture(name="setup", scope="module")
def setup_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    pytest.importorskip("jupyter_server_ydoc", reason="pip install -e '.[browser]'")
    tmp = tmp_path_factory.mktemp("chat")
    project = tmp / "project"
    (project / "agent_magics").mkdir(parents=True)
    (project / "agent_magics" / "__init__.py").write_text(PLANTED)
    write_notebook(project / "analysis.ipynb")
    write_notebook(project / "plain.ipynb")
    specs = tmp / "data"
    bare_kernelspec(specs / "kernels" / "no-agent-magics")
    saved = dict(os.environ)
    os.environ["JUPYTER_PATH"] = str(specs)
    os.environ["JUPYTER_RUNTIME_DIR"] = str(tmp / "runtime")
    try:
        server = ProjectServer(tmp, project, TOKEN)
        try:
            kernel = ServerKernel(server.start_kernel("analysis.ipynb"), project)
            try:
                yield Setup(server, project, kernel)
            finally:
                kernel.close()
        finally:
            server.close()
    finally:
        os.environ.clear()
        os.environ.update(saved)


async def _attached(setup: Setup, notebook: str = "analysis.ipynb") -> ChatNotebook:
    chat = ChatNotebook.find(setup.project, server_pid=setup.server.process.pid)
    assert chat is not None
    said = await chat.attach(Path(notebook))
    assert said == f"run_python now runs in {notebook}'s kernel."
    return chat


async def _turn(
    setup: Setup, chat: ChatNotebook, calls: list[Any], policy: str, asked: Asked | None = None
) -> tuple[dict[str, str], list[Event]]:
    return await chat_turn(setup.project, chat, calls, policy, asked)


def _session(server: ProjectServer, notebook: str, kernel: str) -> None:
    server.start_kernel(notebook, kernel=kernel)


def test_the_protocol_key_agrees_on_both_sides() -> None:
    assert REQUEST_KEY == bridge.REQUEST_KEY


def test_no_server_is_believed_unless_that_process_listens_where_it_says(setup: Setup) -> None:
    assert ChatNotebook.find(setup.project, server_pid=os.getpid()) is None
    chat = ChatNotebook.find(setup.project, server_pid=setup.server.process.pid)
    assert chat is not None
    assert chat.secrets() == (TOKEN,)
    assert chat.tools() == []


async def test_run_python_runs_in_the_notebooks_kernel(setup: Setup) -> None:
    chat = await _attached(setup)
    try:
        names = [t.name for t in chat.tools()]
        assert names == ["run_python", "run_cell", "list_variables", "inspect_variable",
                         "read_notebook", "edit_notebook"]  # fmt: skip
        call = function_call("run_python", {"code": "x = 41 + 1"}, "c1")
        said, _ = await _turn(setup, chat, [call], "never")
        assert said["c1"].startswith("Ran in"), said
        assert setup.kernel.value("x") == 42
        said, _ = await _turn(setup, chat, [function_call("list_variables", {}, "c2")], "never")
        assert "x  int  42" in said["c2"], said
    finally:
        await chat.aclose()


async def test_the_kernel_side_is_the_installed_package(setup: Setup) -> None:
    """A plain ``import agent_magics`` in this kernel finds the project's folder first
    (``''`` precedes site-packages on its path); the chat's calls never import it."""
    chat = await _attached(setup)
    try:
        said, _ = await _turn(setup, chat, [function_call("list_variables", {}, "c1")], "never")
    finally:
        await chat.aclose()
    assert "did not run" not in said["c1"], said
    assert not (setup.project / "PLANTED_RAN").exists()
    where = setup.kernel.value("__import__('sys').modules['agent_magics'].__file__")
    assert not where.startswith(str(setup.project))


async def test_on_request_asks_with_the_very_code_and_a_no_runs_nothing(setup: Setup) -> None:
    chat = await _attached(setup)
    asked = Asked(ReviewDecision.DENIED, [])
    try:
        code = "denied_name = 'ran'"
        call = function_call("run_python", {"code": code}, "c1")
        said, _ = await _turn(setup, chat, [call], "on-request", asked)
    finally:
        await chat.aclose()
    assert [r.command for r in asked.requests] == [(code,)]
    assert said["c1"] == (
        "The user did not allow this code to run; nothing ran and no variable changed."
    )
    assert setup.kernel.value("'denied_name' in globals()") is False


async def test_run_cell_asks_with_the_cells_code_as_the_editor_holds_it(setup: Setup) -> None:
    chat = await _attached(setup)
    asked = Asked(ReviewDecision.APPROVED, [])
    try:
        call = function_call("run_cell", {"cell_id": "first"}, "c1")
        said, _ = await _turn(setup, chat, [call], "on-request", asked)
    finally:
        await chat.aclose()
    assert [(r.tool_name, r.command) for r in asked.requests] == [("run_cell", ("total = 41",))]
    assert said["c1"].startswith("Ran cell first as In ["), said
    assert "its outputs are in that cell of the user's notebook" in said["c1"]
    assert setup.kernel.value("total") == 41


async def test_approved_for_session_is_remembered_by_the_chat(setup: Setup) -> None:
    chat = await _attached(setup)
    asked = Asked(ReviewDecision.APPROVED_FOR_SESSION, [])
    try:
        calls = [function_call("run_python", {"code": "a = 1"}, "c1"),
                 function_call("run_python", {"code": "b = a + 1"}, "c2")]  # fmt: skip
        said, _ = await _turn(setup, chat, calls, "on-request", asked)
    finally:
        await chat.aclose()
    assert len(asked.requests) == 1
    assert said["c2"].startswith("Ran in"), said
    assert setup.kernel.value("b") == 2


async def test_read_and_edit_notebook_work_on_the_live_document(setup: Setup) -> None:
    chat = await _attached(setup)
    edit = {"path": "analysis.ipynb", "cell_id": "notes", "new_source": "# Findings so far"}
    calls = [function_call("edit_notebook", edit, "c1")]
    read = [function_call("read_notebook", {"path": "analysis.ipynb"}, "c2")]
    try:
        edited, _ = await _turn(setup, chat, calls, "on-request")
        said, _ = await _turn(setup, chat, read, "never")
    finally:
        await chat.aclose()
    assert edited["c1"] == (
        f"Replaced cell notes (markdown) in {setup.project / 'analysis.ipynb'}, the notebook "
        "open in the user's editor"
    )
    assert "(read from the editor's document, unsaved edits included)" in said["c2"], said
    assert "total = 41" in said["c2"] and "# Findings so far" in said["c2"]


async def test_a_notebook_without_a_kernel_is_one_sentence(setup: Setup) -> None:
    chat = ChatNotebook.find(setup.project, server_pid=setup.server.process.pid)
    assert chat is not None
    with pytest.raises(UserError) as caught:
        await chat.attach(Path("plain.ipynb"))
    assert str(caught.value) == (
        "No kernel is running for plain.ipynb in the Jupyter server: open the notebook "
        "with a kernel, then try again."
    )
    assert chat.tools() == []


async def test_a_kernel_without_agent_magics_is_one_sentence(setup: Setup) -> None:
    write_notebook(setup.project / "bare.ipynb")
    _session(setup.server, "bare.ipynb", "no-agent-magics")
    chat = ChatNotebook.find(setup.project, server_pid=setup.server.process.pid)
    assert chat is not None
    deadline = time.monotonic() + 60
    while True:  # the kernel starts after the session is made
        try:
            await chat.attach(Path("bare.ipynb"))
        except UserError as exc:
            if "cannot be reached" in str(exc) and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
                continue
            assert str(exc) == (
                "The kernel of bare.ipynb has no agent_magics: pip install agent_magics in "
                "the kernel's environment, then restart the kernel."
            )
            break
        await chat.aclose()  # its channel closed before the test fails
        raise AssertionError("attached to a kernel without agent_magics")
    assert chat.tools() == []
    assert not (setup.project / "PLANTED_RAN").exists()  # the folder beside it was not used


async def test_the_notebooks_policy_holds_in_the_chat(setup: Setup) -> None:
    nb = nbf.v4.new_notebook(metadata={"agent_magics": {"run_python": False}})
    nb.cells = [nbf.v4.new_code_cell("secret = 1", id="first")]
    nbf.write(nb, str(setup.project / "taught.ipynb"))
    _session(setup.server, "taught.ipynb", "python3")
    chat = ChatNotebook.find(setup.project, server_pid=setup.server.process.pid)
    assert chat is not None
    deadline = time.monotonic() + 60
    while True:  # the kernel starts after the session is made
        try:
            said = await chat.attach(Path("taught.ipynb"))
            break
        except UserError as exc:
            if "cannot be reached" not in str(exc) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    try:
        assert said == "The notebook tools now act on taught.ipynb and its kernel."
        names = [t.name for t in chat.tools()]
        assert names == ["list_variables", "inspect_variable", "read_notebook", "edit_notebook"]
    finally:
        await chat.aclose()


async def test_the_servers_token_never_reaches_the_model(setup: Setup) -> None:
    chat = await _attached(setup)
    runtime = str(setup.server.runtime)
    code = (
        "import glob, json\n"
        f"print(json.load(open(glob.glob({runtime!r} + '/jpserver-*.json')[0]))['token'])\n"
        "print(get_ipython().kernel.session.key.decode())"
    )
    key = setup.kernel.value("get_ipython().kernel.session.key.decode()")
    try:
        calls = [function_call("run_python", {"code": code}, "c1"),
                 function_call("inspect_variable", {"name": "json"}, "c2")]  # fmt: skip
        said, events = await _turn(setup, chat, calls, "never")
    finally:
        await chat.aclose()
    assert said["c1"].startswith("Ran in"), said
    assert said["c1"].count("[redacted]") == 2, said
    assert TOKEN not in json.dumps(said) and key not in json.dumps(said)
    assert events and all(TOKEN not in repr(e) and key not in repr(e) for e in events)


def _sleeping(run_python: Any, project: Path) -> asyncio.Future[Any]:
    code = {"code": "import time; time.sleep(30)"}
    never = ApprovalPolicy.NEVER
    return asyncio.ensure_future(
        call(run_python, project, code, Recorder([]), approval_policy=never)
    )


async def test_a_call_waits_for_the_persons_cell_and_cancel_leaves_that_cell_alone(
    setup: Setup,
) -> None:
    chat = await _attached(setup)
    [run_python] = [t for t in chat.tools() if t.name == "run_python"]
    person = setup.kernel.execute("import time; time.sleep(3); person_done = True")
    started = time.monotonic()
    try:
        ours = _sleeping(run_python, setup.project)
        await asyncio.sleep(1)  # the person's cell runs: ours waits its turn
        await chat.interrupt()
        with pytest.raises(TurnAborted):
            await asyncio.wait_for(ours, 20)
        assert 2 < time.monotonic() - started < 15
        setup.kernel.wait_for(lambda: setup.kernel.idle(person))
        assert setup.kernel.value("person_done") is True
        ours = _sleeping(run_python, setup.project)  # now it runs, and is stopped
        await asyncio.sleep(2)
        started = time.monotonic()
        await chat.interrupt()
        with pytest.raises(TurnAborted):
            await asyncio.wait_for(ours, 20)
        assert time.monotonic() - started < 10
        said, _ = await _turn(setup, chat, [function_call("list_variables", {}, "c1")], "never")
        assert "person_done" in said["c1"]
    finally:
        await chat.aclose()
