"""The notebook this kernel belongs to, read and edited through JupyterLab itself.

Writing the notebook's file under an open editor would lose the person's unsaved edits,
so the notebook tools go through the document the editor shows: with
``jupyter-collaboration`` installed in the Jupyter server, that document is a shared Y
document on the server (:mod:`.notebook_room`), and a cell put into it appears in every
open view, merged with what the person is typing, and is saved by the server, even when
no tab shows the notebook. Without a server that keeps such documents (a headless run, VS
Code, the classic Notebook, or no ``jupyter-collaboration``) :class:`LiveUnavailable`
says why, in words the edit tool finishes into one sentence for the model.

Which server: the one whose ``jpserver-<pid>.json`` in the runtime folder has the pid
jupyter_client put in the kernel's environment (``JPY_PARENT_PID``), else one whose root
folder holds the notebook, or the URL in :data:`SERVER_URL_ENV` (``?token=`` included)
for a server this process cannot see. Which document: the session the server lists for
this kernel's id (it follows renames), else the notebook's path under the server's root.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, urlsplit, urlunsplit

from agent_magics.tools.notebook.document import SESSION_ENV, LiveUnavailable

if TYPE_CHECKING:
    import httpx

    from agent_magics.jupyter.kernel.notebook_room import KeptRoom, NotebookRoom, RoomDocument

SERVER_URL_ENV = "AGENT_MAGICS_JUPYTER_URL"
"""A Jupyter server's URL (with ``?token=...``) for when it cannot be found on its own."""
PARENT_PID_ENV = "JPY_PARENT_PID"
VSCODE_FILE = "__vsc_ipynb_file__"
"""The name VS Code gives, in the kernel's namespace, to the notebook the kernel runs."""
LIVE_TIMEOUT_S = 10.0
"""Seconds each step (a request, joining the room, an edit reaching the server) may take."""
INSTALL = "pip install jupyter-collaboration where the server runs, then restart it"
EXTRA = "pip install 'agent_magics[live]' in the kernel's environment, then restart the kernel"


@dataclass(frozen=True)
class JupyterServer:
    """Where a Jupyter server answers: ``url`` ends with ``/``, ``token`` may be empty."""

    url: str
    token: str = field(default="", repr=False)  # a secret: never in a message or a log
    root_dir: str | None = None

    @property
    def shown(self) -> str:
        return self.url.rstrip("/")


def running_servers(runtime_dir: str) -> list[dict[str, Any]]:
    """The ``jpserver-*.json`` files Jupyter servers leave in ``runtime_dir``."""
    found: list[dict[str, Any]] = []
    try:
        names = sorted(os.listdir(runtime_dir))
    except OSError:
        return found
    for name in names:
        if not (name.startswith("jpserver-") and name.endswith(".json")):
            continue
        try:
            with open(os.path.join(runtime_dir, name), encoding="utf-8") as f:
                info = json.load(f)
        except (OSError, ValueError):
            continue  # being written, or left half-written
        if isinstance(info, dict) and isinstance(info.get("url"), str) and info["url"]:
            found.append(info)
    return found


PAGES = ("lab", "tree", "notebooks", "doc", "edit", "voila")
"""Path segments that start a front end's page after the server's base URL."""


def server_from_url(url: str) -> JupyterServer:
    """A server from a URL as Jupyter prints it (``http://host:8888/lab?token=abc``),
    under a URL prefix too (``.../user/labs-demo-x1/lab/tree/a.ipynb``, as JupyterHub
    and Binder name a person's server): the page starts at the first whole segment that
    names one, after JupyterHub's ``user/<name>``."""
    parts = urlsplit(url)
    token = parse_qs(parts.query).get("token", [""])[0]
    segments = parts.path.split("/")
    first = 3 if segments[1:2] == ["user"] and len(segments) >= 3 else 1
    for at in range(first, len(segments)):
        if segments[at] in PAGES:
            segments = segments[:at]
            break
    path = "/".join(segments).rstrip("/") + "/"
    base = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    return JupyterServer(base, token)


def find_server(
    env: Mapping[str, str], runtime_dir: str, notebook: Path | None
) -> JupyterServer | None:
    """The server that runs this kernel: named in ``env``, the kernel's parent, or one
    whose root folder holds ``notebook``."""
    if env.get(SERVER_URL_ENV):
        return server_from_url(env[SERVER_URL_ENV])
    servers = running_servers(runtime_dir)
    parent = env.get(PARENT_PID_ENV, "")
    chosen = [s for s in servers if parent and str(s.get("pid")) == parent]
    if not chosen and notebook is not None:
        real = os.path.realpath(notebook)
        for s in servers:
            root = os.path.realpath(str(s.get("root_dir") or "/nonexistent"))
            if real.startswith(root.rstrip("/") + "/"):
                chosen.append(s)
    return server_of(chosen[0]) if chosen else None


def server_of(info: Mapping[str, Any]) -> JupyterServer:
    """The server a ``jpserver-<pid>.json`` describes."""
    url = str(info["url"])
    return JupyterServer(url if url.endswith("/") else url + "/", str(info.get("token") or ""),
                         str(info.get("root_dir") or "") or None)  # fmt: skip


def kernel_id() -> str | None:
    """This kernel's id, from its connection file's name (``kernel-<id>.json``)."""
    try:
        from ipykernel.connect import get_connection_file

        name = os.path.basename(get_connection_file())
    except (ImportError, RuntimeError, AttributeError):
        return None
    if name.startswith("kernel-") and name.endswith(".json"):
        return name[len("kernel-") : -len(".json")]
    return None


def runtime_dir() -> str:
    from jupyter_core.paths import jupyter_runtime_dir

    return jupyter_runtime_dir()


class KernelLiveNotebook:
    """:class:`~agent_magics.tools.notebook.document.LiveNotebook` for a kernel in ``shell``."""

    def __init__(
        self,
        shell: Any,
        env: Mapping[str, str] | None = None,
        kernel: str | None = None,
        keep: bool = False,
        own: Callable[[], Path | None] | None = None,
    ) -> None:
        self.shell = shell
        self.env = os.environ if env is None else env
        self.kernel = kernel  # this kernel's id; by default read from its connection file
        self.keep = keep  # keep the room joined between calls, until close()
        self.own = own  # the notebook as the kernel's server named it (see own_notebook.py)
        self._kept: KeptRoom | None = None  # the notebook's room, kept between calls
        self._rel = ""  # the notebook's path under the server's root, when last joined

    def path(self) -> Path | None:
        """The notebook this kernel belongs to: as ``own`` found it (its server's session
        for the kernel), else as Jupyter Server's variable or VS Code names it."""
        found = self.own() if self.own is not None else None
        if found is not None:
            return found
        named: object = self.env.get(SESSION_ENV)
        if not named:
            named = (getattr(self.shell, "user_ns", None) or {}).get(VSCODE_FILE)
        return Path(named) if isinstance(named, str) and named else None

    def named(self, path: Path) -> bool:
        """Whether ``path`` is the notebook under the name the kernel was started with."""
        own = self.path()
        if own is None:
            return False
        if own.is_absolute():
            return os.path.realpath(path) == os.path.realpath(own)
        rel = os.path.normpath(own).lstrip("/")
        return os.path.realpath(path).endswith("/" + rel)

    async def owns(self, path: Path) -> bool:
        """The name the kernel was started with, or the one its server's session has now:
        a notebook renamed in JupyterLab keeps its kernel, whose environment still holds
        the old name."""
        if self.named(path):
            return True
        if path.suffix != ".ipynb":
            return False
        now = await self.current_path()
        return now is not None and os.path.realpath(path) == os.path.realpath(now)

    async def current_path(self) -> Path | None:
        """Where the server's session for this kernel says its notebook is, or None when
        no server answers for it."""
        server = find_server(self.env, runtime_dir(), self.path())
        me = self.kernel or kernel_id()
        if server is None or not server.root_dir or not me:
            return None
        import httpx  # only once a notebook tool asks: a turn without one never loads it

        headers = auth_headers(server.token)
        try:
            async with api_client(server, headers) as client:
                rel = await session_path(client, server, me)
        except (httpx.HTTPError, ValueError, LiveUnavailable):
            return None
        return Path(server.root_dir, rel) if rel else None

    async def open(self) -> RoomDocument:
        """The notebook's room, joined at the first call and kept for the next ones (until
        :meth:`close`), synced with the server before each."""
        try:
            from agent_magics.jupyter.kernel.notebook_room import KeptRoom, RoomDocument, _RoomError
        except ImportError:
            raise LiveUnavailable(f"the kernel cannot reach its editor ({EXTRA})") from None
        own = self.path()
        server = find_server(self.env, runtime_dir(), own)
        if server is None:
            if own is not None and not self.env.get(SESSION_ENV):
                raise LiveUnavailable("VS Code's notebook editor takes no cells from the kernel")
            raise LiveUnavailable(
                "no Jupyter server running this kernel was found (if one does, set "
                f"{SERVER_URL_ENV} to its URL with ?token=)"
            )
        if self._kept is None or not self.keep:  # without keep: a room for this call only
            self._kept = KeptRoom()
        names: list[str] = []
        try:
            room = await self._kept.get(
                (server, own, self.kernel), lambda: self._join(server, own, names), LIVE_TIMEOUT_S
            )
        except _RoomError as exc:
            raise LiveUnavailable(str(exc)) from None
        if names:
            self._rel = names[0]
        return RoomDocument(room, own or Path(self._rel), LIVE_TIMEOUT_S, keep=self.keep)

    async def fresh_room(self) -> NotebookRoom:
        """One more peer of the notebook's room, joined on the running loop (the caller
        leaves it): what writes a running cell's outputs from a thread of its own."""
        from agent_magics.jupyter.kernel.notebook_room import _RoomError

        own = self.path()
        server = find_server(self.env, runtime_dir(), own)
        if server is None:
            raise LiveUnavailable("no Jupyter server running this kernel was found")
        try:
            return await self._join(server, own, [])
        except _RoomError as exc:
            raise LiveUnavailable(str(exc)) from None

    async def _join(
        self, server: JupyterServer, own: Path | None, names: list[str]
    ) -> NotebookRoom:
        """Join the room of the notebook's document; its path under the server's root is
        appended to ``names``."""
        import httpx

        from agent_magics.jupyter.kernel.notebook_room import NotebookRoom

        headers = auth_headers(server.token)
        async with api_client(server, headers) as client:
            try:
                rel = await _document_path(client, server, own, self.kernel)
                url = await room_url(client, server, rel)
            except httpx.HTTPError as exc:
                raise LiveUnavailable(did_not_answer(server, exc)) from None
        names.append(rel)
        return await NotebookRoom.join(url, headers, LIVE_TIMEOUT_S)

    async def close(self) -> None:
        """Leave the notebook's room (the session ended)."""
        if self._kept is not None:
            await self._kept.close()


def api_client(server: JupyterServer, headers: dict[str, str]) -> httpx.AsyncClient:
    """A client for the server's API; for ``http://`` one that loads no CA bundle (no TLS
    is spoken, and loading it costs more than the requests)."""
    import httpx

    from agent_magics.models.pool import tls_context

    tls = tls_context(server.url)
    return httpx.AsyncClient(headers=headers, timeout=LIVE_TIMEOUT_S, verify=tls)


def auth_headers(token: str) -> dict[str, str]:
    """The server's token; a server without one still checks that a write comes with the
    same XSRF value as a cookie and as a header, which any value of ours satisfies."""
    if token:
        return {"Authorization": f"token {token}"}
    xsrf = secrets.token_hex(16)
    return {"Cookie": f"_xsrf={xsrf}", "X-XSRFToken": xsrf}


async def session_path(
    client: httpx.AsyncClient, server: JupyterServer, me: str | None
) -> str | None:
    """The path (under the server's root) of the notebook of the server's session for
    the kernel ``me``; None when the server lists none. Asked even without ``me``: a
    server that refuses the token says so here."""
    response = await client.get(server.url + "api/sessions")
    if response.status_code in (401, 403):
        raise LiveUnavailable(f"its Jupyter server at {server.shown} refused the kernel's token")
    if response.status_code == 404:  # a prefix (JupyterHub's /user/<name>/) left out or wrong
        raise LiveUnavailable(
            f"no Jupyter server answers at {server.shown} (HTTP 404: check the URL's prefix)"
        )
    if response.status_code != 200:
        return None
    for session in response.json():
        if me and isinstance(session, dict) and (session.get("kernel") or {}).get("id") == me:
            return str(session.get("path") or "") or None
    return None


async def _document_path(
    client: httpx.AsyncClient, server: JupyterServer, own: Path | None, kernel: str | None
) -> str:
    """The notebook's path under the server's root: the server's session for this kernel,
    else ``own`` made relative to the root."""
    rel = await session_path(client, server, kernel_id() if kernel is None else kernel)
    if rel:
        return rel
    if own is not None and own.is_absolute() and server.root_dir:
        root = os.path.realpath(server.root_dir)
        real = os.path.realpath(own)
        if real.startswith(root.rstrip("/") + "/"):
            return os.path.relpath(real, root)
    raise LiveUnavailable(f"its Jupyter server at {server.shown} has no session for this kernel")


def did_not_answer(server: JupyterServer, exc: Exception) -> str:
    """Why the server could not be asked, in words that finish a sentence."""
    return f"its Jupyter server at {server.shown} did not answer ({type(exc).__name__})"


async def room_url(client: httpx.AsyncClient, server: JupyterServer, rel: str) -> str:
    """The websocket URL of the room of the notebook ``rel`` (its path under the root)."""
    file_id, session = await _collaboration_session(client, server, rel)
    ws = "ws" + server.url[len("http") :] if server.url.startswith("http") else server.url
    return f"{ws}api/collaboration/room/json:notebook:{file_id}?sessionId={session}"


NOTEBOOK_DOCUMENT = {"format": "json", "type": "notebook"}
"""How JupyterLab asks the collaboration extension for a notebook's document."""


async def _collaboration_session(
    client: httpx.AsyncClient, server: JupyterServer, rel: str
) -> tuple[str, str]:
    """The document's file id and the server's collaboration session id."""
    url = f"{server.url}api/collaboration/session/{quote(rel)}"
    response = await client.put(url, json=NOTEBOOK_DOCUMENT)
    if response.status_code in (200, 201):
        answer = response.json()
        return str(answer["fileId"]), str(answer["sessionId"])
    if response.status_code == 404 and "json" not in response.headers.get("content-type", ""):
        raise LiveUnavailable(
            f"its Jupyter server at {server.shown} has no real-time collaboration ({INSTALL})"
        )
    raise LiveUnavailable(
        f"its Jupyter server at {server.shown} did not open the notebook's document "
        f"(HTTP {response.status_code})"
    )
