"""The open notebook's room is joined once and kept between the notebook tools' calls.

Against a real ``jupyter server`` with jupyter-collaboration on 127.0.0.1 (the harness of
``tests/jupyter/kernel/test_live_notebook.py``), where a second peer of the room stands
for the person
in JupyterLab: an edit they make between two calls is in the next read, a room the
server dropped is joined again, and the session's end leaves the room.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import psutil
import pytest

from agent_magics.jupyter.kernel.live_notebook import (
    PARENT_PID_ENV,
    SERVER_URL_ENV,
    KernelLiveNotebook,
)
from agent_magics.tools.context import SessionServices
from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
from agent_magics.tools.handlers.read_notebook import ReadNotebookHandler
from agent_magics.tools.notebook.document import SESSION_ENV, close_live_notebooks
from tests.helpers.browser import free_port
from tests.helpers.jupyter_server import (
    INSERT,
    Recorder,
    Server,
    call,
    server_fixture,  # noqa: F401 (the ``server`` fixture)
    write_notebook,
)

pytestmark = pytest.mark.slow


def connections(server: Server) -> int:
    """Sockets of this process open to the server."""
    found = psutil.Process().net_connections("tcp")
    return sum(1 for c in found if c.raddr and c.raddr.port == server.port)


def bridge(server: Server) -> KernelLiveNotebook:
    nb = server.notebooks / "a.ipynb"
    return KernelLiveNotebook(
        None, {SESSION_ENV: str(nb), PARENT_PID_ENV: str(server.process.pid)}, keep=True
    )


async def read(live: KernelLiveNotebook, cwd: Path, services: SessionServices) -> str:
    from agent_magics.tools.context import FunctionPayload, ToolInvocation, TurnContext

    inv = ToolInvocation("r", "read_notebook", FunctionPayload('{"path": "a.ipynb"}'),
                         TurnContext(cwd=cwd), services)  # fmt: skip
    out = await ReadNotebookHandler(live).handle(inv)
    assert out.success
    return str(out.content)


async def test_the_persons_edit_between_two_calls_is_in_the_next_read(server: Server) -> None:
    write_notebook(server.notebooks / "a.ipynb")
    live, services = bridge(server), SessionServices()
    person_side = bridge(server)
    before = connections(server)
    try:
        first = await read(live, server.notebooks, services)
        assert "Typed between the calls" not in first
        assert connections(server) == before + 1  # our room, kept after the call
        person = await person_side.open()

        def type_in_the_first_cell(nb: Any) -> None:
            text = nb.ycells[0]["source"]
            text.insert(len(text), "\n# Typed between the calls")

        await person.room.change(type_in_the_first_cell, 10)
        second = await read(live, server.notebooks, services)
        assert "# Typed between the calls" in second
        assert connections(server) == before + 2  # ours and the person's: no second join
    finally:
        await person_side.close()
        await close_live_notebooks(services)
    assert connections(server) == before


async def test_an_edit_held_on_its_way_is_waited_for(server: Server) -> None:
    """The kernel reaches the server through a relay that is paused while the person types:
    their edit is merged on the server but has not reached the kept room when the next
    read starts. The read asks the server for what it has first, so it gets the edit."""
    if shutil.which("socat") is None:
        pytest.skip("needs socat")
    write_notebook(server.notebooks / "a.ipynb")
    port = free_port()
    relay = subprocess.Popen(
        ["socat", f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork",
         f"TCP:127.0.0.1:{server.port}"], start_new_session=True)  # fmt: skip
    headers = {"Authorization": f"token {server.token}"}
    body = {"path": "a.ipynb", "type": "notebook", "kernel": {"name": "python3"}}
    async with httpx.AsyncClient(headers=headers, timeout=60) as client:
        url = f"http://127.0.0.1:{server.port}/api/sessions"
        kernel = (await client.post(url, json=body)).json()["kernel"]["id"]
    nb = str(server.notebooks / "a.ipynb")
    env = {SESSION_ENV: nb, SERVER_URL_ENV: f"http://127.0.0.1:{port}/lab?token={server.token}"}
    live, services, person_side = (
        KernelLiveNotebook(None, env, kernel, keep=True),
        SessionServices(),
        bridge(server),
    )
    try:
        await read(live, server.notebooks, services)
        person = await person_side.open()

        def type_in_the_first_cell(nb: Any) -> None:
            text = nb.ycells[0]["source"]
            text.insert(len(text), "\n# Typed while the relay was paused")

        os.killpg(relay.pid, signal.SIGSTOP)
        try:
            await person.room.change(type_in_the_first_cell, 10)  # merged on the server
        finally:
            os.killpg(relay.pid, signal.SIGCONT)
        assert "# Typed while the relay was paused" in await read(live, server.notebooks, services)
    finally:
        await person_side.close()
        await close_live_notebooks(services)
        os.killpg(relay.pid, signal.SIGTERM)
        relay.wait(10)


async def test_a_room_the_server_dropped_is_joined_again(server: Server) -> None:
    write_notebook(server.notebooks / "a.ipynb")
    live, services = bridge(server), SessionServices()
    try:
        await read(live, server.notebooks, services)
        doc = await live.open()
        dropped = doc.room
        stream: Any = getattr(dropped._conn.protocol, "stream", None)
        stream.close()  # the connection breaks under the kept room
        async with asyncio.timeout(10):
            while dropped.closed is None:
                await asyncio.sleep(0.01)
        recorder = Recorder([])
        text, ok = await call(EditNotebookHandler(live), server.notebooks, INSERT, recorder)
        assert ok, text
        assert (await live.open()).room is not dropped
        assert "y = x + 1" in await read(live, server.notebooks, services)
    finally:
        await close_live_notebooks(services)
        await live.close()


async def test_the_sessions_end_leaves_the_room(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real session with the kernel's tools: a turn's two reads share one room, kept
    after the turn for the next; ``Session.aclose`` leaves it."""
    from agent_magics.agent.session import Session
    from agent_magics.config import SessionConfig
    from agent_magics.jupyter.kernel.tools import KernelTools
    from agent_magics.testing import ScriptedResponsesServer, function_call, message

    write_notebook(server.notebooks / "a.ipynb")
    monkeypatch.setenv(SESSION_ENV, str(server.notebooks / "a.ipynb"))
    monkeypatch.setenv(PARENT_PID_ENV, str(server.process.pid))
    before = connections(server)
    read_it = {"path": "a.ipynb"}
    script = [[function_call("read_notebook", read_it, "r1"),
               function_call("read_notebook", read_it, "r2")], [message("read")]]  # fmt: skip
    with ScriptedResponsesServer(script) as model:
        config = SessionConfig(model="m", base_url=model.base_url, api_key="k",
                               cwd=server.notebooks, shell_type="disabled")  # fmt: skip
        session = Session(config, extra_tools=KernelTools(SimpleNamespace(user_ns={})))
        try:
            await session.run_turn("read it")
            outputs = [i["output"] for i in model.requests[-1]["input"]
                       if i.get("type") == "function_call_output"]  # fmt: skip
            assert len(outputs) == 2
            assert all("(read from the editor's document" in str(o) for o in outputs)
            assert connections(server) == before + 1  # one room for both, kept after the turn
        finally:
            await session.aclose()
    assert connections(server) == before
