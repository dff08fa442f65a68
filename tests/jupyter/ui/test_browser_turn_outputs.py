"""What a person sees in JupyterLab (headless Chromium) of a turn's outputs: Run All
stops at a %%agent cell whose turn could not run, and a plot turn saved by a headless
run shows its figure, once, when the notebook is opened.

Skipped without Debian's chromium or the ``browser`` extra (see tests/helpers/browser.py)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from agent_magics.jupyter.ui.runner import SHOWN_ABOVE
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.browser import (
    Lab,
    keep_screenshot,
    open_notebook,
    python_notebook,
    require_browser,
    run_all,
)
from tests.helpers.kernels import NO_LOGIN, PLOT

pytestmark = pytest.mark.slow

require_browser()


def test_run_all_stops_at_a_turn_that_could_not_run(lab: Lab, browser: Any, tmp_path: Path) -> None:
    with socket.socket() as s:  # a 127.0.0.1 port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    opts = f"--base-url http://127.0.0.1:{port}/v1 {NO_LOGIN} -c request_max_retries=0"
    nb = python_notebook(
        "%load_ext agent_magics",
        f"%%agent {opts} -c stream_max_retries=0\nwrite it",
        "print('ran after ' + 'the turn')",
    )
    nbformat.write(nb, lab.notebooks / "stops.ipynb")
    page = browser.new_page()
    try:
        open_notebook(page, lab, "stops.ipynb")
        run_all(page)
        error = page.locator(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
        )
        error.get_by_text(f"AgentTurnFailed: {SHOWN_ABOVE}").wait_for(timeout=60_000)
        page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=30_000)
        assert page.get_by_text("ran after the turn").count() == 0
        # The sentence is said once, in the card; the error box points to it.
        assert page.get_by_text("Could not reach the model server").count() == 1
        keep_screenshot(page, tmp_path / "run-all-stops.png")
    finally:
        page.close()


def test_a_saved_plot_turn_shows_its_figure_once(
    lab: Lab, browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "matplotlib"))
    turns = [[function_call("run_python", {"code": PLOT}, "c1")], [message("Plotted.")]]
    with ScriptedResponsesServer(turns) as server:  # type: ignore[arg-type]
        nb = python_notebook(
            "%load_ext agent_magics",
            f"%%agent --base-url {server.base_url} -a never\nplot",
        )
        resources = {"metadata": {"path": str(lab.notebooks)}}
        NotebookClient(nb, timeout=120, resources=resources).execute()
    nbformat.write(nb, lab.notebooks / "plot.ipynb")  # unsigned: opened untrusted
    page = browser.new_page()
    try:
        open_notebook(page, lab, "plot.ipynb")
        page.get_by_text("Plotted.").wait_for(timeout=30_000)
        page.get_by_text("output image 1: shown below this card").wait_for(timeout=30_000)
        images = page.locator(".jp-OutputArea img")
        assert images.count() == 1
        assert images.first.evaluate("img => img.naturalWidth") > 100  # decoded and drawn
        # right below the run_python card that drew it, the answer after it
        shown = page.locator(".jp-Notebook .jp-OutputArea-output").evaluate_all(
            "outs => outs.map(o => o.querySelector('img') ? 'figure' : o.innerText)"
        )
        (at,) = [n for n, text in enumerate(shown) if text == "figure"]
        assert "run_python" in shown[at - 1] and "Plotted." not in shown[at - 1], shown
        assert "Plotted." in shown[at + 1], shown
        keep_screenshot(page, tmp_path / "saved-figure.png")
    finally:
        page.close()
