"""JupyterLab servers and Debian's Chromium for the browser tests.

Needs Debian's ``chromium`` (``apt-get install -y chromium``) and the ``browser`` extra
(``pip install -e '.[browser]'``: jupyterlab, playwright, jupyter-collaboration); a test
module calls :func:`require_browser` and is skipped when either is missing. Playwright
drives the system Chromium through ``executable_path``, so no browser download is needed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import nbformat
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def require_browser() -> Any:
    """Playwright's sync API; skips the calling test module (or fixture) when Debian's
    chromium or the ``browser`` extra is missing."""
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)", True)
    pytest.importorskip("jupyterlab", reason="pip install -e '.[browser]'")
    return pytest.importorskip("playwright.sync_api", reason="pip install -e '.[browser]'")


KERNEL_SETTINGS = "@jupyterlab/apputils-extension/kernels-settings.jupyterlab-settings"
NEWS_SETTINGS = "@jupyterlab/apputils-extension/notification.jupyterlab-settings"
AUTOSAVE_SETTINGS = "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings"
SCREENSHOTS_ENV = "AGENT_MAGICS_SCREENSHOTS"
SHUT_DOWN = """async () => {
  const xsrf = (document.cookie.match(/(?:^|; )_xsrf=([^;]*)/) || [])[1] || "";
  const config = document.getElementById("jupyter-config-data");
  const base = (config && JSON.parse(config.textContent).baseUrl) || "/";
  const kernels = await (await fetch(`${base}api/kernels`)).json();
  for (const k of kernels) {
    await fetch(`${base}api/kernels/${k.id}`, {method: "DELETE", headers: {"X-XSRFToken": xsrf}});
  }
  return (await (await fetch(`${base}api/kernels`)).json()).length;
}"""
"""Shut every kernel down through the server's API, as the page itself would."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Lab:
    """A JupyterLab server on 127.0.0.1 in a folder of its own: without a token at the
    root, or under ``prefix`` with ``token`` as Binder and JupyterHub serve a person's
    (:attr:`url` holds the prefix; a page opened with :meth:`page_url` logs in).
    ``env`` changes the environment the server and its kernels inherit (``None``
    removes a variable); ``settings`` are more of JupyterLab's settings files (a
    plugin's file and what it holds). The news prompt is off: it would cover the page."""

    def __init__(
        self,
        root: Path,
        comms_over_subshells: str = "perCommTarget",
        *,
        prefix: str = "/",
        token: str = "",
        env: Mapping[str, str | None] | None = None,
        settings: Mapping[str, object] | None = None,
    ) -> None:
        self.prefix, self.token = prefix, token
        self.notebooks = root / "notebooks"
        self.notebooks.mkdir()
        folder = root / "settings"
        files = {
            KERNEL_SETTINGS: {"commsOverSubshells": comms_over_subshells},
            NEWS_SETTINGS: {"fetchNews": "false"},
            **(settings or {}),
        }
        for plugin, values in files.items():
            (folder / plugin).parent.mkdir(parents=True, exist_ok=True)
            (folder / plugin).write_text(json.dumps(values))
        changed = env or {}
        inherited = {k: v for k, v in os.environ.items() if changed.get(k, v) is not None}
        server_env = dict(
            inherited | {k: v for k, v in changed.items() if v is not None},
            JUPYTER_CONFIG_DIR=str(root / "config"),
            JUPYTER_RUNTIME_DIR=str(root / "runtime"),
            JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"),
            JUPYTERLAB_SETTINGS_DIR=str(folder),
        )
        self.port = free_port()
        argv = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.base_url={prefix}",
            "--ServerApp.password=",
            f"--ServerApp.root_dir={self.notebooks}",
        ]
        self.comms_over_subshells = comms_over_subshells
        self.log = (root / "lab.log").open("w")
        self.process = subprocess.Popen(  # in root: the collaboration server keeps its store there
            argv, env=server_env, cwd=root, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                self.port = _listening_port(root / "runtime", self.port)
                urllib.request.urlopen(self.page_url("api/status"), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.close()
                    raise RuntimeError((root / "lab.log").read_text()) from None
                time.sleep(0.2)

    def setting(self, plugin: str, key: str) -> Any:
        with urllib.request.urlopen(self.page_url(f"lab/api/settings/{plugin}"), timeout=10) as r:
            return json.loads(r.read())["settings"].get(key)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.prefix.rstrip('/')}"

    def page_url(self, path: str) -> str:
        """``path`` under the server's prefix, with the token when it has one."""
        return f"{self.url}/{path}" + (f"?token={self.token}" if self.token else "")

    def close(self) -> None:
        stop_server(self.process, self.log)

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def python_notebook(*sources: str) -> Any:
    """A notebook of these code cells for JupyterLab's ``python3`` kernel."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    return nb


def open_notebook(page: Any, lab: Lab, name: str) -> None:
    """Open ``name`` in the page and wait until its kernel is idle."""
    page.goto(lab.page_url(f"lab/tree/{name}"))
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=90_000)


def run_all(page: Any) -> None:
    """Run > Run All Cells from JupyterLab's menu, as a person does."""
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.keyboard.press("Escape")
    page.get_by_text("Run", exact=True).first.click()
    page.get_by_text("Run All Cells", exact=True).click()


def read_when_saved(page: Any, path: Path, ready: Callable[[Any], bool], tries: int = 300) -> Any:
    """The notebook at ``path`` once ``ready(nb)`` holds, read every 100 ms. The server
    writes the file in place, so a read can meet it empty or half written: that read is
    taken as "not yet"."""
    for _ in range(tries):
        try:
            nb = nbformat.read(path, as_version=4)
        except (nbformat.reader.NotJSONError, ValueError):  # read while the server wrote it
            nb = None
        if nb is not None and ready(nb):
            return nb
        page.wait_for_timeout(100)
    raise AssertionError(f"{path.name} was not saved as expected")


def keep_screenshot(page: Any, shot: Path) -> None:
    """Save the whole page to ``shot``, and a copy to ``$AGENT_MAGICS_SCREENSHOTS`` when
    that is set (to look at what the test saw)."""
    page.screenshot(path=str(shot), full_page=True)
    folder = os.environ.get(SCREENSHOTS_ENV)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / shot.name)


def _listening_port(runtime: Path, chosen: int) -> int:
    """The port the server says it listens on (it moves on when ``chosen`` was taken
    meanwhile); ``chosen`` until it has said so."""
    for info in runtime.glob("jpserver-*.json"):
        try:
            return int(json.loads(info.read_text())["port"])
        except (ValueError, KeyError):
            break  # being written
    return chosen


def stop_server(process: subprocess.Popen[bytes], log: Any) -> None:
    """Stop a Jupyter server started for a test (killed after 15 s) and close its log."""
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()
