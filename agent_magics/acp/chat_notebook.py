"""The notebook a chat belongs to, and its kernel's tools, reached through the server.

A chat panel in JupyterLab (jupyter-ai) starts ``agent-magics acp`` as a process of the
Jupyter server, outside every kernel. When the chat belongs to a notebook, the kernel
tools (run_python, run_cell, list_variables, inspect_variable) act on that notebook's
kernel and the notebook tools (read_notebook, edit_notebook) on its live document, all
through the server: its sessions API finds the kernel the server runs for the notebook,
its kernel websocket carries each call (:mod:`.kernel_channel`), and the kernel's own
handlers do the work (:mod:`agent_magics.jupyter.kernel.bridge`), under the chat
session's approvals and the notebook's teacher's policy (:mod:`.kernel_tools`). With no
notebook, or no kernel with ``agent_magics`` for it, none of these tools is offered.

Which server: the process that started this one. Its runtime file
(``jpserver-<pid>.json`` in Jupyter's runtime folder) gives the URL and the token, and
is believed only when that process listens where the URL points
(:mod:`agent_magics.server.parent_server`): anyone who can write the runtime folder
could write such a file. A URL or token from the environment is not taken: any program
that started this process could name any server with it, and the token would go there.
Started from a terminal or an editor (Zed), no server is found and nothing is offered.

The token is a secret: :meth:`ChatNotebook.find` registers it with the redactor
(:func:`agent_magics.agent.redaction.register_secrets`), so no tool output or event
shows it, and :meth:`ChatNotebook.secrets` gives it to whoever keeps others.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.acp.kernel_channel import KernelChannel, _BridgeFailed, _KernelGone
from agent_magics.acp.kernel_document import BridgedNotebook
from agent_magics.acp.kernel_tools import Bridged, KernelTool, Policy
from agent_magics.agent.redaction import register_secrets
from agent_magics.errors import UserError
from agent_magics.server.parent_server import listening, served_by
from agent_magics.tools.notebook.files import notebook_files
from agent_magics.tools.registry import ToolHandler
from agent_magics.tools.sandbox.jupyter import runtime_dir
from agent_magics.tools.sandbox.roots import protect_kernel

if TYPE_CHECKING:
    import httpx

ASK_TIMEOUT_S = 10.0
MAX_RUNTIME_FILE_BYTES = 64 * 1024
INSTALL = "pip install agent_magics in the kernel's environment, then restart the kernel"
UPGRADE = "pip install -U agent_magics in the kernel's environment, then restart the kernel"


@dataclass(frozen=True)
class ChatServer:
    """The Jupyter server that started this process: ``url`` (checked, ends with
    ``/``), its token and its root folder."""

    url: str
    token: str = field(repr=False)  # a secret: never in a message or a log
    root: Path

    def headers(self) -> dict[str, str]:
        if self.token:
            return {"Authorization": f"token {self.token}"}
        xsrf = secrets.token_hex(16)  # a server without a token still checks XSRF
        return {"Cookie": f"_xsrf={xsrf}", "X-XSRFToken": xsrf}


def parent_server(pid: int, runtime: Path) -> ChatServer | None:
    """The server process ``pid`` runs, when its runtime file in ``runtime`` names a URL
    where it listens (see the module's docstring); None otherwise."""
    try:
        with open(runtime / f"jpserver-{pid}.json", encoding="utf-8") as f:
            info = json.loads(f.read(MAX_RUNTIME_FILE_BYTES))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("url"), str):
        return None
    sockets = listening(pid)
    if not sockets:  # none, or no /proc to tell: not believed
        return None
    url = served_by(info["url"] if info["url"].endswith("/") else info["url"] + "/", sockets)
    root = info.get("root_dir") or info.get("notebook_dir")
    if url is None or not isinstance(root, str) or not root:
        return None
    return ChatServer(url, str(info.get("token") or ""), Path(root))


ENVIRONMENT_MARKS = ("pyvenv.cfg", "conda-meta")
"""What makes a folder a Python environment (a venv, a conda environment)."""
ENVIRONMENT_DEPTH = 2
SKIPPED = frozenset({".git", "node_modules", "__pycache__", ".ipynb_checkpoints"})


def environments_in(folders: list[Path], depth: int = ENVIRONMENT_DEPTH) -> list[Path]:
    """The Python environments in ``folders`` and their subfolders down to ``depth``: a
    kernel of the server may run from one (a project's ``.venv``), and what is written
    there runs in that kernel, outside the sandbox. They are kept read-only from the
    chat's start, before any notebook is attached and its kernel names its own."""
    found: list[Path] = []
    level = [f for f in folders if f.is_dir()]
    for _ in range(depth + 1):
        deeper: list[Path] = []
        for folder in level:
            if any((folder / mark).exists() for mark in ENVIRONMENT_MARKS):
                found.append(folder)
                continue
            try:
                deeper += [p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()
                           and p.name not in SKIPPED]  # fmt: skip
            except OSError:
                continue
        level = deeper
    return list(dict.fromkeys(found))


class ChatNotebook:
    """The notebook a chat belongs to, reached through the Jupyter server that started
    this process. A call of its tools made while the person's own cell runs waits until
    that cell ends (the kernel runs one request at a time)."""

    def __init__(self, server: ChatServer, cwd: Path) -> None:
        self.server = server
        self.cwd = cwd
        self.path: Path | None = None  # the notebook attached, absolute
        self.policy = Policy()
        self._channel: KernelChannel | None = None
        self._tools: list[ToolHandler] = []

    @classmethod
    def find(cls, cwd: Path, server_pid: int | None = None) -> ChatNotebook | None:
        """The chat's server: the parent process (``server_pid``: another process, held
        to the same check), or None when no Jupyter server started this process."""
        server = parent_server(os.getppid() if server_pid is None else server_pid, runtime_dir())
        if server is None:
            return None
        if server.token:
            register_secrets(server.token)
        protect_kernel(environments_in([server.root, cwd]))
        return cls(server, cwd)

    def secrets(self) -> tuple[str, ...]:
        """What must never reach the model, an event or a log: the server's token (the
        kernel's signing key never comes here; the server signs the messages)."""
        return (self.server.token,) if self.server.token else ()

    def tools(self) -> list[ToolHandler]:
        """The tools of the notebook attached, as its policy offers them now (a
        session's ``extra_tools``); none before :meth:`attach`."""
        return [t for t in self._tools if t.name in self.policy.offered]

    async def attach(self, notebook: Path) -> str:
        """Act on ``notebook`` (absolute, or relative to the working folder or the
        server's root) and its kernel from now on; one sentence for the person says so.
        Raises :class:`UserError` when no kernel the server runs for it has agent_magics."""
        target = self._resolve(notebook)
        shown = self._shown(target)
        kernel = await self._kernel_of(target, shown)
        await self.aclose()
        untrusted = [str(self.server.root), str(self.cwd), str(target.parent)]
        channel = KernelChannel(self.server.url, kernel, self.server.headers(), untrusted)
        bridged = Bridged(channel, self.policy, shown)
        try:
            await channel.connect()
            answer = await channel.call({"op": "tools"})
        except _KernelGone as exc:
            await channel.aclose()
            raise UserError(f"The kernel of {shown} cannot be reached ({exc.value}).") from None
        except _BridgeFailed as exc:
            await channel.aclose()
            raise UserError(_no_bridge(shown, exc)) from None
        self.policy.update(answer)
        paths = answer.get("code_paths")
        protect_kernel([p for p in paths if isinstance(p, str)] if isinstance(paths, list) else [])
        specs = answer.get("tools")
        kernel_tools: list[ToolHandler] = [KernelTool.from_wire(s, bridged)
                                           for s in specs if isinstance(s, dict)] \
            if isinstance(specs, list) else []  # fmt: skip
        self._channel, self.path = channel, target
        self._tools = [*kernel_tools, *_notebook_tools(BridgedNotebook(bridged, target), self)]
        if "run_python" in self.policy.offered:
            return f"run_python now runs in {shown}'s kernel."
        return f"The notebook tools now act on {shown} and its kernel."

    def kept_files(self) -> list[Path]:
        """The attached notebook's files, which no command or patch of the chat changes
        (its editor saves it, and its metadata holds the teacher's policy), as a session
        in the kernel keeps its own notebook (a session's ``kept``)."""
        return notebook_files(self.path)

    async def interrupt(self) -> None:
        """Interrupt the kernel while a call of the chat runs in it (the person's own
        cell is left alone); a call still waiting for its turn is interrupted when it
        starts."""
        if self._channel is not None:
            await self._channel.interrupt()

    async def aclose(self) -> None:
        """Leave the notebook: its tools are no longer offered."""
        channel, self._channel, self._tools, self.path = self._channel, None, [], None
        if channel is not None:
            await channel.aclose()

    def _resolve(self, notebook: Path) -> Path:
        if notebook.is_absolute():
            return notebook
        here = self.cwd / notebook
        return here if here.exists() else self.server.root / notebook

    def _shown(self, target: Path) -> str:
        real, root = os.path.realpath(target), os.path.realpath(self.server.root)
        inside = real.startswith(root.rstrip(os.sep) + os.sep)
        return Path(os.path.relpath(real, root)).as_posix() if inside else str(target)

    async def _kernel_of(self, target: Path, shown: str) -> str:
        """The id of the kernel the server runs for the notebook ``target``."""
        import httpx

        from agent_magics.models.pool import tls_context

        where = self.server.url.rstrip("/")
        try:
            async with httpx.AsyncClient(
                headers=self.server.headers(),
                timeout=ASK_TIMEOUT_S,
                verify=tls_context(self.server.url),
            ) as client:
                response = await client.get(self.server.url + "api/sessions")
        except httpx.HTTPError as exc:
            raise UserError(f"The Jupyter server at {where} did not answer ({exc}).") from None
        sessions = _sessions(response, where)
        real = os.path.realpath(target)
        for session in sessions:
            path, kernel = session.get("path"), session.get("kernel")
            if not (isinstance(path, str) and path and isinstance(kernel, dict)):
                continue
            if os.path.realpath(self.server.root / path.lstrip("/")) == real and kernel.get("id"):
                return str(kernel["id"])
        raise UserError(
            f"No kernel is running for {shown} in the Jupyter server: open the notebook "
            "with a kernel, then try again."
        )


def _sessions(response: httpx.Response, where: str) -> list[dict[str, Any]]:
    if response.status_code in (401, 403):
        raise UserError(f"The Jupyter server at {where} refused this process's token.")
    try:
        listed = response.json() if response.status_code == 200 else None
    except ValueError:
        listed = None
    if not isinstance(listed, list):
        raise UserError(
            f"The Jupyter server at {where} did not list its sessions "
            f"(HTTP {response.status_code})."
        )
    return [s for s in listed if isinstance(s, dict)]


def _no_bridge(shown: str, exc: _BridgeFailed) -> str:
    if exc.name == "ModuleNotFoundError" and exc.value == "No module named 'agent_magics'":
        return f"The kernel of {shown} has no agent_magics: {INSTALL}."
    if exc.name == "ModuleNotFoundError" and "agent_magics.jupyter.kernel.bridge" in exc.value:
        return (
            f"The kernel of {shown} has an agent_magics too old to lend its tools to a "
            f"chat: {UPGRADE}."
        )
    return f"The kernel of {shown} could not load agent_magics ({exc.name}: {exc.value[:200]})."


def _notebook_tools(live: BridgedNotebook, chat: ChatNotebook) -> list[ToolHandler]:
    """read_notebook and edit_notebook on the live documents, held to the policy."""
    from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
    from agent_magics.tools.handlers.read_notebook import ReadNotebookHandler

    def solution_cells() -> str:
        return chat.policy.solution_cells

    return [ReadNotebookHandler(live, solution_cells), EditNotebookHandler(live, solution_cells)]
