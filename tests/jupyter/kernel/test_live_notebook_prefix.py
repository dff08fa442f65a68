"""Live notebook edits on a server under a URL prefix with a token, as Binder and
JupyterHub run it (``/user/<name>/``), and what the tools say when the live document
cannot be reached.

The turn test is the person's setup: a real ``jupyter server`` with jupyter-collaboration
started with ``--ServerApp.base_url=/user/labs-someone/`` (a Binder-style name) and a
token, the kernel started by it for the notebook through the REST API, and ``%%agent``
turns in that kernel whose scripted model calls read_notebook and edit_notebook; a peer of
the notebook's room checks that the cells went into the live document. The token never
reaches the model nor the cell's output.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.jupyter.kernel.live_notebook import (
    PARENT_PID_ENV,
    SERVER_URL_ENV,
    KernelLiveNotebook,
    find_server,
    server_from_url,
)
from agent_magics.jupyter.kernel.open_notebooks import KernelNotebooks
from agent_magics.testing import ScriptedResponsesServer, Turn, function_call
from agent_magics.testing import message as say
from agent_magics.tools.context import FunctionPayload, SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
from agent_magics.tools.handlers.read_notebook import FROM_FILE_AGAIN, ReadNotebookHandler
from agent_magics.tools.notebook.document import SESSION_ENV
from tests.helpers.browser import free_port
from tests.helpers.jupyter_server import (
    INSERT,
    Recorder,
    ServerKernel,
    StartedServer,
    call,
    live_sources,
    read_and_insert,
    serve_until_done,
    turns_done,
    write_notebook,
)
from tests.helpers.kernels import Kernel, agent_cell

PREFIX = "/user/labs-someone/"  # Binder names a person's server after the repository
TOKEN = "prefix-test-token-5f1c"
nbf: Any = nbformat


def test_a_url_under_a_prefix_keeps_its_prefix() -> None:
    """A page's name is a whole path segment: ``/user/labs-x/`` is not cut at ``/lab``."""
    cases = {
        "http://127.0.0.1:8888/lab?token=abc": "http://127.0.0.1:8888/",
        f"http://127.0.0.1:8888{PREFIX}lab/tree/a.ipynb?token=t": f"http://127.0.0.1:8888{PREFIX}",
        "http://127.0.0.1/user/notebooks-demo/notebooks/a.ipynb": "http://127.0.0.1/user/notebooks-demo/",
        "http://127.0.0.1/user/tree/tree": "http://127.0.0.1/user/tree/",
        "http://127.0.0.1/user/someone": "http://127.0.0.1/user/someone/",
        "http://127.0.0.1/user/lab": "http://127.0.0.1/user/lab/",
        "http://127.0.0.1/treehouse/lab/workspaces/auto-x": "http://127.0.0.1/treehouse/",
    }  # fmt: skip
    assert {url: server_from_url(url).url for url in cases} == cases
    server = server_from_url(f"http://127.0.0.1:8888{PREFIX}lab?token={TOKEN}")
    assert server.token == TOKEN and TOKEN not in repr(server)


async def test_a_notebook_read_from_its_file_says_why_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server is gone (nothing listens at its URL): each read comes from the file and
    says so, the reason only the first time in the session (its tools are made afresh
    each turn); the token is in no answer."""
    pytest.importorskip("jupyter_ydoc", reason="pip install -e '.[live]'")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    nb = tmp_path / "a.ipynb"
    write_notebook(nb)
    port = free_port()
    gone = f"http://127.0.0.1:{port}{PREFIX}lab?token={TOKEN}"
    live = KernelLiveNotebook(None, {SESSION_ENV: str(nb), SERVER_URL_ENV: gone})
    services, answers = SessionServices(), list[str]()
    for n in range(3):  # a turn each
        inv = ToolInvocation(f"c{n}", "read_notebook", FunctionPayload('{"path": "a.ipynb"}'),
                             TurnContext(cwd=tmp_path), services)  # fmt: skip
        answers.append(str((await ReadNotebookHandler(live).handle(inv)).content))
    first = answers[0].splitlines()[0]
    assert first.startswith(f"{nb}: 2 cells, nbformat 4.5, language unknown (read from the file: ")
    server = f"http://127.0.0.1:{port}{PREFIX.rstrip('/')}"
    assert first.endswith(f"its Jupyter server at {server} did not answer (ConnectError))")
    for later in answers[1:]:
        assert (
            later.splitlines()[0]
            == f"{nb}: 2 cells, nbformat 4.5, language unknown {FROM_FILE_AGAIN}"
        )
    assert all("--- cell 1 · id one · code" in a and TOKEN not in a for a in answers)


# -- a real server under a prefix, its kernel, and turns in it ----------------------------


class PrefixServer(StartedServer):
    """``jupyter server`` with jupyter-collaboration started in ``project`` under
    :data:`PREFIX` on 127.0.0.1 with :data:`TOKEN`."""

    token = TOKEN

    def __init__(self, tmp_path: Path, project: Path) -> None:
        pytest.importorskip("jupyter_server_ydoc", reason="pip install -e '.[browser]'")
        super().__init__(tmp_path, project)
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(self.runtime),
                   JUPYTER_CONFIG_DIR=str(tmp_path / "config"))  # fmt: skip
        argv = [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={free_port()}",
                f"--ServerApp.base_url={PREFIX}", f"--IdentityProvider.token={TOKEN}",
                f"--ServerApp.root_dir={project}"]  # fmt: skip
        self.launch(argv, env, self._up, within=60)  # its url ends with the prefix and /

    def _up(self) -> str | None:
        server = find_server({PARENT_PID_ENV: str(self.process.pid)}, str(self.runtime), None)
        if server is None:
            return None
        try:
            urllib.request.urlopen(f"{server.url}api/status?token={TOKEN}", timeout=5).close()
        except OSError:
            return None
        return str(server.url)


@pytest.fixture
def prefixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PrefixServer]:
    folder = tmp_path / "project"
    folder.mkdir()
    write_notebook(folder / "a.ipynb")
    yield from serve_until_done(PrefixServer(tmp_path, folder), monkeypatch)


@pytest.mark.slow
async def test_a_turn_edits_the_open_notebook_on_a_server_under_a_prefix(
    prefixed: PrefixServer,
) -> None:
    pytest.importorskip("pycrdt", reason="pip install -e '.[browser]'")
    nb = prefixed.project / "a.ipynb"
    kernel = ServerKernel(prefixed.start_kernel("a.ipynb"), prefixed.project)
    page = f"{prefixed.url}lab/tree/a.ipynb?token={TOKEN}"  # as the person's browser shows it
    wrong = f"{prefixed.url.replace(PREFIX, '/user/someone-else/')}?token={TOKEN}"
    script = read_and_insert(1, "found = 1") + read_and_insert(4, "named = 2")
    script += [[function_call("read_notebook", {"path": "a.ipynb"}, f"r{n}")] for n in (7, 8)]
    script += [[say("turn 3 done")]]
    try:
        kernel.run("%load_ext agent_magics")
        with ScriptedResponsesServer(script) as model:
            # 1: the kernel finds its server (under the prefix) on its own
            kernel.run(agent_cell(model.base_url, "-a never", "add a cell"), timeout=120)
            kernel.wait_for(lambda: turns_done(kernel) == 1, timeout=90)
            # 2: the server named by the URL of the person's page
            kernel.run(f"import os; os.environ[{SERVER_URL_ENV!r}] = {page!r}")
            kernel.run(agent_cell(model.base_url, "-a never", "add another"), timeout=120)
            kernel.wait_for(lambda: turns_done(kernel) == 2, timeout=90)
            # 3: a URL with the wrong prefix: read from the file, said why once
            kernel.run(f"os.environ[{SERVER_URL_ENV!r}] = {wrong!r}")
            kernel.run(agent_cell(model.base_url, "-a never", "read it twice"), timeout=120)
            kernel.wait_for(lambda: turns_done(kernel) == 3, timeout=90)
            live = await live_sources(prefixed)
            shown = " ".join(kernel.html_values())
            sent = json.dumps(model.requests)
    finally:
        kernel.close()
    for n in (1, 4):
        read, edit = model.outputs(n)[f"r{n}"], model.outputs(n + 1)[f"e{n}"]
        assert "(read from the editor's document, unsaved edits included)" in read, read
        assert edit.endswith(f"in {nb}, the notebook open in the user's editor"), edit
    assert live == ["x = 1", "named = 2", "found = 1", "# Notes"]
    first, second = model.outputs(7)["r7"], model.outputs(8)["r8"]
    assert (
        "(read from the file: unsaved edits in the editor are not shown, no Jupyter server "
        in first
    )
    assert "/user/someone-else (HTTP 404: check the URL's prefix))" in first
    assert FROM_FILE_AGAIN in second and "HTTP 404" not in second
    assert TOKEN not in sent and TOKEN not in shown


@pytest.mark.slow
async def test_another_open_notebook_is_edited_in_its_room_under_a_prefix(
    prefixed: PrefixServer,
) -> None:
    """The person has b.ipynb open (a peer of its room); the kernel's notebook is
    a.ipynb. Asking the server whether b.ipynb is open, and joining its room, go under
    the prefix with the token, which no answer holds."""
    pytest.importorskip("pycrdt", reason="pip install -e '.[browser]'")
    write_notebook(prefixed.project / "b.ipynb")

    def env(name: str) -> dict[str, str]:
        pid = str(prefixed.process.pid)
        return {SESSION_ENV: str(prefixed.project / name), PARENT_PID_ENV: pid}

    person = await KernelLiveNotebook(None, env("b.ipynb")).open()
    try:
        live = KernelNotebooks(None, env("a.ipynb"))
        text, ok = await call(EditNotebookHandler(live), prefixed.project,
                              dict(INSERT, path="b.ipynb"), Recorder([]))  # fmt: skip
        await person.room.flush(10)
        cells = [str(c.source) for c in person.notebook().cells]
    finally:
        await person.close()
    b = prefixed.project / "b.ipynb"
    assert (ok, text.endswith(f"in {b}, the notebook open in the user's editor")) == (True, True)
    assert cells == ["x = 1", "y = x + 1", "# Notes"] and TOKEN not in text


@pytest.mark.slow
def test_a_session_says_why_it_reads_from_the_file_once_over_its_turns(kernel: Kernel) -> None:
    """The server named for the kernel is gone: the first turn's read says why it reads
    the file, the next turn's read only that it does, as before (the tools are offered
    afresh each turn, the session is the same); the token is in no answer nor output."""
    pytest.importorskip("jupyter_ydoc", reason="pip install -e '.[live]'")
    nb = kernel.ws / "a.ipynb"
    write_notebook(nb)
    url = kernel.ws.parent / "url"  # read by the kernel: the cells reach the model
    url.write_text(f"http://127.0.0.1:{free_port()}{PREFIX}lab/tree/a.ipynb?token={TOKEN}")
    kernel.run(f"import os, pathlib; os.environ.update({{{SESSION_ENV!r}: {str(nb)!r}, "
               f"{SERVER_URL_ENV!r}: pathlib.Path({str(url)!r}).read_text()}})")  # fmt: skip
    read: list[Turn] = [[function_call("read_notebook", {"path": "a.ipynb"}, f"r{n}")]
                        for n in (1, 2)]  # fmt: skip
    script = [read[0], [say("one")], read[1], [say("two")]]
    with ScriptedResponsesServer(script) as model:
        for n in (1, 2):
            kernel.run(agent_cell(model.base_url, "-a never", f"read {n}"), timeout=120)
            kernel.wait_for(lambda: turns_done(kernel) == n, timeout=90)  # noqa: B023
        sent = json.dumps(model.requests)
    first, second = model.outputs(1)["r1"], model.outputs(3)["r2"]
    # why: the server did not answer, or (a kernel without the live extra) what to install
    assert f"{nb}: 2 cells, nbformat 4.5, language unknown (read from the file: " in first
    assert second.splitlines()[0].endswith(FROM_FILE_AGAIN), second
    assert "--- cell 1 · id one · code" in second
    assert TOKEN not in sent and TOKEN not in " ".join(kernel.html_values())
