"""The files a Jupyter server keeps beside the notebooks are never the agent's changes.

A person starts ``jupyter lab`` in the project's folder: jupyter-collaboration then keeps
``.jupyter_ystore.db`` there (and SQLite's journal beside it) and writes it whenever an
open document changes, jupyter_server keeps ``.ipynb_checkpoints/`` and ``.~<name>``
while it saves, jupyter-lsp ``.virtual_documents/``. None of them may show among a turn's
files changed, nor make ``%agent undo`` refuse.

The first test is the person's setup: a real ``jupyter server`` with jupyter-collaboration
started in the notebook's folder, the kernel started by it for the notebook, a peer of the
notebook's room typing all along as the person does in JupyterLab, and turns in that
kernel whose command waits until the collaboration store has been written. The others
write the files as the server does, from the test, while a turn's command waits.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.events import Event, TurnDiff
from agent_magics.store.undo import plan_undo, undo_last_turn
from agent_magics.testing import ScriptedResponsesServer, Turn, custom_tool_call, function_call
from agent_magics.testing import message as say
from tests.helpers.jupyter_server import (
    ProjectServer,
    ServerKernel,
    serve_until_done,
    turns_done,
)
from tests.helpers.kernels import agent_cell
from tests.helpers.sessions import writing_session

STORE = ".jupyter_ystore.db"
# Ends once the collaboration store was written after it started (the scan before it);
# it names the store by a pattern, so that its name shows in the cell only if listed.
WAIT_FOR_STORE = (
    "s() { stat -c '%s %y' .jupyter_ys*e.db; }; a=$(s); n=0; "
    'while [ "$(s)" = "$a" ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done; '
    '[ "$(s)" != "$a" ] && echo store-written'
)
nbf: Any = nbformat
PATCH = """\
*** Begin Patch
*** Update File: summarize.py
@@
-print(rows)
+print(len(rows))
*** End Patch
"""
SCRIPT = "rows = open('data.csv').read().splitlines()\nprint(rows)\n"


def wait_call(call_id: str, cmd: str) -> Any:
    return function_call("exec_command", {"cmd": cmd, "yield_time_ms": 30000}, call_id)


# -- the person's setup: jupyter server with jupyter-collaboration in the project ---------


def project_server(tmp_path: Path, project: Path) -> ProjectServer:
    """The person's server, with jupyter-collaboration, started in ``project``."""
    pytest.importorskip("jupyter_server_ydoc", reason="pip install -e '.[browser]'")
    return ProjectServer(tmp_path, project, "project-test-token")


class Typist:
    """The person's JupyterLab: a peer of the notebook's room that types into its first
    cell every 50 ms, so the collaboration store is written all along."""

    def __init__(self, server: ProjectServer, notebook: Path) -> None:
        self.env = {"JPY_SESSION_NAME": str(notebook), "JPY_PARENT_PID": str(server.process.pid)}
        self.stop = threading.Event()
        self.typed = 0
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            asyncio.run(self._type())
        except BaseException as exc:  # shown by close()
            self.failure = exc

    async def _type(self) -> None:
        from agent_magics.jupyter.kernel.live_notebook import KernelLiveNotebook

        doc = await KernelLiveNotebook(None, self.env).open()

        def type_a_letter(nb: Any) -> None:
            text = nb.ycells[0]["source"]
            text.insert(len(text), "x")

        try:
            while not self.stop.is_set():
                await doc.room.change(type_a_letter, 10)
                self.typed += 1
                await asyncio.sleep(0.05)
        finally:
            await doc.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)
        assert self.failure is None, repr(self.failure)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProjectServer]:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "data.csv").write_text("a,b\n1,2\n")
    (folder / "summarize.py").write_text(SCRIPT)
    nb = nbf.v4.new_notebook()
    nb.cells = [nbf.v4.new_code_cell("import pandas", id="first")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbf.write(nb, folder / "analysis.ipynb")
    yield from serve_until_done(project_server(tmp_path, folder), monkeypatch)


@pytest.mark.slow
def test_the_collaboration_store_never_counts_as_the_turns_change_nor_blocks_undo(
    project: ProjectServer,
) -> None:
    pytest.importorskip("pycrdt", reason="pip install -e '.[browser]'")
    folder = project.project
    kernel = ServerKernel(project.start_kernel("analysis.ipynb"), folder)
    typist = Typist(project, folder / "analysis.ipynb")
    try:
        kernel.wait_for(lambda: (folder / STORE).exists() and typist.typed > 0, timeout=60)
        kernel.run("%load_ext agent_magics")
        script: list[Turn] = [
            [wait_call("c1", WAIT_FOR_STORE)],
            [say("looked")],
            [custom_tool_call("apply_patch", PATCH, "c2")],
            [wait_call("c3", WAIT_FOR_STORE)],
            [say("patched")],
        ]
        with ScriptedResponsesServer(script) as model:
            kernel.run(agent_cell(model.base_url, "-a never", "look around"), timeout=120)
            kernel.wait_for(lambda: turns_done(kernel) == 1, timeout=60)
            assert "store-written" in model.outputs(1)["c1"]  # it changed during the turn
            assert not kernel.shows("changed in this turn")
            assert not kernel.shows(STORE)

            kernel.run(agent_cell(model.base_url, "-a never", "count the rows"), timeout=120)
            kernel.wait_for(lambda: turns_done(kernel) == 2, timeout=60)
            assert "store-written" in model.outputs(4)["c3"]
            assert kernel.shows("1 file changed in this turn")
            assert kernel.shows("<code>summarize.py</code>")
            assert not kernel.shows(STORE)

            written = typist.typed
            kernel.wait_for(lambda: typist.typed > written + 2)  # the store moves on
            undo = kernel.outputs_text(kernel.run("%agent undo --yes"))
    finally:
        typist.close()
        kernel.close()
    assert "refused" not in undo, undo
    assert "Restored to their state before the agent's tools wrote them: summarize.py." in undo
    assert (folder / "summarize.py").read_text() == SCRIPT


# -- the same files written as the server writes them, in a turn of a session ------------

# The command says it runs and ends once the "server" has written its files.
WAIT_FOR_SERVER = (
    "touch .running; while [ ! -e .written ]; do sleep 0.05; done; rm -f .running .written"
)


def write_as_jupyter_does(ws: Path, round_: int) -> None:
    """What a Jupyter server and front end leave in a notebook's folder."""
    with (ws / STORE).open("ab") as db:  # a document changed in a room
        db.write(b"update %d\n" % round_)
    (ws / f"{STORE}-journal").write_bytes(b"journal %d\n" % round_)
    (ws / f"{STORE}-wal").write_bytes(b"wal %d\n" % round_)
    (ws / f"{STORE}-shm").write_bytes(b"shm %d\n" % round_)
    (ws / ".jupyter_ystore(1).db").write_bytes(b"old store %d\n" % round_)
    checkpoints = ws / "sub" / ".ipynb_checkpoints"
    checkpoints.mkdir(parents=True, exist_ok=True)
    (checkpoints / "nb-checkpoint.ipynb").write_text(f"saved {round_}\n")
    virtual = ws / ".virtual_documents" / "sub"
    virtual.mkdir(parents=True, exist_ok=True)
    (virtual / "nb.ipynb").write_text(f"x = {round_}\n")
    (ws / "sub" / ".~nb.ipynb").write_text(f"save in progress {round_}\n")
    sessions = ws / ".jupyter"  # a client joined a document's room
    sessions.mkdir(exist_ok=True)
    (sessions / "collaboration_sessions.json").write_text(f'{{"s{round_}": {{}}}}\n')


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "summarize.py").write_text(SCRIPT)
    (ws / "data.csv").write_text("a,b\n1,2\n")
    write_as_jupyter_does(ws, 0)
    return ws


def serve_while_the_command_runs(ws: Path) -> threading.Thread:
    def serve() -> None:
        deadline = time.monotonic() + 60
        while not (ws / ".running").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        write_as_jupyter_does(ws, 1)
        (ws / "sub" / ".~nb.ipynb").unlink()  # the save is over
        (ws / f"{STORE}-journal").unlink()  # the transaction is over
        (ws / ".written").touch()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("patches", [False, True], ids=["changes-nothing", "patches-a-file"])
async def test_jupyters_files_written_during_a_turn_are_not_its_changes(
    tmp_path: Path, patches: bool
) -> None:
    ws = workspace(tmp_path)
    script: list[Turn] = [[custom_tool_call("apply_patch", PATCH, "c1")]] if patches else []
    script += [[wait_call("c2", WAIT_FOR_SERVER)], [say("done")]]
    with ScriptedResponsesServer(script) as server:
        session = writing_session(ws, server.base_url)
        events: list[Event] = []
        session.subscribe(events.append)
        serving = serve_while_the_command_runs(ws)
        await session.run_turn("count the rows")
        serving.join(30)
        await session.aclose()
    assert not (ws / ".written").exists()  # the files were written while the command ran
    diffs = [e for e in events if isinstance(e, TurnDiff)]
    last = session.changes.last
    assert last is not None
    write_as_jupyter_does(ws, 2)  # the server goes on writing after the turn
    plan = plan_undo(last)
    if not patches:
        assert diffs == []
        assert plan.refusal == (
            "Nothing to undo: the last turn changed no file that can be restored."
        )
        return
    assert [f.path for e in diffs for f in e.files] == ["summarize.py"]
    assert plan.refusal is None and not plan.asked and not plan.left
    assert [c.shown for c in plan.restore] == ["summarize.py"]
    text = undo_last_turn(session.changes, plan)
    assert text == "Restored to their state before the agent's tools wrote them: summarize.py."
    assert (ws / "summarize.py").read_text() == SCRIPT
    assert (ws / STORE).read_bytes() == b"update 0\nupdate 1\nupdate 2\n"  # left as it is


async def test_a_file_of_a_name_close_to_jupyters_is_still_a_change(tmp_path: Path) -> None:
    """Only Jupyter's own names are left out: a command's ``ystore.db`` or
    ``.jupyter_ystore.db.bak`` is a change like any other."""
    ws = workspace(tmp_path)
    cmd = f"echo new > ystore.db; cp {STORE} {STORE}.bak; echo n > checkpoints.txt"
    script: list[Turn] = [[wait_call("c1", cmd)], [say("done")]]
    with ScriptedResponsesServer(script) as server:
        session = writing_session(ws, server.base_url)
        events: list[Event] = []
        session.subscribe(events.append)
        await session.run_turn("go")
        await session.aclose()
    files = [f.path for e in events if isinstance(e, TurnDiff) for f in e.files]
    assert files == [f"{STORE}.bak", "checkpoints.txt", "ystore.db"]
