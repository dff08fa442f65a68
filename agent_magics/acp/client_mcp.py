"""The MCP servers a client passes in ``session/new``, started as ours are, once a person
said so.

jupyter-ai reads the servers it passes from ``.jupyter/mcp_settings.json`` in the chat's
folder or above it: a cloned repository can hold that file, and a stdio server is a
command that runs outside the sandbox. So no server a client names starts unasked: at
the session's first prompt each new one is a permission request showing exactly what
would start (the command and its arguments with the variables it gets, or the URL with
the headers sent; values whose names look like credentials are hidden), and the answer
decides it. Only a server reached by URL may be allowed "always": a stdio server starts
in the chat's folder and runs files there (``server.py``, a local ``node_modules``) that
a sandboxed command may change between two chats, so it is asked about in each session.
"Always" is kept in the user's own folder (``~/.agent_magics/client_mcp.json``, which the
sandbox keeps commands from writing), keyed by the whole entry and the folder, so a
changed URL, a changed value or another folder asks again. A refused server
is not started and the model is told so in one note.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tempfile
from pathlib import Path
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

from agent_magics.config import looks_secret
from agent_magics.trust import CONFIG_DIR

REMEMBERED_FILE = "client_mcp.json"
ClientServer = HttpMcpServer | SseMcpServer | McpServerStdio


def described(server: ClientServer) -> dict[str, Any]:
    """What starting ``server`` means, as the question shows it: the command and its
    arguments, or the URL; the variables and headers with their values, but for those
    whose names look like credentials (``<hidden>``): a value such as ``PATH=./bin``
    decides what runs, so the person must see it."""
    if isinstance(server, McpServerStdio):
        return {
            "name": server.name,
            "command": server.command,
            "args": list(server.args),
            "env": {v.name: _shown(v.name, v.value) for v in server.env},
        }
    return {
        "name": server.name,
        "url": server.url,
        "headers": {h.name: _shown(h.name, h.value) for h in server.headers},
    }


def _shown(name: str, value: str) -> str:
    return "<hidden>" if looks_secret(name) else value


def key(server: ClientServer, cwd: Path) -> str:
    """What "always" is kept by: the whole entry, values included, and the folder it
    starts in (a relative command or script is another program in another folder)."""
    whole = server.model_dump(mode="json", by_alias=True, exclude={"field_meta"})
    whole["cwd"] = os.path.realpath(cwd)
    return hashlib.sha256(json.dumps(whole, sort_keys=True).encode()).hexdigest()


def subject(server: ClientServer) -> str:
    """What would start or be reached, whole (a question's ``command``)."""
    d = described(server)
    if "command" in d:
        words = shlex.join([d["command"], *d["args"]])
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in d["env"].items())
        return f"{env} {words}" if env else words
    headers = ", ".join(f"{k}: {v}" for k, v in d["headers"].items())
    return f"{d['url']}" + (f" (sending {headers})" if headers else "")


def title(server: ClientServer) -> str:
    if isinstance(server, McpServerStdio):
        return f"Start the MCP server {server.name!r}"
    return f"Connect to the MCP server {server.name!r}"


def settings(server: ClientServer) -> dict[str, Any]:
    """``server`` as one entry of our ``mcp_servers`` setting."""
    if isinstance(server, McpServerStdio):
        return {
            "command": server.command,
            "args": list(server.args),
            "env": {v.name: v.value for v in server.env},
        }
    return {"url": server.url, "http_headers": {h.name: h.value for h in server.headers}}


def remembered_file(home: Path | None = None) -> Path:
    return (home if home is not None else Path.home()) / CONFIG_DIR / REMEMBERED_FILE


def remembered(home: Path | None = None) -> set[str]:
    try:
        found = json.loads(remembered_file(home).read_text("utf-8"))
    except (OSError, ValueError):
        return set()
    return {k for k in found if isinstance(k, str)} if isinstance(found, list) else set()


def remember(server: ClientServer, cwd: Path, home: Path | None = None) -> None:
    """Keep "always" for ``server`` in ``cwd``: written to a temporary file, then renamed."""
    path = remembered_file(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = sorted(remembered(home) | {key(server, cwd)})
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".client_mcp.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(keys, handle)
    os.replace(tmp, path)


def refused_note(names: list[str]) -> str:
    listed = ", ".join(repr(n) for n in names)
    return (
        f"The chat client offered the MCP servers {listed}; the person did not allow them, "
        "so their tools are not available."
    )
