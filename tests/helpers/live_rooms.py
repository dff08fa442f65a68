"""A Jupyter server's open notebooks as the tests reach them: the kernel's bridge to a
notebook's room, the person's editor as a peer of that room (typing, saving), and a
session opened as a front end opens a notebook."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from agent_magics.jupyter.kernel.live_notebook import PARENT_PID_ENV
from agent_magics.jupyter.kernel.open_notebooks import KernelNotebooks
from agent_magics.tools.notebook.document import SESSION_ENV
from tests.helpers.jupyter_server import Server

TYPED = "\nTyped, not saved."


def bridge(server: Server, name: str, keep: bool = False) -> KernelNotebooks:
    """The bridge of a kernel whose notebook is ``name``, as a kernel the server started
    finds it; the person's editor of ``name`` is one too (a peer of its room)."""
    env = {SESSION_ENV: str(server.notebooks / name), PARENT_PID_ENV: str(server.process.pid)}
    return KernelNotebooks(None, env, keep=keep)


async def person_types_in(server: Server, name: str) -> Any:
    """The person's editor of ``name``: they type at the end of its second cell and do
    not save."""
    doc = await bridge(server, name).open()

    def type_in_the_second_cell(nb: Any) -> None:
        text = nb.ycells[1]["source"]
        text.insert(len(text), TYPED)

    await doc.room.change(type_in_the_second_cell, 10)
    return doc


def save(doc: Any) -> None:
    """The person's Save: the message JupyterLab sends the room for the server to write
    the file now (``RAW``, ``"save"``, a request id)."""
    from pycrdt import Encoder

    message = Encoder()
    message.write_var_uint(2)
    message.write_var_string("save")
    message.write_var_uint(1)
    doc.room._conn.write_message(message.to_bytes(), binary=True)


def open_session(server: Server, name: str) -> Path:
    """A session for ``name``, as a front end opens the notebook; its kernel's
    connection file."""
    body = {"path": name, "name": name, "type": "notebook", "kernel": {"name": "python3"}}
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/api/sessions",
        json.dumps(body).encode(),
        {"Authorization": f"token {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        kernel_id = json.loads(answer.read())["kernel"]["id"]
    return server.runtime / f"kernel-{kernel_id}.json"


async def wait_until(what: Any, timeout: float = 30) -> None:
    """Until ``what()`` holds (the loop runs meanwhile: the person's room talks on it)."""
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "not in time"
        await asyncio.sleep(0.1)
