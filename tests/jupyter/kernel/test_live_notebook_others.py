"""edit_notebook on another notebook than the kernel's own, which a Jupyter server holds
open: its file is never written under the server, which would load the file over what
the person typed and it had not saved yet.

Against a real ``jupyter server`` with jupyter-collaboration on 127.0.0.1 (the harness
of ``tests/jupyter/kernel/test_live_notebook.py``; it saves a room only after a minute, so the
file shows whether the agent wrote it): the kernel runs ``a.ipynb``, and the person has
``b.ipynb`` open, as a peer of its room that types and does not save. The agent's cell
goes into that room beside the typing, by whatever path names the file; a notebook that
nobody has open is written as before; a server without collaboration that has the
notebook open, a notebook open as text, and a server that does not answer are each one
sentence for the model, and the file stays as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import nbformat
import psutil
import pytest

from agent_magics.events import CellPlaced
from agent_magics.jupyter.kernel.live_notebook import INSTALL, SERVER_URL_ENV
from agent_magics.jupyter.kernel.open_notebooks import KernelNotebooks
from agent_magics.protocol.approval import ApprovalPolicy, ApprovalRequest, ReviewDecision
from agent_magics.testing import ScriptedResponsesServer, function_call
from agent_magics.testing import message as say
from agent_magics.tools.context import FunctionPayload, SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
from agent_magics.tools.notebook.cell_undo import revert_cells, take_cell_edits
from agent_magics.tools.notebook.document import (
    LIVE_NOTE,
    SESSION_ENV,
    close_live_notebooks,
)
from agent_magics.tools.notebook.document import live_unavailable as one_sentence
from agent_magics.tools.sandbox.roots import write_denied
from tests.helpers.browser import free_port
from tests.helpers.jupyter_server import (
    INSERT,
    Recorder,
    Server,
    ServerKernel,
    call,
    server_fixture,  # noqa: F401 (the ``server`` fixture)
    turns_done,
    write_notebook,
)
from tests.helpers.kernels import agent_cell
from tests.helpers.live_rooms import TYPED, bridge, open_session, person_types_in, save, wait_until
from tests.helpers.raw_server import RawServer

nbf: Any = nbformat
NO_COLLABORATION = {"ServerApp": {"jpserver_extensions": {"jupyter_server_ydoc": False}}}


def sources(doc: Any) -> list[str]:
    return [str(c.source) for c in doc.notebook().cells]


def file_sources(path: Path) -> list[str]:
    return [str(c.source) for c in nbf.read(str(path), as_version=4).cells]


async def loaded(server: Server, name: str, kind: str = "json:notebook") -> bool:
    """Whether the server has a room of ``name`` loaded (asked as the tool asks)."""
    api = f"http://127.0.0.1:{server.port}/api/collaboration/"
    async with httpx.AsyncClient(headers={"Authorization": f"token {server.token}"}) as client:
        body = {"format": "json", "type": "notebook"}
        file_id = (await client.put(api + f"session/{name}", json=body)).json()["fileId"]
        probe = await client.put(api + f"fork/{kind}:{file_id}", json={"synchronize": False})
        if probe.status_code == 201:
            fork = probe.json()["fork_roomid"]
            await client.delete(api + f"fork/{fork}", params={"merge": "false"})
        return probe.status_code == 201


def cell_edit(path: str, source: str, after: str | None = "one") -> dict[str, Any]:
    return dict(INSERT, path=path, cell_id=after, new_source=source)


# -- a real turn in the kernel of a.ipynb ----------------------------------------------


@pytest.mark.slow
async def test_a_turn_edits_another_open_notebook_beside_the_persons_unsaved_typing(
    server: Server,
) -> None:
    """The cells go into b.ipynb's room, named plainly, through ``./sub/../`` and through
    a symlink; the typing stays, and the person's save writes both. c.ipynb, open
    nowhere, is written as before, and asking about it loaded no room."""
    pytest.importorskip("pycrdt", reason="pip install -e '.[browser]'")
    root = server.notebooks
    for name in ("a.ipynb", "b.ipynb", "c.ipynb"):
        write_notebook(root / name)
    (root / "sub").mkdir()
    (root / "link.ipynb").symlink_to("b.ipynb")
    b, c = root / "b.ipynb", root / "c.ipynb"
    person = await person_types_in(server, "b.ipynb")
    on_disk = b.read_bytes()
    edits = [
        cell_edit("b.ipynb", "plain = 1"),
        cell_edit("./sub/../b.ipynb", "dots = 2"),
        cell_edit("link.ipynb", "link = 3", after=None),
        cell_edit("c.ipynb", "shut = 4"),
    ]
    script = [[function_call("edit_notebook", e, f"e{n}")] for n, e in enumerate(edits, 1)]
    kernel = ServerKernel(open_session(server, "a.ipynb"), root)
    try:
        kernel.run("%load_ext agent_magics")
        with ScriptedResponsesServer([*script, [say("edited")]]) as model:
            kernel.run(agent_cell(model.base_url, "-a never", "edit the notebooks"), timeout=120)
            kernel.wait_for(lambda: turns_done(kernel) == 1, timeout=90)
            said = {k: v for n in range(1, 5) for k, v in model.outputs(n).items()}
        assert b.read_bytes() == on_disk  # nothing wrote the file under the person
        await person.room.flush(10)
        cells = ["link = 3", "x = 1", "dots = 2", "plain = 1", "# Notes" + TYPED]
        assert sources(person) == cells
        for n, path in ((1, "b.ipynb"), (2, "sub/../b.ipynb"), (3, "link.ipynb")):
            live = f"in {root / path}, the notebook open in the user's editor"
            assert said[f"e{n}"].endswith(live), said
        assert said["e4"].endswith(f"in {c}"), said  # open nowhere: its file is written
        assert file_sources(c) == ["x = 1", "shut = 4", "# Notes"]
        assert not await loaded(server, "c.ipynb")
        save(person)
        await wait_until(lambda: "Typed, not saved." in b.read_text())
        assert file_sources(b) == cells
    finally:
        kernel.close()
        await person.close()


@pytest.mark.slow
async def test_without_collaboration_another_open_notebook_is_refused_and_its_cell_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server without collaboration: the person's front end has b.ipynb open (its
    session) and holds it in its own memory. The edit is one sentence, the card shows the
    cell to paste, the file stays; c.ipynb, open nowhere, is written."""
    plain = Server(tmp_path / "plain", NO_COLLABORATION)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(plain.runtime))
    root = plain.notebooks
    for name in ("a.ipynb", "b.ipynb", "c.ipynb"):
        write_notebook(root / name)
    b = root / "b.ipynb"
    on_disk = b.read_bytes()
    edits = [cell_edit("b.ipynb", "pasted_by_hand = 1"), cell_edit("c.ipynb", "shut = 4")]
    script = [[function_call("edit_notebook", e, f"e{n}")] for n, e in enumerate(edits, 1)]
    try:
        kernel = ServerKernel(open_session(plain, "a.ipynb"), root)
        try:
            kernel.run("%load_ext agent_magics")
            open_session(plain, "b.ipynb")  # the person opened b.ipynb (once a.ipynb's
            # kernel is up: one starting beside it can keep its heartbeat silent too long)
            with ScriptedResponsesServer([*script, [say("told")]]) as model:
                kernel.run(agent_cell(model.base_url, "-a never", "edit"), timeout=120)
                kernel.wait_for(lambda: turns_done(kernel) == 1, timeout=90)
                said = {k: v for n in (1, 2) for k, v in model.outputs(n).items()}
            shown = " ".join(kernel.html_values())
        finally:
            kernel.close()
    finally:
        plain.close()
    reason = f"its Jupyter server at http://127.0.0.1:{plain.port} has no real-time collaboration"
    assert said["e1"] == one_sentence(b, f"{reason} ({INSTALL})")
    assert b.read_bytes() == on_disk
    assert "pasted_by_hand = 1</pre>" in shown and ">Copy</button>" in shown
    assert file_sources(root / "c.ipynb") == ["x = 1", "shut = 4", "# Notes"]


# -- the tool against a real server ------------------------------------------------------


@pytest.mark.slow
async def test_undo_takes_the_cell_back_out_of_the_other_notebook(server: Server) -> None:
    """The edit is kept for ``%agent undo``, which reverts it through the same room; the
    room the kernel keeps for its own notebook stays as it was, and every other
    connection the tool opened is closed."""
    for name in ("a.ipynb", "b.ipynb"):
        write_notebook(server.notebooks / name)

    def connections() -> int:
        found = psutil.Process().net_connections("tcp")
        return sum(1 for c in found if c.raddr and c.raddr.port == server.port)

    person = await person_types_in(server, "b.ipynb")
    live, services = bridge(server, "a.ipynb", keep=True), SessionServices()
    try:
        own = await live.open()  # the kernel's own room, kept between calls
        before = connections()
        inv = ToolInvocation("c1", "edit_notebook", FunctionPayload(json.dumps(cell_edit(
            "b.ipynb", "undone = 1"))), TurnContext(cwd=server.notebooks), services)  # fmt: skip
        out = await EditNotebookHandler(live).handle(inv)
        assert out.success, out.content
        await person.room.flush(10)
        assert sources(person) == ["x = 1", "undone = 1", "# Notes" + TYPED]
        assert connections() == before and (await live.open()).room is own.room
        done, left = await revert_cells(take_cell_edits(services))
        assert (done, left) == (['cell 2 ("undone = 1") removed'], [])
        await person.room.flush(10)
        assert sources(person) == ["x = 1", "# Notes" + TYPED]
        assert connections() == before
    finally:
        await close_live_notebooks(services)
        await live.close()
        await person.close()


@pytest.mark.slow
async def test_a_notebook_opened_while_the_person_is_asked_is_edited_in_its_room(
    server: Server,
) -> None:
    """b.ipynb is open nowhere when the tool asks; the person opens it to look, types,
    and then approves: the edit goes into its room, not over their typing."""
    for name in ("a.ipynb", "b.ipynb"):
        write_notebook(server.notebooks / name)
    b = server.notebooks / "b.ipynb"
    on_disk = b.read_bytes()
    opened: list[Any] = []

    async def open_it_and_approve(request: ApprovalRequest) -> ReviewDecision:
        opened.append(await person_types_in(server, "b.ipynb"))
        return ReviewDecision.APPROVED

    services = SessionServices(approver=open_it_and_approve)
    turn = TurnContext(cwd=server.notebooks, approval_policy=ApprovalPolicy.UNTRUSTED)
    payload = FunctionPayload(json.dumps(cell_edit("b.ipynb", "y = 2")))
    try:
        inv = ToolInvocation("c1", "edit_notebook", payload, turn, services)
        out = await EditNotebookHandler(bridge(server, "a.ipynb")).handle(inv)
        assert len(opened) == 1 and out.success, out.content
        assert str(out.content).endswith("the notebook open in the user's editor")
        await opened[0].room.flush(10)
        assert sources(opened[0]) == ["x = 1", "y = 2", "# Notes" + TYPED]
        assert b.read_bytes() == on_disk
    finally:
        for doc in opened:
            await doc.close()


@pytest.mark.slow
async def test_a_path_that_names_another_file_by_the_write_reaches_no_room_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn works in project/, whose .git/ it may not write; the person has
    project/.git/b.ipynb open (the server shows hidden files). The model's
    project/link.ipynb names that notebook when the tool finds its room, and its own
    project/mine.ipynb (made so by a command running meanwhile) when the writable roots
    are checked: the room found is outside them, so nothing is edited."""
    server = Server(tmp_path / "hidden", {"ContentsManager": {"allow_hidden": True}})
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(server.runtime))
    project = server.notebooks / "project"
    (project / ".git").mkdir(parents=True)
    for path in (project / "a.ipynb", project / "mine.ipynb", project / ".git" / "b.ipynb"):
        write_notebook(path)
    link = project / "link.ipynb"
    link.symlink_to(".git/b.ipynb")
    mine = (project / "mine.ipynb").read_bytes()

    def swap(event: Any) -> None:  # the moment between finding the room and the check
        if isinstance(event, CellPlaced):
            (project / "swap.ipynb").symlink_to("mine.ipynb")
            os.replace(project / "swap.ipynb", link)

    try:
        person = await person_types_in(server, "project/.git/b.ipynb")
        try:
            services = SessionServices(emit=swap)
            turn = TurnContext(cwd=project, approval_policy=ApprovalPolicy.NEVER)
            payload = FunctionPayload(json.dumps(cell_edit("link.ipynb", "escaped = 1")))
            inv = ToolInvocation("c1", "edit_notebook", payload, turn, services)
            out = await EditNotebookHandler(bridge(server, "project/a.ipynb")).handle(inv)
            await person.room.flush(10)
            assert sources(person) == ["x = 1", "# Notes" + TYPED]
        finally:
            await person.close()
    finally:
        server.close()
    assert (out.content, out.success) == (write_denied(link), False)
    assert (project / "mine.ipynb").read_bytes() == mine


@pytest.mark.slow
@pytest.mark.parametrize("as_notebook_too", [False, True], ids=["text", "text-and-notebook"])
async def test_a_notebook_open_as_text_is_refused(server: Server, as_notebook_too: bool) -> None:
    """JupyterLab's text editor holds b.ipynb (a room of its text), alone or beside its
    notebook view: no cell can go into the text, and one put into the notebook's room
    would be saved and loaded over the typing in the text."""
    from agent_magics.jupyter.kernel.notebook_room import NotebookRoom

    for name in ("a.ipynb", "b.ipynb"):
        write_notebook(server.notebooks / name)
    b = server.notebooks / "b.ipynb"
    on_disk = b.read_bytes()
    api = f"http://127.0.0.1:{server.port}/api/collaboration/"
    headers = {"Authorization": f"token {server.token}"}
    async with httpx.AsyncClient(headers=headers) as client:
        body = {"format": "text", "type": "file"}
        answer = (await client.put(api + "session/b.ipynb", json=body)).json()
    url = f"ws://127.0.0.1:{server.port}/api/collaboration/room/text:file:{answer['fileId']}"
    editor = await NotebookRoom.join(f"{url}?sessionId={answer['sessionId']}", headers, 10)
    viewer = await person_types_in(server, "b.ipynb") if as_notebook_too else None
    try:
        assert await loaded(server, "b.ipynb", "text:file")
        recorder = Recorder([])
        text, ok = await call(EditNotebookHandler(bridge(server, "a.ipynb")), server.notebooks,
                              cell_edit("b.ipynb", "y = 2"), recorder)  # fmt: skip
        if viewer is not None:
            await viewer.room.flush(10)
            assert sources(viewer) == ["x = 1", "# Notes" + TYPED]
    finally:
        await editor.close()
        if viewer is not None:
            await viewer.close()
    reason = f"its Jupyter server at http://127.0.0.1:{server.port} has it open as text"
    assert (text, ok) == (one_sentence(b, f"{reason}, where no cell can be put"), False)
    assert recorder.asked == 0 and b.read_bytes() == on_disk


# -- no server, a gone one, one that does not answer -------------------------------------


async def test_no_server_or_a_gone_one_writes_the_file_and_a_silent_one_is_a_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Headless (no server) and a server that has ended (its runtime file left behind):
    the file is written as before. A server the kernel is told of that does not answer
    may have the notebook open: one sentence, the file stays."""
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    for name in ("a.ipynb", "b.ipynb"):
        write_notebook(tmp_path / name)
    b = tmp_path / "b.ipynb"
    own = {SESSION_ENV: str(tmp_path / "a.ipynb")}
    edit = cell_edit("b.ipynb", "headless = 1")
    text, ok = await call(EditNotebookHandler(KernelNotebooks(None, own)), tmp_path, edit,
                          Recorder([]))  # fmt: skip
    assert ok and text.endswith(f"in {b}"), text
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    info = {"pid": gone.pid, "url": f"http://127.0.0.1:{free_port()}/", "token": "t",
            "root_dir": str(tmp_path)}  # fmt: skip
    (runtime / f"jpserver-{gone.pid}.json").write_text(json.dumps(info))
    edit = cell_edit("b.ipynb", "gone = 2")
    text, ok = await call(EditNotebookHandler(KernelNotebooks(None, own)), tmp_path, edit,
                          Recorder([]))  # fmt: skip
    assert ok and file_sources(b) == ["x = 1", "gone = 2", "headless = 1", "# Notes"], text
    on_disk = b.read_bytes()
    silent = dict(own, **{SERVER_URL_ENV: f"http://127.0.0.1:{free_port()}/lab?token=secret-t"})
    recorder = Recorder([])
    text, ok = await call(EditNotebookHandler(KernelNotebooks(None, silent)), tmp_path,
                          cell_edit("b.ipynb", "silent = 3"), recorder)  # fmt: skip
    port = silent[SERVER_URL_ENV].split(":")[2].split("/")[0]
    reason = f"its Jupyter server at http://127.0.0.1:{port} did not answer (ConnectError)"
    assert (text, ok) == (
        f"The notebook was not changed: {b} may be open in the user's editor and {reason}, "
        f"so tell the user what to change by hand ({LIVE_NOTE}).",
        False,
    )
    assert "secret-t" not in text
    assert recorder.asked == 0 and b.read_bytes() == on_disk


async def test_a_server_whose_answer_cannot_be_read_is_a_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server the kernel is told of answers every question with broken JSON: whether
    it has the notebook open is unknown, so nothing is written."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    for name in ("a.ipynb", "b.ipynb"):
        write_notebook(tmp_path / name)
    b = tmp_path / "b.ipynb"
    on_disk = b.read_bytes()
    broken = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1\r\n\r\n{"

    def reply(conn: Any, stop: Any) -> None:
        conn.sendall(broken)

    with RawServer(reply) as junk:
        env = {SESSION_ENV: str(tmp_path / "a.ipynb"), SERVER_URL_ENV: f"{junk.origin}/?token=t"}
        text, ok = await call(EditNotebookHandler(KernelNotebooks(None, env)), tmp_path,
                              cell_edit("b.ipynb", "y = 2"), Recorder([]))  # fmt: skip
    reason = f"its Jupyter server at {junk.origin} gave an answer the kernel cannot read"
    assert (text, ok) == (one_sentence(b, reason, maybe=True), False)
    assert b.read_bytes() == on_disk
