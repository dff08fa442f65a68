"""A person's view of the live notebook edit: JupyterLab with jupyter-collaboration in
headless Chromium. The person types into one cell and does not save; the agent, asked
in another cell, inserts a cell into this very notebook after a click on Approve; the
page then shows the new cell in its place and the typed edit as it was.

Needs what tests/jupyter/ui/test_browser.py needs plus the collaboration server (both in the
``browser`` extra). A screenshot of the page is kept in the test's folder and, when
``AGENT_MAGICS_SCREENSHOTS`` names a folder, there too.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.browser import (
    AUTOSAVE_SETTINGS,
    SCREENSHOTS_ENV,
    Lab,
    open_notebook,
    require_browser,
)

pytestmark = pytest.mark.slow
require_browser()
pytest.importorskip("jupyter_server_ydoc", reason="pip install -e '.[browser]'")
pytest.importorskip("pycrdt", reason="pip install -e '.[browser]'")

TYPED = "  # typed by hand, not saved"
NEW_CELL = "y = x + 1\nprint(y)"


def cell_texts(page: Any) -> list[str]:
    texts: list[str] = page.locator(
        ".jp-Notebook .jp-Cell .jp-InputArea .cm-content"
    ).all_inner_texts()
    return [t.replace("\u200b", "").strip() for t in texts]


def test_the_agent_inserts_a_cell_beside_the_persons_unsaved_edit(
    lab: Lab, browser: Any, tmp_path: Path
) -> None:
    edit = {"path": "live.ipynb", "cell_id": "keep", "edit_mode": "insert",
            "cell_type": "code", "new_source": NEW_CELL}  # fmt: skip
    script = [[function_call("edit_notebook", edit, "e1")], [message("The cell is in.")]]
    with ScriptedResponsesServer(script) as server:
        opts = f"--base-url {server.base_url} -a untrusted -c allow_login_shell=false"
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext agent_magics", id="load"),
            nbformat.v4.new_code_cell(f"%%agent {opts}\nadd y below x", id="ask"),
            nbformat.v4.new_code_cell("x = 1", id="keep"),
            nbformat.v4.new_markdown_cell("The end.", id="tail"),
        ]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nbformat.write(nb, lab.notebooks / "live.ipynb")
        context = browser.new_context(
            viewport={"width": 1200, "height": 1000},
            permissions=["clipboard-read", "clipboard-write"],
        )
        page = context.new_page()
        try:
            open_notebook(page, lab, "live.ipynb")
            keep = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".cm-content")
            keep.click()
            page.keyboard.press("End")
            page.keyboard.type(TYPED)
            page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputPrompt").click()
            page.keyboard.press("Shift+Enter")
            page.keyboard.press("Shift+Enter")
            approve = page.get_by_role("button", name="Approve", exact=True)
            approve.wait_for(timeout=60_000)
            copy = page.get_by_role("button", name="Copy", exact=True)
            copy.click()  # while asked, the person may take the cell to paste it by hand
            page.get_by_role("button", name="Copied", exact=True).wait_for(timeout=10_000)
            copied = page.evaluate("navigator.clipboard.readText()")
            approve.click()
            page.get_by_text("The cell is in.").wait_for(timeout=60_000)
            page.locator(".jp-Notebook .agent-magics-done").first.wait_for(state="attached")
            page.wait_for_function(
                "document.querySelectorAll('.jp-Notebook .jp-Cell').length === 5", timeout=30_000
            )
            texts = cell_texts(page)
            offered = page.locator(".jp-Notebook .agent-magics-copy").count()  # the cell is in
            news = page.get_by_role("button", name="No", exact=True)
            if news.is_visible():
                news.click()  # JupyterLab's question about news, which covers the page
                news.wait_for(state="hidden")
            shot = tmp_path / "live-cell-insert.png"
            page.locator(".jp-Notebook .jp-Cell").nth(3).scroll_into_view_if_needed()
            page.screenshot(path=str(shot))
        finally:
            context.close()
    assert texts[2:] == [f"x = 1{TYPED}", NEW_CELL, "The end."], texts
    assert texts[1].startswith("%%agent")
    assert copied == NEW_CELL and offered == 0
    assert server.outputs(1)["e1"].startswith("Inserted code cell ")
    assert server.outputs(1)["e1"].endswith("the notebook open in the user's editor")
    folder = os.environ.get(SCREENSHOTS_ENV)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / shot.name)


AUTOSAVE = AUTOSAVE_SETTINGS


def test_the_agent_edits_another_open_notebook_beside_the_persons_unsaved_typing(
    lab: Lab, browser: Any, tmp_path: Path
) -> None:
    """The person has other.ipynb open in one tab, autosave off, and types without
    saving; in another tab they ask the agent, in ask.ipynb, for a cell in other.ipynb.
    The cell appears in their tab beside the typing, and nothing wrote the file."""
    (tmp_path / "settings" / AUTOSAVE).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "settings" / AUTOSAVE).write_text('{"autosave": false}')
    edit = {"path": "other.ipynb", "cell_id": "keep", "edit_mode": "insert",
            "cell_type": "code", "new_source": NEW_CELL}  # fmt: skip
    script = [[function_call("edit_notebook", edit, "e1")], [message("The cell is in.")]]
    other = nbformat.v4.new_notebook()
    other.cells = [nbformat.v4.new_code_cell("x = 1", id="keep"),
                   nbformat.v4.new_markdown_cell("The end.", id="tail")]  # fmt: skip
    other.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(other, lab.notebooks / "other.ipynb")
    on_disk = (lab.notebooks / "other.ipynb").read_bytes()
    with ScriptedResponsesServer(script) as server:
        ask = nbformat.v4.new_notebook()
        ask.cells = [
            nbformat.v4.new_code_cell("%load_ext agent_magics", id="load"),
            nbformat.v4.new_code_cell(
                f"%%agent --base-url {server.base_url} -a never -c allow_login_shell=false\n"
                "add y below x in other.ipynb",
                id="ask",
            ),
        ]
        ask.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nbformat.write(ask, lab.notebooks / "ask.ipynb")
        context = browser.new_context(viewport={"width": 1200, "height": 1000})
        try:
            typing = context.new_page()
            open_notebook(typing, lab, "other.ipynb")
            typing.locator(".jp-Notebook .jp-Cell").first.locator(".cm-content").click()
            typing.keyboard.press("End")
            typing.keyboard.type(TYPED)
            asking = context.new_page()
            open_notebook(asking, lab, "ask.ipynb")
            asking.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputPrompt").click()
            asking.keyboard.press("Shift+Enter")
            asking.keyboard.press("Shift+Enter")
            asking.get_by_text("The cell is in.").wait_for(timeout=60_000)
            typing.bring_to_front()
            typing.wait_for_function(
                "document.querySelectorAll('.jp-Notebook .jp-Cell').length === 3", timeout=30_000
            )
            texts = cell_texts(typing)
            shot = tmp_path / "live-other-notebook.png"
            typing.screenshot(path=str(shot))
        finally:
            context.close()
    assert texts == [f"x = 1{TYPED}", NEW_CELL, "The end."], texts
    assert server.outputs(1)["e1"].endswith("the notebook open in the user's editor")
    assert (lab.notebooks / "other.ipynb").read_bytes() == on_disk
    folder = os.environ.get(SCREENSHOTS_ENV)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / shot.name)
