"""A person's view: JupyterLab in headless Chromium, a real click on Approve.

Needs Debian's ``chromium`` (``apt-get install -y chromium``) and the ``browser`` extra
(``pip install -e '.[browser]'``: jupyterlab, playwright); skipped when either is
missing. Playwright drives the system Chromium through ``executable_path``, so no
browser download is needed. Runs with JupyterLab's comms over kernel subshells (the
default, with ipykernel 7 button clicks may arrive on another thread) and without.
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)", True)
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[browser]'")
pytest.importorskip("jupyterlab", reason="pip install -e '.[browser]'")

KERNEL_SETTINGS = "@jupyterlab/apputils-extension/kernels-settings.jupyterlab-settings"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Lab:
    """A JupyterLab server on 127.0.0.1 without a token, in a folder of its own."""

    def __init__(self, root: Path, comms_over_subshells: str) -> None:
        self.notebooks = root / "notebooks"
        self.notebooks.mkdir()
        settings = root / "settings"
        (settings / KERNEL_SETTINGS).parent.mkdir(parents=True)
        (settings / KERNEL_SETTINGS).write_text(
            json.dumps({"commsOverSubshells": comms_over_subshells})
        )
        env = dict(
            os.environ,
            JUPYTER_CONFIG_DIR=str(root / "config"),
            JUPYTER_RUNTIME_DIR=str(root / "runtime"),
            JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"),
            JUPYTERLAB_SETTINGS_DIR=str(settings),
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
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            f"--ServerApp.root_dir={self.notebooks}",
        ]
        self.comms_over_subshells = comms_over_subshells
        self.log = (root / "lab.log").open("w")
        self.process = subprocess.Popen(  # in root: the collaboration server keeps its store there
            argv, env=env, cwd=root, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/api/status", timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.close()
                    raise RuntimeError((root / "lab.log").read_text()) from None
                time.sleep(0.2)

    def setting(self, plugin: str, key: str) -> Any:
        with urllib.request.urlopen(f"{self.url}/lab/api/settings/{plugin}", timeout=10) as r:
            return json.loads(r.read())["settings"].get(key)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture(
    params=[
        pytest.param("perCommTarget", id="comms-over-subshells"),
        pytest.param("disabled", id="comms-on-the-main-shell"),
    ]
)
def lab(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lab]:
    server = Lab(tmp_path, request.param)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


def test_clicking_approve_in_jupyterlab_runs_the_command(lab: Lab, browser: Any) -> None:
    script = [
        [function_call("exec_command", {"cmd": "echo ran > marker.txt; echo ran-it"}, "c1")],
        [message("The marker is there.")],
    ]
    kernels = "@jupyterlab/apputils-extension:kernels-settings"
    assert lab.setting(kernels, "commsOverSubshells") == lab.comms_over_subshells
    with ScriptedResponsesServer(script) as server:
        opts = f"--base-url {server.base_url} -a untrusted -c allow_login_shell=false"
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext agent_magics"),
            nbformat.v4.new_code_cell(f"%%agent {opts}\nmake a marker"),
        ]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nbformat.write(nb, lab.notebooks / "approve.ipynb")
        page = browser.new_page()
        try:
            page.goto(f"{lab.url}/lab/tree/approve.ipynb")
            page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=90_000)
            page.locator(".jp-Notebook .jp-Cell").first.click()
            page.keyboard.press("Shift+Enter")
            page.keyboard.press("Shift+Enter")
            approve = page.get_by_role("button", name="Approve", exact=True)
            approve.wait_for(timeout=60_000)
            assert page.get_by_text("waiting for approval").is_visible()
            assert not (lab.notebooks / "marker.txt").exists()
            approve.click()
            page.get_by_text("The marker is there.").wait_for(timeout=60_000)
            page.get_by_text("Done.").wait_for(timeout=30_000)
            # The turn ended: its static transcript replaced the cards, buttons and all.
            page.get_by_text("approved by the user").wait_for(timeout=30_000)
            assert approve.count() == 0
        finally:
            page.close()
    assert (lab.notebooks / "marker.txt").read_text() == "ran\n"
    assert "ran-it" in server.outputs(1)["c1"]
