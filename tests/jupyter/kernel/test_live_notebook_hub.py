"""Live notebook edits on a JupyterHub single-user server, as JupyterHub spawns it.

The server is the real ``jupyterhub-singleuser`` (the ``jupyterhub`` package's own
server, identity provider and authorizer) with jupyter-collaboration, started with the
environment a hub's spawner gives it (``JUPYTERHUB_SERVICE_PREFIX``,
``JUPYTERHUB_API_TOKEN``, ``JUPYTERHUB_API_URL``, ...). The hub itself is a stand-in on
127.0.0.1 that answers what the single-user server asks of it: who a token belongs to
(``GET /hub/api/user``, with the scopes a real hub grants a server's own token:
``access:servers!server=<name>/``), its version and the activity reports. A full hub
also needs configurable-http-proxy (npm) for the person's browser; the kernel never goes
through that proxy (it talks to its server at the URL in the server's runtime file), so
the path a turn's notebook calls take is the real one.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agent_magics.jupyter.kernel.live_notebook import PARENT_PID_ENV, find_server
from agent_magics.testing import ScriptedResponsesServer, Turn, function_call
from agent_magics.testing import message as say
from agent_magics.tools.handlers.read_notebook import FROM_FILE_AGAIN
from tests.helpers.browser import free_port
from tests.helpers.jupyter_server import (
    ServerKernel,
    StartedServer,
    live_sources,
    read_and_insert,
    serve_until_done,
    turns_done,
    write_notebook,
)
from tests.helpers.kernels import agent_cell

USER = "someone"
PREFIX = f"/user/{USER}/"
API_TOKEN = "hub-server-token-8d2e"  # the token the hub gives the person's server
SCOPES = [f"access:servers!server={USER}/", f"users:activity!user={USER}"]


class StandInHub:
    """The hub's API, as far as a single-user server asks it: a token's owner and scopes
    (403 for a token it does not know, as the hub answers), its version, activity."""

    def __init__(self) -> None:
        self.checked: list[str] = []  # the tokens the server asked about, in order
        self.valid = {API_TOKEN}
        hub = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def answer(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-JupyterHub-Version", _hub_version())
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/hub/api":
                    return self.answer(200, {"version": _hub_version()})
                if self.path == "/hub/api/user":
                    token = self.headers.get("Authorization", "").removeprefix("token ")
                    hub.checked.append(token)
                    if token not in hub.valid:
                        return self.answer(403, {"status": 403, "message": "Forbidden"})
                    return self.answer(200, {"kind": "user", "name": USER, "admin": False,
                                             "groups": [], "server": PREFIX,
                                             "scopes": SCOPES, "session_id": None})  # fmt: skip
                self.answer(404, {"status": 404, "message": "Not Found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                if self.path == f"/hub/api/users/{USER}/activity":
                    return self.answer(200, {})
                self.answer(404, {"status": 404, "message": "Not Found"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.api_url = f"http://127.0.0.1:{self.server.server_address[1]}/hub/api"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _hub_version() -> str:
    from importlib.metadata import version

    return version("jupyterhub")


class SingleUser(StartedServer):
    """``jupyterhub-singleuser`` in ``project`` with a spawner's environment."""

    token = API_TOKEN

    def __init__(self, tmp_path: Path, project: Path, hub: StandInHub) -> None:
        super().__init__(tmp_path, project)
        port = free_port()
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(self.runtime),
                   JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
                   JUPYTERHUB_API_TOKEN=API_TOKEN, JUPYTERHUB_API_URL=hub.api_url,
                   JUPYTERHUB_ACTIVITY_URL=f"{hub.api_url}/users/{USER}/activity",
                   JUPYTERHUB_CLIENT_ID=f"jupyterhub-user-{USER}", JUPYTERHUB_USER=USER,
                   JUPYTERHUB_SERVER_NAME="", JUPYTERHUB_BASE_URL="/", JUPYTERHUB_HOST="",
                   JUPYTERHUB_SERVICE_PREFIX=PREFIX,
                   JUPYTERHUB_SERVICE_URL=f"http://127.0.0.1:{port}{PREFIX}",
                   JUPYTERHUB_OAUTH_CALLBACK_URL=f"{PREFIX}oauth_callback",
                   JUPYTERHUB_OAUTH_SCOPES=json.dumps(SCOPES[:1]),
                   JUPYTERHUB_OAUTH_ACCESS_SCOPES=json.dumps(SCOPES[:1]),
                   JUPYTERHUB_ROOT_DIR=str(project))  # fmt: skip
        # the server keeps the hub's answers 5 minutes by default; 1 s here, so that the
        # test waits less for a token the hub revokes to be refused (see status_becomes)
        argv = [sys.executable, "-m", "jupyterhub.singleuser", "--allow-root",
                "--HubOAuth.cache_max_age=1"]  # fmt: skip
        self.launch(argv, env, self._up, within=90)

    def _up(self) -> str | None:
        server = find_server({PARENT_PID_ENV: str(self.process.pid)}, str(self.runtime), None)
        return str(server.url) if server is not None and _status(server.url) == 200 else None

    def status_becomes(self, status: int) -> None:
        """Wait until the server answers the token with ``status`` (once the hub's
        previous answer has left the server's cache)."""
        deadline = time.monotonic() + 30
        while _status(self.url) != status:
            assert time.monotonic() < deadline, f"the server never answered {status}"
            time.sleep(0.2)


def _status(url: str) -> int:
    """The HTTP status the server's API answers the server's token with; 0 if none."""
    request = urllib.request.Request(
        f"{url}api/sessions", headers={"Authorization": f"token {API_TOKEN}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


@pytest.fixture
def singleuser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SingleUser]:
    pytest.importorskip("jupyterhub.singleuser", reason="pip install jupyterhub")
    pytest.importorskip("jupyter_server_ydoc", reason="pip install -e '.[browser]'")
    folder = tmp_path / "project"
    folder.mkdir()
    write_notebook(folder / "a.ipynb")
    hub = StandInHub()
    try:
        server = SingleUser(tmp_path, folder, hub)
    except BaseException:
        hub.close()
        raise
    server.hub = hub  # type: ignore[attr-defined]
    try:
        yield from serve_until_done(server, monkeypatch)
    finally:
        hub.close()


@pytest.mark.slow
async def test_a_turn_edits_the_open_notebook_on_a_jupyterhub_single_user_server(
    singleuser: SingleUser,
) -> None:
    """The kernel finds its single-user server under the prefix on its own and the server
    checks the kernel's token with the hub: while the hub refuses it, reads come from the
    file (why said once) and edits are not made; once the hub accepts it, the cells go
    into the live document."""
    pytest.importorskip("pycrdt", reason="pip install -e '.[browser]'")
    hub: StandInHub = singleuser.hub  # type: ignore[attr-defined]
    nb = singleuser.project / "a.ipynb"
    kernel = ServerKernel(singleuser.start_kernel("a.ipynb"), singleuser.project)
    refused = {"path": "a.ipynb", "cell_id": "one", "edit_mode": "insert",
               "cell_type": "code", "new_source": "lost = 0"}  # fmt: skip
    script: list[Turn] = [[function_call("read_notebook", {"path": "a.ipynb"}, f"r{n}")]
                          for n in (1, 2)]  # fmt: skip
    script += [[function_call("edit_notebook", refused, "e0")], [say("turn 1 done")]]
    script += read_and_insert(5, "found = 1")
    try:
        kernel.run("%load_ext agent_magics")
        with ScriptedResponsesServer(script) as model:
            hub.valid.clear()  # the hub no longer accepts the server's token
            singleuser.status_becomes(403)
            kernel.run(agent_cell(model.base_url, "-a never", "read it twice"), timeout=120)
            kernel.wait_for(lambda: turns_done(kernel) == 1, timeout=90)
            hub.valid.add(API_TOKEN)
            singleuser.status_becomes(200)
            kernel.run(agent_cell(model.base_url, "-a never", "add a cell"), timeout=120)
            kernel.wait_for(lambda: turns_done(kernel) == 2, timeout=90)
            live = await live_sources(singleuser)
            shown = " ".join(kernel.html_values())
            sent = json.dumps(model.requests)
    finally:
        kernel.close()
    first, second = model.outputs(1)["r1"], model.outputs(2)["r2"]
    assert "(read from the file: unsaved edits in the editor are not shown, " in first, first
    assert f"{PREFIX.rstrip('/')} refused the kernel's token)" in first, first
    assert FROM_FILE_AGAIN in second and "refused" not in second, second
    assert model.outputs(3)["e0"].startswith(f"The notebook was not changed: {nb} is open")
    read, edit = model.outputs(5)["r5"], model.outputs(6)["e5"]
    assert "(read from the editor's document, unsaved edits included)" in read, read
    assert edit.endswith(f"in {nb}, the notebook open in the user's editor"), edit
    assert live == ["x = 1", "found = 1", "# Notes"]
    assert API_TOKEN in hub.checked  # the server asked the hub whose token it was
    assert API_TOKEN not in sent and API_TOKEN not in shown
    log = (singleuser.project.parent / "server.log").read_text()
    assert API_TOKEN not in log
