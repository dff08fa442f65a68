"""Which notebook this kernel runs, asked of the Jupyter server that started it.

Jupyter Server names a kernel's notebook in ``JPY_SESSION_NAME``, but that is a variable
of the kernel's own environment: a cell can set or remove it before ``%load_ext``, and a
front end that names its session ``""`` gets the notebook's folder there instead. What
decides which teacher's policy holds must not follow it. So the notebook is asked of the
server: running servers leave their URL and token in the runtime folder
(``jpserver-<pid>.json``), and a server's sessions API (``GET api/sessions``) gives the
notebook of each kernel it runs, by the kernel's id (in its connection file's name).

A command can write in that folder where it lies in a writable root (``/tmp``, or the
home as on Binder, under Landlock), so a file there is believed only when the process
that started this kernel listens where its URL points
(:mod:`agent_magics.server.parent_server`): the server that started the kernel, not a
server someone named. Only when no such server lists this
kernel (a console, nbclient or papermill, VS Code, a remote kernel) do the environment
and VS Code's variable name the notebook, and :class:`OwnNotebook` says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_magics.jupyter.kernel.live_notebook import (
    auth_headers,
    kernel_id,
    running_servers,
    runtime_dir,
)
from agent_magics.jupyter.kernel.notebook_context import SESSION_ENV, notebook_file
from agent_magics.server.parent_server import Listening, listening, served_by

ASK_TIMEOUT_S = 3.0
"""Seconds one server may take to list its sessions (it answers from memory)."""
FROM_SERVER = "named by the Jupyter server's session for this kernel"
FROM_ENVIRONMENT = (
    f"named by the kernel's environment ({SESSION_ENV}) or VS Code: no Jupyter server "
    "lists this kernel"
)


@dataclass(frozen=True)
class OwnNotebook:
    """The notebook file this kernel runs (None: nobody says), and who said so."""

    path: Path | None
    told_by: str


def listed_notebook(
    kernel: str,
    folders: Sequence[str],
    parent: Listening | None,
    timeout_s: float = ASK_TIMEOUT_S,
) -> Path | None:
    """The notebook of the session that a server found in ``folders`` lists for the
    kernel ``kernel`` (its root folder joined with the session's path), else None. Only
    servers the parent serves are asked (``parent``: where it listens; None: any, where
    that cannot be told)."""
    import httpx

    from agent_magics.models.pool import tls_context

    for info in [s for folder in dict.fromkeys(folders) for s in running_servers(folder)]:
        url = str(info["url"])
        url = url if url.endswith("/") else url + "/"
        root = info.get("root_dir") or info.get("notebook_dir")
        if not isinstance(root, str) or not root:
            continue
        if parent is not None:
            checked = served_by(url, parent)
            if checked is None:
                continue  # not the server that started this kernel
            url = checked
        headers = auth_headers(str(info.get("token") or ""))
        try:
            with httpx.Client(headers=headers, timeout=timeout_s, verify=tls_context(url)) as c:
                response = c.get(url + "api/sessions")
            sessions: Any = response.json() if response.status_code == 200 else []
        except (httpx.HTTPError, ValueError):
            continue  # gone, refusing, or not a Jupyter server: ask the next one
        for session in sessions if isinstance(sessions, list) else []:
            if not isinstance(session, dict):
                continue
            listed = session.get("kernel")
            path = session.get("path")
            if isinstance(listed, dict) and listed.get("id") == kernel and isinstance(path, str):
                return Path(root, path) if path else None
    return None


def own_notebook(shell: Any, env: Mapping[str, str] = os.environ) -> OwnNotebook:
    """This kernel's notebook: as the server that runs it lists it, else as the
    environment or VS Code name it (see the module's docstring)."""
    me = kernel_id()
    parent = listening(os.getppid())
    if me and parent != set():
        listed = listed_notebook(me, [runtime_dir()], parent)
        if listed is not None:
            return OwnNotebook(listed, FROM_SERVER)
    return OwnNotebook(notebook_file(shell, env), FROM_ENVIRONMENT)
