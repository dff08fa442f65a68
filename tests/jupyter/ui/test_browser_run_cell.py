"""A person's view of run_cell: JupyterLab with jupyter-collaboration in headless
Chromium. The agent, asked in one cell, runs another cell of this notebook after a click
on Approve; its printed lines appear in that cell's output area while it runs, as the
person types into a third cell; then the cell has its number, the typing is kept, and a
save and a reload show the same.

Needs what tests/jupyter/ui/test_browser_live.py needs (the ``browser`` extra and Debian's
chromium). A screenshot is kept in the test's folder and, when
``AGENT_MAGICS_SCREENSHOTS`` names a folder, there too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.browser import (
    Lab,
    keep_screenshot,
    open_notebook,
    read_when_saved,
    require_browser,
)

pytestmark = pytest.mark.slow
require_browser()
pytest.importorskip("jupyter_server_ydoc", reason="pip install -e '.[browser]'")
pytest.importorskip("pycrdt", reason="pip install -e '.[browser]'")

TYPED = "  # typed by hand while the cell ran"
SLOW = "import time\nfor n in range(3):\n    print('tick', n, flush=True)\n    time.sleep(1.5)"


def cells(page: Any) -> Any:
    return page.locator(".jp-Notebook .jp-Cell")


def saved_whole(nb: Any, typed: str) -> bool:
    """The save after the turn (the server may also have saved the room while it ran)."""
    return typed in nb.cells[2].source and nb.cells[3].execution_count is not None


def test_a_cell_the_agent_runs_fills_in_as_it_runs_beside_the_persons_typing(
    lab: Lab, browser: Any, tmp_path: Path
) -> None:
    script = [[function_call("run_cell", {"cell_id": "slow"}, "r1")], [message("It ran.")]]
    with ScriptedResponsesServer(script) as server:
        opts = f"--base-url {server.base_url} -a untrusted -c allow_login_shell=false"
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext agent_magics", id="load"),
            nbformat.v4.new_code_cell(f"%%agent {opts}\nrun the slow cell", id="ask"),
            nbformat.v4.new_code_cell("x = 1", id="keep"),
            nbformat.v4.new_code_cell(SLOW, id="slow"),
        ]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nbformat.write(nb, lab.notebooks / "run.ipynb")
        page = browser.new_page(viewport={"width": 1200, "height": 1100})
        try:
            open_notebook(page, lab, "run.ipynb")
            cells(page).first.locator(".jp-InputPrompt").click()
            page.keyboard.press("Shift+Enter")
            page.keyboard.press("Shift+Enter")
            approve = page.get_by_role("button", name="Approve", exact=True)
            approve.wait_for(timeout=60_000)
            approve.click()
            slow = cells(page).nth(3)
            slow.get_by_text("tick 0").wait_for(timeout=60_000)  # while it runs
            running = slow.locator(".jp-OutputArea").inner_text()
            keep = cells(page).nth(2).locator(".cm-content")
            keep.click()
            page.keyboard.press("End")
            page.keyboard.type(TYPED)
            page.get_by_text("It ran.").wait_for(timeout=60_000)
            slow.get_by_text("tick 2").wait_for(timeout=30_000)
            prompt = slow.locator(".jp-InputPrompt").inner_text()
            shown = slow.locator(".jp-OutputArea").inner_text()
            typed = keep.inner_text()
            slow.scroll_into_view_if_needed()
            keep_screenshot(page, tmp_path / "run-cell.png")
            page.keyboard.press("Escape")
            page.keyboard.press("Control+s")
            path = lab.notebooks / "run.ipynb"
            saved = read_when_saved(page, path, lambda nb: saved_whole(nb, TYPED))
            open_notebook(page, lab, "run.ipynb")
            again = cells(page).nth(3).locator(".jp-OutputArea").inner_text()
        finally:
            page.close()
    assert "tick 2" not in running, running
    assert [line for line in shown.splitlines() if line.strip()] == ["tick 0", "tick 1", "tick 2"]
    count = saved.cells[3].execution_count
    assert isinstance(count, int) and prompt.strip() == f"[{count}]:", (prompt, count)
    assert TYPED.strip() in typed
    assert saved.cells[2].source == "x = 1" + TYPED
    assert "tick 2" in again
    assert server.outputs(1)["r1"].startswith("Ran cell slow as In [")
