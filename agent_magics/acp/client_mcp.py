"""The MCP servers a client passes in ``session/new``, started as ours are, once a person
said so.

jupyter-ai reads the servers it passes from ``.jupyter/mcp_settings.json`` in the chat's
folder or above it: a cloned repository can hold that file, and a stdio server is a
command that runs outside the sandbox. So no server a client names starts unasked: at
the session's first prompt each new one is a permission request showing exactly what
would start (the command and its arguments, the names of the variables it gets, or the
URL), and the answer decides it. "Always" is kept in the user's own folder
(``~/.agent_magics/client_mcp.json``, which the sandbox keeps commands from writing),
keyed by the whole description, so a changed command or URL asks again. A refused server
is not started and the model is told so in one note.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

from agent_magics.trust import CONFIG_DIR

REMEMBERED_FILE = "client_mcp.json"
ClientServer = HttpMcpServer | SseMcpServer | McpServerStdio


def described(server: ClientServer) -> dict[str, Any]:
    """What starting ``server`` means, as the question shows it and the memory keys it:
    header and variable values are left out of the text (they may be credentials) but
    counted in the key."""
    if isinstance(server, McpServerStdio):
        return {
            "name": server.name,
            "command": server.command,
            "args": list(server.args),
            "env": sorted(v.name for v in server.env),
        }
    return {
        "name": server.name,
        "url": server.url,
        "headers": sorted(h.name for h in server.headers),
    }


def key(server: ClientServer) -> str:
    whole = server.model_dump(mode="json", by_alias=True, exclude={"field_meta"})
    return hashlib.sha256(json.dumps(whole, sort_keys=True).encode()).hexdigest()


def subject(server: ClientServer) -> str:
    """One line naming what would start or be reached."""
    d = described(server)
    if "command" in d:
        words = " ".join([d["command"], *d["args"]])
        env = f" (with {', '.join(d['env'])} set)" if d["env"] else ""
        return f"start the MCP server {d['name']!r}: {words}{env}"
    headers = f" (sending {', '.join(d['headers'])})" if d["headers"] else ""
    return f"connect to the MCP server {d['name']!r} at {d['url']}{headers}"


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


def remember(server: ClientServer, home: Path | None = None) -> None:
    """Keep "always" for ``server``: written to a temporary file, then renamed."""
    path = remembered_file(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = sorted(remembered(home) | {key(server)})
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
