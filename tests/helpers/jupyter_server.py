"""A real ``jupyter server`` with jupyter-collaboration on 127.0.0.1 for the live-notebook
tests, the kernel it starts for a notebook, the kernel's bridge to the notebook's room,
and calling a notebook tool as a turn does. Needs the ``browser`` extra
(``pip install -e '.[browser]'``); the tests that start a server skip without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import nbformat
import pytest
from jupyter_client.blocking.client import BlockingKernelClient

from agent_magics.errors import RespondToModel
from agent_magics.events import ApprovalRequested, Event
from agent_magics.jupyter.kernel.live_notebook import PARENT_PID_ENV, KernelLiveNotebook
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision
from agent_magics.testing import Turn, function_call
from agent_magics.testing import message as say
from agent_magics.tools.context import FunctionPayload, SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.notebook.document import SESSION_ENV
from agent_magics.tools.registry import ToolHandler
from tests.helpers.browser import free_port, stop_server
from tests.helpers.kernels import TURN_DONE, Kernel

v4: Any = nbformat.v4
nbf: Any = nbformat


def write_notebook(path: Path) -> None:
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell("x = 1", id="one"), v4.new_markdown_cell("# Notes", id="two")]
    nbf.write(nb, str(path))


INSERT = {"path": "a.ipynb", "cell_id": "one", "edit_mode": "insert", "cell_type": "code",
          "new_source": "y = x + 1"}  # fmt: skip
"""edit_notebook's arguments: a code cell below cell ``one`` of :func:`write_notebook`."""


@dataclass
class Recorder:
    events: list[Event]
    decision: ReviewDecision = ReviewDecision.APPROVED

    async def approve(self, request: ApprovalRequest) -> ReviewDecision:
        return self.decision

    @property
    def asked(self) -> int:
        return sum(isinstance(e, ApprovalRequested) for e in self.events)


async def call(
    handler: ToolHandler, cwd: Path, args: dict[str, Any], recorder: Recorder, **turn: Any
) -> tuple[Any, bool]:
    services = SessionServices(approver=recorder.approve, emit=recorder.events.append)
    inv = ToolInvocation(
        "c1",
        handler.name,
        FunctionPayload(json.dumps(args)),
        TurnContext(cwd=cwd, **turn),
        services,
    )
    try:
        out = await handler.handle(inv)
    except RespondToModel as exc:
        return exc.message, False
    return out.content, out.success


# -- the server, its kernel, the kernel's bridge -----------------------------------------


def runtime_info(runtime: Path) -> dict[str, Any] | None:
    """The ``jpserver-<pid>.json`` a server wrote in ``runtime``, once it is whole."""
    for found in runtime.glob("jpserver-*.json"):
        try:
            info: dict[str, Any] = json.loads(found.read_text())
            return info
        except ValueError:
            return None
    return None


class StartedServer:
    """A Jupyter server process a test starts in ``project`` (its log in
    ``tmp_path/server.log``, its runtime folder ``tmp_path/runtime``), the sessions it
    opens for notebooks, and its end. A subclass builds the command line and says when
    the server is up; ``url`` ends with ``/``."""

    url: str
    token: str

    def __init__(self, tmp_path: Path, project: Path) -> None:
        self.tmp_path, self.project, self.runtime = tmp_path, project, tmp_path / "runtime"

    def launch(
        self, argv: list[str], env: dict[str, str], up: Callable[[], str | None], within: float
    ) -> None:
        """Start ``argv`` and wait until ``up`` gives the server's URL (a server that ends
        or takes longer than ``within`` seconds fails the test with its log)."""
        self.log = (self.tmp_path / "server.log").open("w")
        self.process = subprocess.Popen(
            argv, env=env, cwd=self.project, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + within
        while (url := up()) is None:
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError((self.tmp_path / "server.log").read_text())
            time.sleep(0.2)
        self.url = url

    def start_kernel(self, notebook: str, name: str | None = None, kernel: str = "python3") -> Path:
        """A session for ``notebook``, as JupyterLab opens it (``name``: the session's
        name, the notebook's path unless a front end says otherwise), with the kernelspec
        ``kernel``; its kernel's connection file."""
        body = {"path": notebook, "name": notebook if name is None else name,
                "type": "notebook", "kernel": {"name": kernel}}  # fmt: skip
        request = urllib.request.Request(
            f"{self.url}api/sessions",
            json.dumps(body).encode(),
            {"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            kernel_id = json.loads(answer.read())["kernel"]["id"]
        return self.runtime / f"kernel-{kernel_id}.json"

    def close(self) -> None:
        stop_server(self.process, self.log)


class ProjectServer(StartedServer):
    """``jupyter server`` started in ``project`` (its root and its working folder, as
    ``cd project; jupyter lab`` does) on 127.0.0.1 with ``token``."""

    def __init__(self, tmp_path: Path, project: Path, token: str) -> None:
        super().__init__(tmp_path, project)
        self.token = token
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(self.runtime),
                   JUPYTER_CONFIG_DIR=str(tmp_path / "config"))  # fmt: skip
        argv = [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={free_port()}",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={project}"]  # fmt: skip
        self.launch(argv, env, self._up, within=60)

    def _up(self) -> str | None:
        info = runtime_info(self.runtime)
        if info is None:
            return None
        url = f"http://127.0.0.1:{info['port']}/"
        try:
            urllib.request.urlopen(f"{url}api/status?token={self.token}", timeout=5).close()
        except OSError:
            return None
        return url


Started = TypeVar("Started", bound=StartedServer)


def serve_until_done(server: Started, monkeypatch: pytest.MonkeyPatch) -> Iterator[Started]:
    """For a fixture: ``server``, found by the kernels it starts through
    ``JUPYTER_RUNTIME_DIR``, stopped after the test."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(server.runtime))
    try:
        yield server
    finally:
        server.close()


class Server:
    """``jupyter server`` on 127.0.0.1 with a token; its runtime folder in ``root``."""

    def __init__(self, root: Path, config: dict[str, Any] | None = None) -> None:
        pytest.importorskip("jupyter_server_ydoc", reason="pip install -e '.[browser]'")
        self.notebooks = root / "notebooks"
        self.notebooks.mkdir(parents=True)
        self.runtime = root / "runtime"
        self.port, self.token = free_port(), "live-test-token"
        (root / "config").mkdir()
        (root / "config" / "jupyter_server_config.json").write_text(json.dumps(config or {}))
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(self.runtime),
                   JUPYTER_CONFIG_DIR=str(root / "config"))  # fmt: skip
        argv = [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={self.notebooks}",
                # the server saves the shared document only after a minute: the file shows
                # whether the agent wrote it
                "--YDocExtension.document_save_delay=60"]  # fmt: skip
        self.log = (root / "server.log").open("w")
        self.process = subprocess.Popen(  # in root: the collaboration server keeps its store there
            argv, env=env, cwd=root, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 60
        while (info := self._info()) is None:
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError((root / "server.log").read_text())
            time.sleep(0.2)
        self.port = int(info["port"])  # a port taken meanwhile: the server took the next one
        url = f"http://127.0.0.1:{self.port}/api/status?token={self.token}"
        while True:  # the runtime file can come a moment before the server listens
            try:
                urllib.request.urlopen(url, timeout=10).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.close()
                    raise
                time.sleep(0.2)

    def _info(self) -> dict[str, Any] | None:
        return runtime_info(self.runtime)

    def close(self) -> None:
        stop_server(self.process, self.log)


@pytest.fixture(name="server")
def server_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """The ``server`` fixture of the modules that import it: a :class:`Server`, stopped
    after the test; kernels started by it find it through ``JUPYTER_RUNTIME_DIR``."""
    s = Server(tmp_path)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(s.runtime))
    try:
        yield s
    finally:
        s.close()


def kernel_side(server: Server) -> KernelLiveNotebook:
    """The kernel's bridge, as a kernel the server started finds it."""
    env = {SESSION_ENV: str(server.notebooks / "a.ipynb"), PARENT_PID_ENV: str(server.process.pid)}
    return KernelLiveNotebook(None, env)


class ServerKernel(Kernel):
    """The kernel the server started for the notebook, reached through its connection
    file (the server shuts it down)."""

    def __init__(self, connection_file: Path, cwd: Path) -> None:
        self.ws = cwd
        self.kc = self._connect(connection_file, time.monotonic() + 120)
        self.log: list[dict[str, Any]] = []
        self.states: dict[str, dict[str, Any]] = {}

    @staticmethod
    def _connect(connection_file: Path, deadline: float) -> BlockingKernelClient:
        """A client that has seen the kernel ready. The server picks the kernel's ports
        and closes them before the kernel binds them; under ``pytest -n auto`` another
        worker can take one in between, the kernel dies, and the server's restarter starts
        it again on new ports, rewriting the connection file. So a client that finds the
        kernel dead reads the file again and tries once more, until the deadline."""
        while not connection_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        while True:
            kc = BlockingKernelClient(connection_file=str(connection_file))
            kc.load_connection_file()
            kc.start_channels()
            try:
                kc.wait_for_ready(timeout=max(1.0, deadline - time.monotonic()))
                return kc
            except RuntimeError:
                kc.stop_channels()
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def close(self) -> None:
        self.kc.stop_channels()


def turns_done(kernel: Kernel) -> int:
    return sum(TURN_DONE in v for v in kernel.html_values())


def read_and_insert(n: int, source: str) -> list[Turn]:
    insert = dict(INSERT, new_source=source)
    return [
        [function_call("read_notebook", {"path": "a.ipynb"}, f"r{n}")],
        [function_call("edit_notebook", insert, f"e{n}")],
        [say(f"turn {n} done")],
    ]


async def live_sources(server: Any) -> list[str]:
    """The cells of the notebook's live document, as a peer of its room reads them."""
    env = {SESSION_ENV: str(server.project / "a.ipynb"), PARENT_PID_ENV: str(server.process.pid)}
    live = KernelLiveNotebook(None, env)
    doc = await live.open()
    try:
        return [str(c.source) for c in doc.notebook().cells]
    finally:
        await doc.close()
        if hasattr(live, "close"):  # a room kept between calls is left here
            await live.close()
