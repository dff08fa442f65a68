"""JupyterLab's status bar during a ``%%agent`` turn (headless Chromium, ipykernel 7.4
with the widgets' comms over subshells, as JupyterLab 4.6 runs them): "Busy" while the
turn waits for a click and while the approved command runs, "Idle" once it ended.

Before, the subshell JupyterLab makes for the widgets (``create_subshell_request``) and
each click (a ``comm_msg`` in that subshell) published an idle the page took for the
kernel's: the bar read "Idle" for the whole turn. Skipped without Debian's chromium or the
``browser`` extra (see tests/helpers/browser.py)."""

from __future__ import annotations

from typing import Any

import nbformat
import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.browser import Lab, open_notebook, python_notebook, require_browser

pytestmark = pytest.mark.slow
require_browser()

COMMAND = "sleep 3; touch marker.txt"
BUSY, IDLE = "Python 3 (ipykernel) | Busy", "Python 3 (ipykernel) | Idle"


def status(page: Any) -> str:
    texts: list[str] = page.locator(".jp-StatusBar-Item").all_inner_texts()
    return next((t for t in texts if "(ipykernel) |" in t), "")


def samples(page: Any, count: int) -> list[str]:
    seen = []
    for _ in range(count):
        seen.append(status(page))
        page.wait_for_timeout(250)
    return seen


def test_the_status_bar_says_busy_for_the_whole_turn(lab: Lab, browser: Any) -> None:
    script = [[function_call("exec_command", {"cmd": COMMAND}, "c1")], [message("Made it.")]]
    with ScriptedResponsesServer(script) as server:
        opts = f"--base-url {server.base_url} -a untrusted -c allow_login_shell=false"
        cells = ["%load_ext agent_magics", f"%%agent {opts}\nmake the marker"]
        nbformat.write(python_notebook(*cells), lab.notebooks / "busy.ipynb")
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        try:
            open_notebook(page, lab, "busy.ipynb")
            page.locator(".jp-Notebook .jp-Cell").first.click()
            page.keyboard.press("Shift+Enter")
            page.keyboard.press("Shift+Enter")
            approve = page.get_by_role("button", name="Approve", exact=True)
            approve.wait_for(timeout=60_000)
            waiting = samples(page, 8)
            approve.click()
            running = samples(page, 6)  # the command sleeps 3 s
            page.get_by_text("Made it.").first.wait_for(timeout=60_000)
            page.get_by_text(IDLE).wait_for(timeout=30_000)
        finally:
            page.close()
    assert waiting == [BUSY] * 8, waiting
    assert running == [BUSY] * 6, running
    assert (lab.notebooks / "marker.txt").exists()
