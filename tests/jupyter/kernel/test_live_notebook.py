"""The open notebook edited through JupyterLab's collaborative document.

Finding the server is tested on real ``jpserver-*.json`` files; the edits against a
real ``jupyter server`` with jupyter-collaboration on 127.0.0.1, where a second peer of
the notebook's room stands for the person's editor: it types an edit that is never
saved, and must still have it after the agent's cell went in. Needs the ``browser``
extra (``pip install -e '.[browser]'``) for the server; skipped without it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import nbformat
import psutil
import pytest

from agent_magics.jupyter.kernel.live_notebook import (
    INSTALL,
    PARENT_PID_ENV,
    SERVER_URL_ENV,
    VSCODE_FILE,
    JupyterServer,
    KernelLiveNotebook,
    find_server,
    server_from_url,
)
from agent_magics.protocol.approval import ApprovalPolicy, ReviewDecision, SandboxMode
from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
from agent_magics.tools.handlers.read_notebook import ReadNotebookHandler
from agent_magics.tools.notebook.document import LIVE_NOTE, SESSION_ENV
from agent_magics.transcript.html import COPY_SCRIPT, PRE_STYLE, arguments_html
from agent_magics.transcript.markdown import tool_markdown
from agent_magics.transcript.model import ToolBlock
from tests.helpers.jupyter_server import (
    INSERT,
    Recorder,
    Server,
    call,
    kernel_side,
    server_fixture,  # noqa: F401 (the ``server`` fixture)
    write_notebook,
)

v4: Any = nbformat.v4
nbf: Any = nbformat


def server_file(folder: Path, pid: int, port: int, root: Path, token: str = "") -> None:
    info = {"pid": pid, "url": f"http://127.0.0.1:{port}/", "token": token, "root_dir": str(root)}
    (folder / f"jpserver-{pid}.json").write_text(json.dumps(info))


# -- finding the server ---------------------------------------------------------------


def test_the_kernels_parent_server_is_chosen_over_one_that_holds_the_notebook(
    tmp_path: Path,
) -> None:
    nb = tmp_path / "work" / "a.ipynb"
    server_file(tmp_path, 101, 8001, tmp_path / "work", "t1")
    server_file(tmp_path, 202, 8002, tmp_path / "elsewhere", "t2")
    (tmp_path / "jpserver-303.json").write_text("{half a file")
    chosen = find_server({PARENT_PID_ENV: "202"}, str(tmp_path), nb)
    assert chosen == JupyterServer("http://127.0.0.1:8002/", "t2", str(tmp_path / "elsewhere"))
    by_root = find_server({PARENT_PID_ENV: "999"}, str(tmp_path), nb)
    assert by_root is not None and by_root.token == "t1"
    assert find_server({}, str(tmp_path), tmp_path / "other" / "b.ipynb") is None
    assert find_server({}, str(tmp_path / "missing"), nb) is None


def test_a_server_named_in_the_environment_wins(tmp_path: Path) -> None:
    server_file(tmp_path, 101, 8001, tmp_path)
    env = {
        SERVER_URL_ENV: "https://hub.example/user/ann/lab/tree/a.ipynb?token=abc",
        PARENT_PID_ENV: "101",
    }
    chosen = find_server(env, str(tmp_path), tmp_path / "a.ipynb")
    assert chosen == JupyterServer("https://hub.example/user/ann/", "abc")
    assert server_from_url("http://127.0.0.1:8888") == JupyterServer("http://127.0.0.1:8888/", "")


def test_which_notebook_the_kernel_belongs_to(tmp_path: Path) -> None:
    nb = tmp_path / "a.ipynb"
    jupyter = KernelLiveNotebook(SimpleNamespace(user_ns={}), {SESSION_ENV: str(nb)})
    assert jupyter.named(nb) and not jupyter.named(tmp_path / "b.ipynb")
    vscode = KernelLiveNotebook(SimpleNamespace(user_ns={VSCODE_FILE: str(nb)}), {})
    assert vscode.named(nb) and vscode.path() == nb
    nowhere = KernelLiveNotebook(SimpleNamespace(user_ns={}), {})
    assert nowhere.path() is None and not nowhere.named(nb)


# -- the card -------------------------------------------------------------------------


def test_the_card_shows_the_proposed_cell_with_a_copy_button() -> None:
    args = {"path": "a.ipynb", "cell_id": "one", "edit_mode": "insert", "cell_type": "code",
            "new_source": "y = x < 2"}  # fmt: skip
    block = ToolBlock("c1", "edit_notebook", json.dumps(args), cell_place='after cell 2 ("x = 1")')
    copy = COPY_SCRIPT.replace("'", "&#x27;").replace("<", "&lt;").replace(">", "&gt;")
    assert arguments_html(block) == (
        '<div class="agent-magics-cell"><div>New code cell after cell 2 ("x = 1") of a.ipynb '
        f'<button class="agent-magics-copy" onclick="{copy}">Copy</button></div>'
        f'<pre style="{PRE_STYLE}">y = x &lt; 2</pre></div>'
    )
    assert tool_markdown(block).endswith(
        'New code cell after cell 2 ("x = 1") of a.ipynb:\n\n```python\ny = x < 2\n```'
    )
    delete = ToolBlock("c2", "edit_notebook", json.dumps({"path": "a.ipynb", "cell_id": "two",
                                                          "edit_mode": "delete"}))  # fmt: skip
    # before the tool has found the cell, the card does not show the model's id for it
    assert arguments_html(delete) == "<div>Delete the cell the model named of a.ipynb</div>"
    delete.cell_place = 'cell 3 ("y = 2")'
    assert arguments_html(delete) == '<div>Delete cell 3 ("y = 2") of a.ipynb</div>'


# -- no front end that can take the cell ----------------------------------------------


URL = SERVER_URL_ENV


@pytest.mark.parametrize("front_end", ["headless", "vscode", "no-collaboration-extra"])
async def test_without_a_collaborative_server_the_model_gets_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, front_end: str
) -> None:
    nb = tmp_path / "a.ipynb"
    write_notebook(nb)
    before = nb.read_bytes()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    ns: dict[str, Any] = {VSCODE_FILE: str(nb)} if front_end == "vscode" else {}
    env = {} if front_end == "vscode" else {SESSION_ENV: str(nb)}
    if front_end != "no-collaboration-extra":  # the front end's reason comes after the extra's
        pytest.importorskip("jupyter_ydoc", reason="pip install -e '.[live]'")
    else:
        monkeypatch.setitem(sys.modules, "jupyter_ydoc", None)  # as if it were not installed
        monkeypatch.delitem(sys.modules, "agent_magics.jupyter.kernel.notebook_room", raising=False)
    live = KernelLiveNotebook(SimpleNamespace(user_ns=ns), env)
    recorder = Recorder([])
    text, ok = await call(EditNotebookHandler(live), tmp_path, INSERT, recorder)
    assert not ok and recorder.asked == 0 and nb.read_bytes() == before
    assert text.startswith(f"The notebook was not changed: {nb} is open in the user's editor and ")
    assert text.endswith(f"so tell the user what to change by hand ({LIVE_NOTE}).")
    assert text.count(". ") == 0 and text.count("\n") == 0  # one sentence
    reason = {
        "headless": f"no Jupyter server running this kernel was found (if one does, set {URL}",
        "vscode": "VS Code's notebook editor takes no cells from the kernel",
        "no-collaboration-extra": "pip install 'agent_magics[live]' in the kernel's environment",
    }[front_end]
    assert reason in text
    read, ok = await call(ReadNotebookHandler(live), tmp_path, {"path": "a.ipynb"}, recorder)
    assert ok and "(read from the file: unsaved edits in the editor are not shown, " in read
    assert "--- cell 1 · id one · code" in read


# -- a real server with jupyter-collaboration -----------------------------------------


@pytest.fixture
async def person(server: Server) -> AsyncIterator[Any]:
    """The person's editor: a peer of the notebook's room that types and never saves."""
    write_notebook(server.notebooks / "a.ipynb")
    live = KernelLiveNotebook(None, {SESSION_ENV: str(server.notebooks / "a.ipynb"),
                                     PARENT_PID_ENV: str(server.process.pid)})  # fmt: skip
    doc = await live.open()

    def type_in_the_second_cell(nb: Any) -> None:
        text = nb.ycells[1]["source"]
        text.insert(len(text), "\nTyped, not saved.")

    await doc.room.change(type_in_the_second_cell, 10)
    try:
        yield doc
    finally:
        await doc.close()


def sources(doc: Any) -> list[str]:
    return [str(c.source) for c in doc.notebook().cells]


@pytest.mark.slow
async def test_a_cell_goes_into_the_open_notebook_beside_the_persons_unsaved_edit(
    server: Server, person: Any
) -> None:
    nb = server.notebooks / "a.ipynb"
    on_disk = nb.read_bytes()
    recorder = Recorder([])
    text, ok = await call(EditNotebookHandler(kernel_side(server)), server.notebooks, INSERT,
                          recorder, approval_policy=ApprovalPolicy.UNTRUSTED)  # fmt: skip
    assert ok, text
    assert recorder.asked == 1
    await person.room.flush(10)
    new_id = person.notebook().cells[1].id
    assert text == (f"Inserted code cell {new_id} as cell 2 in {nb}, the notebook open in the "
                    "user's editor")  # fmt: skip
    assert sources(person) == ["x = 1", "y = x + 1", "# Notes\nTyped, not saved."]
    assert nb.read_bytes() == on_disk  # nothing wrote the file under the editor
    read, ok = await call(ReadNotebookHandler(kernel_side(server)), server.notebooks,
                          {"path": "a.ipynb"}, recorder)  # fmt: skip
    assert ok and "3 cells, nbformat 4.5, language unknown (read from the editor's document" in read
    assert "Typed, not saved." in read


@pytest.mark.slow
async def test_leaving_the_room_closes_its_connection(server: Server) -> None:
    """Leaving waits for the server's answer to the close, so the websocket's socket is
    closed when ``close`` returns (a loop that ended first used to leave it open)."""
    write_notebook(server.notebooks / "a.ipynb")

    def connections() -> int:  # sockets of this process still open to the server
        return sum(
            1
            for c in psutil.Process().net_connections("tcp")
            if c.raddr and c.raddr.port == server.port
        )

    before = connections()
    doc = await kernel_side(server).open()
    assert connections() == before + 1
    await doc.close()
    assert connections() == before


@pytest.mark.slow
async def test_replace_and_delete_in_the_open_notebook(server: Server, person: Any) -> None:
    live, recorder = kernel_side(server), Recorder([])
    replace = {"path": "a.ipynb", "cell_id": "two", "new_source": "z = 3", "cell_type": "code"}
    text, ok = await call(EditNotebookHandler(live), server.notebooks, replace, recorder)
    assert ok and text.startswith("Replaced cell two (code) in "), text
    await person.room.flush(10)
    cells = person.notebook().cells
    assert [(c.id, c.cell_type, c.source) for c in cells] == [("one", "code", "x = 1"),
                                                             ("two", "code", "z = 3")]  # fmt: skip
    delete = {"path": "a.ipynb", "cell_id": "one", "edit_mode": "delete"}
    text, ok = await call(EditNotebookHandler(live), server.notebooks, delete, recorder)
    assert ok, text
    await person.room.flush(10)
    assert sources(person) == ["z = 3"]
    missing = {"path": "a.ipynb", "cell_id": "nope", "new_source": "w"}
    text, ok = await call(EditNotebookHandler(live), server.notebooks, missing, recorder)
    assert (text, ok) == ("no cell has id 'nope'; the cell ids are: two", False)


@pytest.mark.slow
async def test_a_notebook_renamed_in_the_editor_is_still_edited_live(server: Server) -> None:
    """The kernel's environment keeps the name it started with; the server's session for
    the kernel has the new one, and a write of the renamed file would go under the editor."""
    write_notebook(server.notebooks / "a.ipynb")
    api = f"http://127.0.0.1:{server.port}/api/"
    auth = {"Authorization": f"token {server.token}"}
    async with httpx.AsyncClient(headers=auth, timeout=60) as client:
        body = {"path": "a.ipynb", "name": "a.ipynb", "type": "notebook",
                "kernel": {"name": "python3"}}  # fmt: skip
        session = (await client.post(api + "sessions", json=body)).json()
        try:
            moved = await client.patch(api + "contents/a.ipynb", json={"path": "b.ipynb"})
            assert moved.status_code == 200, moved.text
            patched = await client.patch(
                api + f"sessions/{session['id']}", json={"path": "b.ipynb", "name": "b.ipynb"}
            )
            assert patched.status_code == 200, patched.text
            renamed = server.notebooks / "b.ipynb"
            on_disk = renamed.read_bytes()
            env = {SESSION_ENV: str(server.notebooks / "a.ipynb"),
                   PARENT_PID_ENV: str(server.process.pid)}  # fmt: skip
            live = KernelLiveNotebook(None, env, kernel=session["kernel"]["id"])
            assert await live.owns(renamed)
            insert = dict(INSERT, path="b.ipynb")
            text, ok = await call(EditNotebookHandler(live), server.notebooks, insert, Recorder([]))
            assert ok and text.endswith("the notebook open in the user's editor"), text
            assert renamed.read_bytes() == on_disk  # the editor's document took it
            other = KernelLiveNotebook(None, env, kernel="not-this-kernel")
            assert not await other.owns(renamed)
        finally:
            await client.delete(api + f"sessions/{session['id']}")


@pytest.mark.slow
async def test_denied_or_read_only_leaves_the_open_notebook_alone(
    server: Server, person: Any
) -> None:
    live = kernel_side(server)
    denied = Recorder([], ReviewDecision.DENIED)
    text, ok = await call(EditNotebookHandler(live), server.notebooks, INSERT, denied,
                          approval_policy=ApprovalPolicy.UNTRUSTED)  # fmt: skip
    assert (text, ok) == ("notebook edit rejected by user", False) and denied.asked == 1
    quiet = Recorder([])
    text, ok = await call(EditNotebookHandler(live), server.notebooks, INSERT, quiet,
                          approval_policy=ApprovalPolicy.NEVER,
                          sandbox_mode=SandboxMode.READ_ONLY)  # fmt: skip
    assert not ok and "rejected" in text and quiet.asked == 0
    await person.room.flush(10)
    assert sources(person) == ["x = 1", "# Notes\nTyped, not saved."]


@pytest.mark.slow
async def test_a_wrong_token_and_a_server_without_collaboration_are_one_sentence(
    tmp_path: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = server.notebooks / "a.ipynb"
    write_notebook(nb)
    wrong = f"http://127.0.0.1:{server.port}/?token=wrong"
    live = KernelLiveNotebook(None, {SESSION_ENV: str(nb), SERVER_URL_ENV: wrong})
    text, ok = await call(EditNotebookHandler(live), server.notebooks, INSERT, Recorder([]))
    assert not ok and f"its Jupyter server at http://127.0.0.1:{server.port} refused" in text
    no_collaboration = {"ServerApp": {"jpserver_extensions": {"jupyter_server_ydoc": False}}}
    plain = Server(tmp_path / "plain", no_collaboration)
    try:
        (plain.notebooks / "a.ipynb").write_bytes(nb.read_bytes())
        monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(plain.runtime))
        env = {
            SESSION_ENV: str(plain.notebooks / "a.ipynb"),
            PARENT_PID_ENV: str(plain.process.pid),
        }
        live = KernelLiveNotebook(None, env)
        text, ok = await call(EditNotebookHandler(live), plain.notebooks, INSERT, Recorder([]))
    finally:
        plain.close()
    assert not ok and f"has no real-time collaboration ({INSTALL})" in text, text


def test_the_kernels_notebook_tools_stand_in_for_the_plain_ones(tmp_path: Path) -> None:
    """A kernel session whose settings also ask for the notebook tools gets the kernel's
    (which reach the open notebook) in the plain ones' place, not the plain ones."""
    from agent_magics.agent.session import Session
    from agent_magics.config import SessionConfig
    from agent_magics.jupyter.kernel.tools import KernelTools

    tools = ["read_file", "read_notebook", "edit_notebook"]
    config = SessionConfig(cwd=tmp_path, experimental_supported_tools=tools)
    plain = list(Session(config).registry)
    kernel = Session(config, extra_tools=KernelTools(SimpleNamespace(user_ns={})))
    names = list(kernel.registry)
    assert names[: len(plain)] == plain  # same places
    for name in ("read_notebook", "edit_notebook"):
        handler = kernel.registry.get(name)
        assert handler is not None and isinstance(handler.handler.live, KernelLiveNotebook)
    assert names.count("edit_notebook") == 1 and "run_python" in names[len(plain) :]
