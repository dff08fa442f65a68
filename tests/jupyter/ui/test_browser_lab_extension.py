"""The JupyterLab extension the wheel ships (agent_magics/jupyter/labextension), in
JupyterLab in headless Chromium: after a click on a card's button the keyboard still
works in the notebook, and a ``%%agent`` prompt is not coloured as Python.

Before the extension, a click on Approve left the focus on the page's body (the card
replaced the button), so Shift+Enter did nothing; and "is", "in", "else" in a prompt were
coloured as Python keywords. Skipped without Debian's chromium or the ``browser`` extra
(see tests/helpers/browser.py), and without npm, which an editable install builds the
extension with.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.browser import Lab, open_notebook, python_notebook, require_browser

pytestmark = pytest.mark.slow
require_browser()

INSTALLED = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "agent-magics"
if shutil.which("npm") is None and not INSTALLED.exists():
    pytest.skip("the JupyterLab extension is built with npm, which is not installed", True)

PROMPT = "%%agent\nis this in the data, else say 42 and if not list /tmp/x"
PYTHON = "x = 42 if True else 0"
COLOR_OF = """(cell, word) => {
  const spans = [...cell.querySelectorAll('.cm-content span')]
    .filter(s => s.textContent === word);
  const line = cell.querySelector('.cm-line');
  return [spans.length ? getComputedStyle(spans[0]).color : null, getComputedStyle(line).color];
}"""


def test_the_extension_is_installed_with_the_package() -> None:
    assert (INSTALLED / "package.json").exists(), "pip install -e . with npm on PATH builds it"
    assert list((INSTALLED / "static").glob("remoteEntry.*.js"))


def test_after_approve_shift_enter_runs_the_cell_that_was_selected(lab: Lab, browser: Any) -> None:
    script = [
        [function_call("exec_command", {"cmd": "touch marker.txt"}, "c1")],
        [message("Made it.")],
    ]
    with ScriptedResponsesServer(script) as server:
        opts = f"--base-url {server.base_url} -a untrusted -c allow_login_shell=false"
        cells = ["%load_ext agent_magics", f"%%agent {opts}\nmake the marker", "6 * 7"]
        nbformat.write(python_notebook(*cells), lab.notebooks / "keys.ipynb")
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        try:
            open_notebook(page, lab, "keys.ipynb")
            page.locator(".jp-Notebook .jp-Cell").first.click()
            page.keyboard.press("Escape")
            page.keyboard.press("Shift+Enter")
            page.keyboard.press("Shift+Enter")  # the turn starts; "6 * 7" is selected
            approve = page.get_by_role("button", name="Approve", exact=True)
            approve.wait_for(timeout=60_000)
            approve.click()
            page.get_by_text("Approved by you").wait_for(timeout=30_000)
            # The focus is back in the notebook, on the cell selected before the click.
            selected = page.locator(".jp-Notebook .jp-Cell.jp-mod-active")
            assert selected.locator(".cm-content").inner_text() == "6 * 7"
            focused = "() => !!document.activeElement.closest('.jp-Notebook')"
            assert page.evaluate(focused)
            assert page.locator(".jp-Notebook.jp-mod-commandMode").count() == 1
            page.keyboard.press("Shift+Enter")  # queued behind the turn, as a person's is
            last = page.locator(".jp-Notebook .jp-Cell").nth(2)
            last.locator(".jp-OutputArea-output", has_text="42").wait_for(timeout=60_000)
        finally:
            page.close()
    assert (lab.notebooks / "marker.txt").exists()


def test_a_prompt_is_not_coloured_as_python(lab: Lab, browser: Any) -> None:
    nbformat.write(python_notebook(PROMPT, PYTHON), lab.notebooks / "colours.ipynb")
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    try:
        open_notebook(page, lab, "colours.ipynb")
        prompt, code = page.locator(".jp-Notebook .jp-Cell").all()[:2]
        keyword, _ = code.evaluate(COLOR_OF, "else")
        text = code.evaluate(COLOR_OF, "x")[1]
        assert keyword is not None and keyword != text  # Python's keywords are coloured
        for word in ("is", "in", "else", "if", "not"):
            colour, plain = prompt.evaluate(COLOR_OF, word)
            assert colour in (None, plain), word
        # A cell typed into: Python until its first line is %%agent, and back again.
        code.locator(".cm-content").click()
        page.keyboard.press("Control+Home")
        page.keyboard.type("%%agent\n")
        page.wait_for_timeout(300)
        colour, plain = code.evaluate(COLOR_OF, "else")
        assert colour in (None, plain)
        page.keyboard.press("Control+Home")
        page.keyboard.press("Shift+End")
        page.keyboard.press("Delete")
        page.keyboard.press("Delete")
        page.wait_for_timeout(300)
        assert code.evaluate(COLOR_OF, "else")[0] == keyword
    finally:
        page.close()
