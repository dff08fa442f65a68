"""A person's view: JupyterLab in headless Chromium, real clicks on Approve and Stop.

Skipped without Debian's chromium or the ``browser`` extra (see tests/helpers/browser.py). Runs
with JupyterLab's comms over kernel subshells (the default, with ipykernel 7 button
clicks may arrive on another thread) and without.
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
    python_notebook,
    require_browser,
    run_all,
)

pytestmark = pytest.mark.slow

require_browser()


@pytest.fixture(
    params=[
        pytest.param("perCommTarget", id="comms-over-subshells"),
        pytest.param("disabled", id="comms-on-the-main-shell"),
    ]
)
def lab_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    return {"comms_over_subshells": request.param}


def assert_spaced(element: Any) -> None:
    """The element's lines are spaced like JupyterLab's output text: at most 1.5 times
    its font size apart (an HTML widget's content has a one-line control's 28 px)."""
    style = "e => [getComputedStyle(e).lineHeight, getComputedStyle(e).fontSize]"
    height, size = element.evaluate(style)
    assert float(height.removesuffix("px")) <= 1.5 * float(size.removesuffix("px")), (height, size)


def test_clicking_approve_in_jupyterlab_runs_the_command(
    lab: Lab, browser: Any, tmp_path: Path
) -> None:
    script = [
        [
            function_call(
                "exec_command",
                {"cmd": "echo ran > marker.txt; echo ran-it; sleep 60", "yield_time_ms": 30_000},
                "c1",
            )
        ],
        [function_call("exec_command", {"cmd": "ls no-such-file"}, "c2")],
        [message("The marker is there.")],
    ]
    kernels = "@jupyterlab/apputils-extension:kernels-settings"
    assert lab.setting(kernels, "commsOverSubshells") == lab.comms_over_subshells
    with ScriptedResponsesServer(script) as server:
        opts = f"--base-url {server.base_url} -a untrusted -c allow_login_shell=false"
        nb = python_notebook(
            "%load_ext agent_magics",
            f"%%agent {opts}\nmake a marker",
        )
        nbformat.write(nb, lab.notebooks / "approve.ipynb")
        page = browser.new_page()
        try:
            open_notebook(page, lab, "approve.ipynb")
            page.locator(".jp-Notebook .jp-Cell").first.click()
            page.keyboard.press("Shift+Enter")
            page.keyboard.press("Shift+Enter")
            approve = page.get_by_role("button", name="Approve", exact=True)
            approve.wait_for(timeout=60_000)
            assert page.get_by_text("waiting for approval").is_visible()
            # the card's text is spaced like output text, not 28 px a line
            assert_spaced(page.get_by_text("Why you are asked", exact=False).first)
            assert not (lab.notebooks / "marker.txt").exists()
            approve.click()
            # The live card: the decision in the buttons' place, the command's last
            # lines as it runs, and Stop for that command.
            page.get_by_text("Approved by you").wait_for(timeout=30_000)
            page.get_by_text("ran-it", exact=True).wait_for(timeout=30_000)
            assert approve.count() == 0
            assert page.get_by_role("button", name="Deny").count() == 0
            page.get_by_role("button", name="Stop", exact=True).click(timeout=30_000)
            page.get_by_text("The marker is there.").wait_for(timeout=60_000)
            page.locator(".jp-Notebook .agent-magics-done").first.wait_for(state="attached")
            # The turn ended: its static transcript replaced the cards, buttons and all.
            page.locator(".agent-magics-transcript").wait_for(timeout=30_000)
            assert page.get_by_text("Approved by you").is_visible()
            assert_spaced(page.locator(".agent-magics-transcript").get_by_text("Approved by you"))
            assert page.get_by_text("stopped", exact=True).is_visible()
            assert page.get_by_role("button", name="Stop").count() == 0
            failed = page.locator("details[open]", has_text="exit code 2")
            assert failed.get_by_text("No such file or directory").is_visible()
            keep_screenshot(page, tmp_path / "finished-cards.png")
        finally:
            page.close()
    assert (lab.notebooks / "marker.txt").read_text() == "ran\n"
    assert server.outputs(1)["c1"].startswith("aborted by user after")
    assert "Process exited with code 2" in server.outputs(2)["c2"]


def test_run_all_waits_for_the_turn_in_jupyterlab(lab: Lab, browser: Any, tmp_path: Path) -> None:
    """Run > Run All Cells: the cell after a ``%%agent`` turn reads the file the turn's
    command wrote (ipykernel >= 7.4 keeps the cell busy until its turn ends)."""
    wrote = {"cmd": "sleep 3; echo 42 > result.txt"}
    script = [[function_call("exec_command", wrote, "c1")], [message("Wrote it.")]]
    with ScriptedResponsesServer(script) as server:
        opts = f"--base-url {server.base_url} -a never -c allow_login_shell=false"
        nb = python_notebook(
            "%load_ext agent_magics",
            f"%%agent {opts}\nwrite it",
            "print('read:', open('result.txt').read())",
        )
        nbformat.write(nb, lab.notebooks / "runall.ipynb")
        page = browser.new_page()
        try:
            open_notebook(page, lab, "runall.ipynb")
            run_all(page)
            page.get_by_text("read: 42").wait_for(timeout=60_000)
            assert page.get_by_text("FileNotFoundError").count() == 0
            keep_screenshot(page, tmp_path / "run-all.png")
        finally:
            page.close()
