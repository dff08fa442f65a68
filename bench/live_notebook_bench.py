"""Live notebook calls against jupyter-mcp-server 2.2.4 on the same Jupyter server.

One ``jupyter server`` with jupyter-collaboration on 127.0.0.1 (a token, a notebook of
20 cells, a kernel started for it through a session), then, interleaved on one event
loop, each side's call as the model waits for it, in rounds at 20, 200 and 1,000 cells
(the same notebook, grown between sizes; before each round the cells the last one
inserted are deleted, so every round sees its size):

- ours: ``read_notebook``, ``edit_notebook`` (insert a cell, approved) and ``run_cell``
  (run cell ``c1``, approved, its outputs written into the live document) through their
  handlers with the kernel's bridge to the open notebook (``KernelLiveNotebook``), as the
  router calls them in the kernel (run_cell's code runs in an IPython shell of this
  process, as it runs in the kernel's own);
- the peer: its MCP tools ``read_notebook``, ``insert_cell`` and ``execute_cell`` over its
  stdio transport (an MCP client session in this process), its notebook enrolled once
  with ``use_notebook`` on the same kernel (where execute_cell runs the cell).

The peer lives in a venv of its own (its pins would disturb the project's):

    python -m venv .venv/peers/jupyter-mcp-server
    .venv/peers/jupyter-mcp-server/bin/pip install jupyter-mcp-server==2.2.4

Without it the rows are skipped, and the note says this.

    .venv/bin/python bench/live_notebook_bench.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT / ".venv" / "peers" / "jupyter-mcp-server" / "bin" / "jupyter-mcp-server"
SETUP = (
    "python -m venv .venv/peers/jupyter-mcp-server && "
    ".venv/peers/jupyter-mcp-server/bin/pip install jupyter-mcp-server==2.2.4"
)
TOKEN = "bench-token"
CELLS = 20
SIZES = (20, 200, 1000)
"""The notebook's cells in each round of calls (it is grown, then trimmed back to it)."""
NAMES = ("live_read_notebook_vs_peer", "live_insert_cell_vs_peer", "live_run_cell_vs_peer")
TARGETS = {"live_read_notebook_vs_peer": "<= 1.0", "live_insert_cell_vs_peer": "<= 0.5",
           "live_run_cell_vs_peer": "<= 1.0"}  # fmt: skip


def _notebook(path: Path) -> None:
    import nbformat

    v4: Any = nbformat.v4
    cells = [v4.new_code_cell(f"x{i} = {i}\nprint(x{i})") for i in range(CELLS)]
    for i, cell in enumerate(cells):
        cell.id = f"c{i}"
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(path))  # type: ignore[no-untyped-call]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server:
    """jupyter server + jupyter-collaboration in ``root``, the notebook's kernel started."""

    def __init__(self, root: Path) -> None:
        self.notebooks = root / "notebooks"
        self.notebooks.mkdir()
        _notebook(self.notebooks / "a.ipynb")
        self.runtime = root / "runtime"
        os.environ["JUPYTER_RUNTIME_DIR"] = str(self.runtime)  # where the kernel finds it
        self.port = _free_port()
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(self.runtime),
                   JUPYTER_CONFIG_DIR=str(root / "config"))  # fmt: skip
        argv = [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
                f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={self.notebooks}",
                "--YDocExtension.document_save_delay=60"]  # fmt: skip
        self.log = (root / "server.log").open("w")
        self.process = subprocess.Popen(argv, env=env, cwd=root, stdout=self.log,
                                        stderr=subprocess.STDOUT)  # fmt: skip
        self.url = f"http://127.0.0.1:{self.port}/"
        deadline = time.monotonic() + 60
        while True:
            try:
                self._api("GET", "api/status")
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.close()
                    raise RuntimeError("the Jupyter server did not start") from None
                time.sleep(0.2)
        body = {"path": "a.ipynb", "type": "notebook", "kernel": {"name": "python3"}}
        self.kernel = str(self._api("POST", "api/sessions", body)["kernel"]["id"])

    def _api(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data, method=method,
                                         headers={"Authorization": f"token {TOKEN}"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class _Ours:
    """Our two tools, with the kernel's bridge to the open notebook (one per session)."""

    def __init__(self, server: _Server) -> None:
        from agent_magics.jupyter.kernel.live_notebook import PARENT_PID_ENV, KernelLiveNotebook
        from agent_magics.protocol.approval import ReviewDecision
        from agent_magics.tools.context import SessionServices
        from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
        from agent_magics.tools.handlers.read_notebook import ReadNotebookHandler
        from agent_magics.tools.notebook.document import SESSION_ENV

        async def approve(request: Any) -> ReviewDecision:
            return ReviewDecision.APPROVED

        env = {SESSION_ENV: str(server.notebooks / "a.ipynb"),
               PARENT_PID_ENV: str(server.process.pid)}  # fmt: skip
        self.live = KernelLiveNotebook(None, env, server.kernel, keep=True)
        from IPython.core.interactiveshell import InteractiveShell

        from agent_magics.jupyter.kernel.run_cell import RunCellHandler

        self.read_handler = ReadNotebookHandler(self.live)
        self.edit_handler = EditNotebookHandler(self.live)
        self.run_handler = RunCellHandler(InteractiveShell.instance(), self.live)
        self.services = SessionServices(approver=approve)
        self.cwd = server.notebooks

    async def _call(self, handler: Any, args: dict[str, Any]) -> str:
        from agent_magics.tools.context import FunctionPayload, ToolInvocation, TurnContext

        payload = FunctionPayload(json.dumps(args))
        inv = ToolInvocation("c", handler.name, payload, TurnContext(cwd=self.cwd), self.services)
        out = await handler.handle(inv)
        if not out.success:
            raise RuntimeError(f"our {handler.name} failed: {out.content}")
        return str(out.content)

    async def read(self) -> str:
        return await self._call(self.read_handler, {"path": "a.ipynb"})

    async def insert(self) -> str:
        args = {"path": "a.ipynb", "cell_id": "c0", "edit_mode": "insert",
                "cell_type": "code", "new_source": "y = 1"}  # fmt: skip
        return await self._call(self.edit_handler, args)

    async def run(self) -> str:
        return await self._call(self.run_handler, {"cell_id": "c1"})

    async def close(self) -> None:
        from agent_magics.tools.notebook.document import close_live_notebooks

        await close_live_notebooks(self.services)


async def _peer_session(server: _Server, stack: Any) -> Any:
    """An MCP client session with the peer over stdio, its notebook in use."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    url = server.url.rstrip("/")
    env = dict(os.environ, JUPYTER_URL=url, JUPYTER_TOKEN=TOKEN, DOCUMENT_URL=url,
               DOCUMENT_TOKEN=TOKEN, CODE_SANDBOX_URL=url, CODE_SANDBOX_TOKEN=TOKEN)  # fmt: skip
    params = StdioServerParameters(command=str(PEER), args=["start", "--transport", "stdio"],
                                   env=env, cwd=str(server.notebooks))  # fmt: skip
    errlog = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115 (closed by the stack)
    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    got = await session.call_tool(
        "use_notebook",
        {"notebook_name": "a", "notebook_path": "a.ipynb", "kernel_id": server.kernel},
    )
    if got.is_error:
        raise RuntimeError(f"the peer's use_notebook failed: {got.content}")
    return session


async def _peer_call(session: Any, name: str, args: dict[str, Any]) -> None:
    got = await session.call_tool(name, args)
    if got.is_error:
        raise RuntimeError(f"the peer's {name} failed: {got.content}")


async def _resize(ours: _Ours, size: int) -> None:
    """Bring the notebook to ``size`` cells ``c0..``, outside the timed calls: cells
    either side inserted are deleted, the missing ones appended (one change each)."""
    doc = await ours.live.open()
    base = {f"c{i}" for i in range(size)}

    def edit(nb: Any) -> None:
        cells = nb.ycells
        for at in reversed(range(len(cells))):
            if str(cells[at].get("id")) not in base:
                del cells[at]
        for i in range(len(cells), size):
            cell = {"cell_type": "code", "id": f"c{i}", "metadata": {}, "outputs": [],
                    "execution_count": None, "source": f"x{i} = {i}\nprint(x{i})"}  # fmt: skip
            cells.append(nb.create_ycell(cell))

    try:
        await doc.room.change(edit, 60)
    finally:
        await doc.close()


Times = dict[str, list[float]]


async def _measure(server: _Server, runs: int) -> dict[int, Times]:
    from contextlib import AsyncExitStack

    found: dict[int, Times] = {}
    ours = _Ours(server)
    async with AsyncExitStack() as stack:
        peer = await _peer_session(server, stack)
        read = {"notebook_name": "a", "limit": 0}
        run = {"cell_id": "c1", "stream": False}
        insert = {
            "cell_index": 1,
            "cell_type": "code",
            "cell_source": "y = 1",
            "notebook_name": "a",
        }
        sides = {
            "ours_read": ours.read,
            "peer_read": lambda: _peer_call(peer, "read_notebook", read),
            "ours_insert": ours.insert,
            "peer_insert": lambda: _peer_call(peer, "insert_cell", insert),
            "ours_run": ours.run,
            "peer_run": lambda: _peer_call(peer, "execute_cell", run),
        }
        for size in SIZES:
            times: Times = {name: [] for name in sides}
            for warm_up in (True, *([False] * runs)):
                await _resize(ours, size)  # each round at ``size`` cells
                await asyncio.sleep(0.05)  # the peer's copy has the change too
                for name, call in sides.items():
                    start = time.perf_counter()
                    await call()
                    if not warm_up:
                        times[name].append(time.perf_counter() - start)
            found[size] = times
        await ours.close()
    return found


def bench_live_notebook(quick: bool) -> list[dict[str, Any]]:
    """Rows ``live_read_notebook_vs_peer_<cells>``, ``live_insert_cell_vs_peer_<cells>``
    and ``live_run_cell_vs_peer_<cells>`` for each size in :data:`SIZES`."""
    names = [f"{name}_{size}" for size in SIZES for name in NAMES]
    if not PEER.exists():
        note = f"skipped: jupyter-mcp-server 2.2.4 is not set up (from the repository: {SETUP})"
        return [{"name": n, "target": TARGETS[n.rsplit("_", 1)[0]], "note": note} for n in names]
    if shutil.which("jupyter") is None and not (Path(sys.executable).parent / "jupyter").exists():
        note = "skipped: no jupyter server in this environment (the browser extra)"
        return [{"name": n, "target": TARGETS[n.rsplit("_", 1)[0]], "note": note} for n in names]
    runs = 7 if quick else 31
    old_runtime = os.environ.get("JUPYTER_RUNTIME_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        server = _Server(Path(tmp))
        try:
            found = asyncio.run(_measure(server, runs))
        finally:
            server.close()
            if old_runtime is None:
                os.environ.pop("JUPYTER_RUNTIME_DIR", None)
            else:
                os.environ["JUPYTER_RUNTIME_DIR"] = old_runtime
    rows = []
    for size, times in found.items():
        for name, side in zip(NAMES, ("read", "insert", "run"), strict=True):
            rows.append(_row(f"{name}_{size}", times[f"ours_{side}"], times[f"peer_{side}"],
                             f"{runs} runs interleaved, a {size}-cell notebook"))  # fmt: skip
    return rows


def _row(name: str, ours: list[float], peer: list[float], how: str) -> dict[str, Any]:
    ratio = statistics.median(o / p for o, p in zip(ours, peer, strict=True))
    note = (f"ours min/median/max {min(ours) * 1e3:.1f}/{statistics.median(ours) * 1e3:.1f}/"
            f"{max(ours) * 1e3:.1f} ms, peer {min(peer) * 1e3:.1f}/"
            f"{statistics.median(peer) * 1e3:.1f}/{max(peer) * 1e3:.1f} ms, {how}")  # fmt: skip
    return {"name": name, "value": statistics.median(ours) * 1e3, "unit": "ms", "ratio": ratio,
            "baseline": statistics.median(peer) * 1e3, "target": TARGETS[name.rsplit("_", 1)[0]],
            "note": note}  # fmt: skip


if __name__ == "__main__":
    for row in bench_live_notebook("--quick" in sys.argv):
        print(json.dumps(row))
