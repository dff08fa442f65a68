"""Which notebook's policy a kernel holds to, when a cell changes ``JPY_SESSION_NAME``
before ``%load_ext`` or a front end names the session ``""``: a real ``jupyter server``
on 127.0.0.1 with a token, the kernel it starts for ``course.ipynb`` through its REST
API (as JupyterLab opens a notebook), and a scripted model on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.jupyter_server import (
    ProjectServer,
    ServerKernel,
    serve_until_done,
    turns_done,
)
from tests.helpers.kernels import agent_cell

pytestmark = pytest.mark.slow

TOKEN = "own-notebook-token-7d2e"
POLICY_LINE = "policy:          Teacher's policy (this notebook's metadata): no run_python."


def write(path: Path, policy: dict[str, Any] | None) -> None:
    nb = nbformat.v4.new_notebook()
    if policy is not None:
        nb.metadata["agent_magics"] = policy
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(nb, path)


@pytest.fixture
def course(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProjectServer]:
    folder = home / "project"
    folder.mkdir()
    write(folder / "course.ipynb", {"run_python": False})
    write(folder / "other.ipynb", None)
    yield from serve_until_done(ProjectServer(home, folder, TOKEN), monkeypatch)


SET_BEFORE_LOAD = {
    "another notebook": "os.environ['JPY_SESSION_NAME'] = os.path.abspath('other.ipynb')",
    "removed": "del os.environ['JPY_SESSION_NAME']",
    "empty": "os.environ['JPY_SESSION_NAME'] = ''",
    "named '' by the front end": "",
}


def text_of(kernel: ServerKernel, code: str) -> str:
    return kernel.outputs_text(kernel.run(code))


@pytest.mark.parametrize("case", list(SET_BEFORE_LOAD))
def test_the_notebook_comes_from_the_servers_session_not_the_environment(
    case: str, course: ProjectServer
) -> None:
    named = "" if case == "named '' by the front end" else None
    kernel = ServerKernel(course.start_kernel("course.ipynb", named), course.project)
    calls = [
        function_call("run_python", {"code": "print(6 * 7)"}, "py"),
        function_call("read_notebook", {"path": "course.ipynb"}, "r1"),
        function_call("read_notebook", {"path": "other.ipynb"}, "r2"),
    ]
    script = [calls, [message("ok")]]
    try:
        change = f"import os\n{SET_BEFORE_LOAD[case]}\nos.environ.get('JPY_SESSION_NAME')"
        before = text_of(kernel, change)
        text_of(kernel, "%load_ext agent_magics")
        status = text_of(kernel, "%agent status")
        with ScriptedResponsesServer(script) as model:
            kernel.run(agent_cell(model.base_url, "", "Try python."), timeout=120)
            kernel.wait_for(lambda: turns_done(kernel) == 1, timeout=90)
            tools = {t.get("name") for body in model.requests for t in body.get("tools", [])}
            answered = model.outputs(1)
    finally:
        kernel.close()
    assert "course.ipynb" not in before  # the kernel's environment does not name it
    assert POLICY_LINE in status
    own = course.project / "course.ipynb"
    assert f"notebook:        {own} (named by the Jupyter server's session for this kernel)" in (
        status
    )
    assert "exec_command" in tools and "run_python" not in tools
    assert answered["py"] == "unsupported call: run_python"
    assert "(read from the editor's document, unsaved edits included)" in answered["r1"]
    assert "editor" not in answered["r2"].splitlines()[0]  # another notebook: its file
    assert TOKEN not in status


class FakeServer:
    """An HTTP server on 127.0.0.1 that lists the given kernel's session for another
    notebook, as a server someone named in the runtime folder would; it keeps the paths
    it was asked."""

    def __init__(self, kernel: str, notebook: str) -> None:
        answer = json.dumps([{"kernel": {"id": kernel}, "path": notebook}]).encode()
        self.asked: list[str] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake.asked.append(self.path)
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_server_file_someone_planted_in_the_runtime_folder_names_no_notebook(
    course: ProjectServer,
) -> None:
    """A command can write in the runtime folder where it lies in a writable root (here
    ``/tmp``; the home on Binder, under Landlock): a server file put there, listed first,
    that claims the real server's pid and lists this kernel for another notebook is not
    asked, since the kernel's parent does not listen at its URL."""
    connection = course.start_kernel("course.ipynb")
    kernel_id = connection.name[len("kernel-") : -len(".json")]
    fake = FakeServer(kernel_id, "other.ipynb")
    planted = course.runtime / "jpserver-1.json"  # before the real one, in name order
    info = {"url": fake.url, "token": "", "root_dir": str(course.project),
            "pid": course.process.pid}  # fmt: skip
    planted.write_text(json.dumps(info))
    kernel = ServerKernel(connection, course.project)
    try:
        text_of(kernel, "%load_ext agent_magics")
        status = text_of(kernel, "%agent status")
    finally:
        kernel.close()
        fake.close()
    assert POLICY_LINE in status
    own = course.project / "course.ipynb"
    assert f"notebook:        {own} (named by the Jupyter server's session for this kernel)" in (
        status
    )
    assert fake.asked == []
