"""A person's view of a saved notebook: after a turn in JupyterLab, the notebook is saved,
its kernel shut down and the page reloaded; the cell shows the transcript, not a widget
error. Needs what :mod:`tests.jupyter.ui.test_browser` needs (skipped the same way)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.browser import (
    SHUT_DOWN,
    Lab,
    keep_screenshot,
    open_notebook,
    python_notebook,
    read_when_saved,
    require_browser,
)

pytestmark = pytest.mark.slow
require_browser()

COMMAND = "echo ran > marker.txt; echo ran-it"
ANSWER = "The marker is there, and this answer stays."
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def outputs_of(nb: Any) -> list[dict[str, Any]]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def html_outputs(nb: Any) -> list[dict[str, Any]]:
    return [o for o in outputs_of(nb) if "text/html" in o.get("data", {})]


def test_a_reloaded_notebook_shows_the_transcript(lab: Lab, browser: Any, tmp_path: Path) -> None:
    script = [[function_call("exec_command", {"cmd": COMMAND}, "c1")], [message(ANSWER)]]
    path = lab.notebooks / "saved.ipynb"
    with ScriptedResponsesServer(script) as server:
        opts = f"--base-url {server.base_url} -a untrusted -c allow_login_shell=false"
        nb = python_notebook(
            "%load_ext agent_magics",
            f"%%agent {opts}\nmake a marker",
        )
        nbformat.write(nb, path)
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        try:
            open_notebook(page, lab, "saved.ipynb")
            page.locator(".jp-Notebook .jp-Cell").first.click()
            page.keyboard.press("Shift+Enter")
            page.keyboard.press("Shift+Enter")
            page.get_by_role("button", name="Approve", exact=True).click(timeout=60_000)
            page.locator(".agent-magics-transcript").wait_for(timeout=60_000)  # the static one
            page.keyboard.press("Control+s")
            saved = read_when_saved(
                page, path, lambda nb: any("text/html" in o.get("data", {}) for o in outputs_of(nb))
            )
            outputs = outputs_of(saved)
            assert not [o for o in outputs if WIDGET_VIEW in o.get("data", {})]

            assert page.evaluate(SHUT_DOWN) == 0
            page.reload()
            cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
            cell.get_by_text(ANSWER).wait_for(timeout=90_000)
            assert cell.get_by_text(f"$ {COMMAND}").is_visible()
            assert cell.get_by_text("Approved by you").is_visible()
            assert page.get_by_text("Error displaying widget").count() == 0
            assert page.get_by_text("model not found").count() == 0
            keep_screenshot(page, tmp_path / "saved-transcript.png")
        finally:
            page.close()
