"""Other notebooks than the kernel's own, when a Jupyter server holds them open.

With ``jupyter-collaboration`` a server keeps each document a front end opened as a room
(a shared Y document), loaded while a peer is in it and for a while after the last one
left, and writes the file itself. A file written under a loaded room is an out-of-band
change: the server loads it over the room, and whatever a person typed that it had not
saved yet is gone. So before edit_notebook writes a notebook's file, every running
server that could serve it is asked whether it holds it open:

1. A room of the file is loaded as a notebook: the edit goes into that room, merged with
   the person's typing (:class:`OpenNotebook`), and the room is left as it was.
2. It is loaded as text (the notebook open in a text editor): no cell can be put there,
   so the edit is refused.
3. A server without collaboration lists a session for the file (a front end opened it
   with a kernel and holds it in its own memory): refused.
4. A server that does not answer, or whose files the kernel cannot place: refused, as
   the notebook may be open there.
5. None of these: the file is written as before.

Whether a room is loaded: the collaboration extension's fork endpoint is the one
question its API answers without loading the room (``PUT api/collaboration/fork/<room>``
answers 404 for a room it has not loaded); the fork made to answer it is deleted at
once, unmerged. A server whose extension has no fork endpoint cannot say, so its room is
joined and edited, which keeps the person's typing either way. The file is named as the
server names it: its real path under the server's real root folder (``./sub/../``, a
symlink), and the path as written when that differs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote

from agent_magics.jupyter.kernel.live_notebook import (
    EXTRA,
    INSTALL,
    LIVE_TIMEOUT_S,
    NOTEBOOK_DOCUMENT,
    PARENT_PID_ENV,
    SERVER_URL_ENV,
    JupyterServer,
    KernelLiveNotebook,
    api_client,
    auth_headers,
    did_not_answer,
    kernel_id,
    room_url,
    running_servers,
    runtime_dir,
    server_from_url,
    server_of,
    session_path,
)
from agent_magics.tools.notebook.document import LiveUnavailable

if TYPE_CHECKING:
    import httpx

    from agent_magics.jupyter.kernel.notebook_room import RoomDocument

ROOM_KINDS = ("json:notebook", "text:file")
"""How JupyterLab opens a notebook's file: as a notebook, or in its text editor."""
PROBE = {
    "synchronize": False,
    "title": "agent_magics: is this document open?",
    "description": "Made to learn whether the document is loaded, and deleted at once.",
}
Held = Literal["room", "text", "session"]


class KernelNotebooks(KernelLiveNotebook):
    """:class:`~agent_magics.tools.notebook.document.LiveNotebooks` for a kernel: its own
    notebook (:class:`KernelLiveNotebook`), and the others a Jupyter server holds open."""

    async def held_open(self, path: Path) -> OpenNotebook | None:
        return await held_open(path, self.env, self.path(), self.kernel)


@dataclass(frozen=True, eq=False)
class OpenNotebook:
    """:class:`~agent_magics.tools.notebook.document.LiveNotebook` for a notebook a server
    holds open (not the kernel's own): its room is joined for one call and left after it,
    so the room the kernel keeps for its own notebook is not disturbed."""

    server: JupyterServer
    rel: str  # the notebook's path under the server's root
    path: Path  # as the model named it
    target: Path  # the server's root joined with ``rel``

    async def owns(self, path: Path) -> bool:
        return os.path.realpath(path) == os.path.realpath(self.path)

    async def open(self) -> RoomDocument:
        try:
            from agent_magics.jupyter.kernel.notebook_room import (
                NotebookRoom,
                RoomDocument,
                _RoomError,
            )
        except ImportError:
            raise LiveUnavailable(f"the kernel cannot reach its editor ({EXTRA})") from None
        import httpx

        headers = auth_headers(self.server.token)
        try:
            async with api_client(self.server, headers) as client:
                url = await room_url(client, self.server, self.rel)
            room = await NotebookRoom.join(url, headers, LIVE_TIMEOUT_S)
        except httpx.HTTPError as exc:
            raise LiveUnavailable(did_not_answer(self.server, exc)) from None
        except _RoomError as exc:
            raise LiveUnavailable(str(exc)) from None
        return RoomDocument(room, self.path, LIVE_TIMEOUT_S)

    async def close(self) -> None:
        """Nothing is kept between calls."""


async def held_open(
    path: Path, env: Mapping[str, str], own: Path | None, kernel: str | None
) -> OpenNotebook | None:
    """The notebook ``path`` as a server that holds it open has it, or ``None`` when no
    server does; raises :class:`LiveUnavailable` where its file must not be written and
    its room cannot be edited (see the module's rules)."""
    import httpx

    unsure: LiveUnavailable | None = None
    for server in _servers(env):
        try:
            async with api_client(server, auth_headers(server.token)) as client:
                root = server.root_dir or await _root_from_session(client, server, own, kernel)
                if root is None:
                    raise LiveUnavailable(
                        f"the kernel cannot tell which folder its Jupyter server at "
                        f"{server.shown} serves",
                        maybe=True,
                    )
                for rel in _names(path, root):
                    held = await _held(client, server, root, rel, path)
                    if held == "room":
                        return OpenNotebook(server, rel, path, Path(root, rel))
                    if held == "text":
                        raise LiveUnavailable(
                            f"its Jupyter server at {server.shown} has it open as text, where "
                            "no cell can be put"
                        )
                    if held == "session":
                        raise LiveUnavailable(
                            f"its Jupyter server at {server.shown} has no real-time "
                            f"collaboration ({INSTALL})"
                        )
        except httpx.HTTPError as exc:
            unsure = unsure or LiveUnavailable(did_not_answer(server, exc), maybe=True)
        except (ValueError, KeyError, TypeError):  # JSON not as its API gives it
            reason = f"its Jupyter server at {server.shown} gave an answer the kernel cannot read"
            unsure = unsure or LiveUnavailable(reason, maybe=True)
        except LiveUnavailable as exc:
            if not exc.maybe:
                raise
            unsure = unsure or exc
    if unsure is not None:
        raise unsure
    return None


def _servers(env: Mapping[str, str]) -> list[JupyterServer]:
    """The server the kernel is told of, then every server running on this machine (the
    kernel's own first): any of them may have the notebook open. Only the first may
    leave its root folder unsaid (it is learned from the kernel's session there)."""
    found = [server_from_url(env[SERVER_URL_ENV])] if env.get(SERVER_URL_ENV) else []
    parent = env.get(PARENT_PID_ENV, "")
    infos = sorted(running_servers(runtime_dir()), key=lambda i: str(i.get("pid")) != parent)
    for info in infos:
        server = server_of(info)
        fresh = all(s.url != server.url for s in found)
        if server.root_dir and fresh and _alive(info.get("pid")):
            found.append(server)
    return found


def _alive(pid: object) -> bool:
    """Whether the server that wrote a runtime file still runs (a crashed one leaves
    its file behind)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    if os.name == "nt":  # os.kill would end the process there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: it exists
    return True


async def _root_from_session(
    client: httpx.AsyncClient, server: JupyterServer, own: Path | None, kernel: str | None
) -> str | None:
    """The root folder of a server known only by its URL: the kernel's notebook's path
    without the path the server's session for this kernel gives it."""
    try:
        rel = await session_path(client, server, kernel or kernel_id())
    except LiveUnavailable as exc:  # said of the kernel's notebook, not of this one
        raise LiveUnavailable(exc.reason, maybe=True) from None
    if not rel or own is None or not own.is_absolute():
        return None
    whole, tail = os.path.normpath(own), "/" + os.path.normpath(rel).lstrip("/")
    return (whole[: -len(tail)] or "/") if whole.endswith(tail) else None


def _names(path: Path, root: str) -> list[str]:
    """``path`` under ``root`` as the server may name it: the real path under the real
    root, then the path as written (a folder reached through a symlink) when it differs."""
    names: list[str] = []
    forms = ((os.path.realpath(path), os.path.realpath(root)),
             (os.path.abspath(path), os.path.abspath(root)))  # fmt: skip
    for target, folder in forms:
        if target.startswith(folder.rstrip(os.sep) + os.sep):
            rel = Path(os.path.relpath(target, folder)).as_posix()
            if rel not in names:
                names.append(rel)
    return names


async def _held(
    client: httpx.AsyncClient, server: JupyterServer, root: str, rel: str, path: Path
) -> Held | None:
    """How ``server`` holds the file ``rel`` open, if it does."""
    url = f"{server.url}api/collaboration/session/{quote(rel)}"
    response = await client.put(url, json=NOTEBOOK_DOCUMENT)
    _check_auth(response, server)
    if response.status_code == 404:
        if _is_json(response):
            return None  # the server has no such file
        return "session" if await _in_session(client, server, root, path) else None
    if response.status_code not in (200, 201):
        raise LiveUnavailable(
            f"its Jupyter server at {server.shown} did not say whether it has it open "
            f"(HTTP {response.status_code})",
            maybe=True,
        )
    file_id = str(response.json()["fileId"])
    notebook, text = [await _loaded(client, server, f"{kind}:{file_id}") for kind in ROOM_KINDS]
    if text:  # a save of the notebook's room would be loaded over the text editor's typing
        return "text"
    if notebook is None or notebook or text is None:
        return "room"  # loaded, or it cannot say: its room keeps the typing either way
    return None


async def _loaded(client: httpx.AsyncClient, server: JupyterServer, room: str) -> bool | None:
    """Whether the room ``room`` is loaded, or ``None`` when the server cannot say."""
    forks = f"{server.url}api/collaboration/fork/"
    response = await client.put(forks + quote(room), json=PROBE)
    _check_auth(response, server)
    if response.status_code == 404:
        return False if _is_json(response) else None
    if response.status_code != 201:
        return None
    import httpx

    with contextlib.suppress(ValueError, KeyError, TypeError, httpx.HTTPError):
        fork = str(response.json()["fork_roomid"])
        await client.delete(forks + quote(fork), params={"merge": "false"})
    return True


async def _in_session(
    client: httpx.AsyncClient, server: JupyterServer, root: str, path: Path
) -> bool:
    """Whether the server lists a session for the file ``path``."""
    response = await client.get(server.url + "api/sessions")
    _check_auth(response, server)
    if response.status_code != 200:
        raise LiveUnavailable(
            f"its Jupyter server at {server.shown} did not list its sessions "
            f"(HTTP {response.status_code})",
            maybe=True,
        )
    target = os.path.realpath(path)
    named = [s.get("path") for s in response.json() if isinstance(s, dict)]
    return any(
        isinstance(n, str) and n and os.path.realpath(os.path.join(root, n.lstrip("/"))) == target
        for n in named
    )


def _check_auth(response: httpx.Response, server: JupyterServer) -> None:
    if response.status_code in (401, 403):
        raise LiveUnavailable(
            f"its Jupyter server at {server.shown} refused the kernel's token", maybe=True
        )


def _is_json(response: httpx.Response) -> bool:
    return "json" in response.headers.get("content-type", "")
