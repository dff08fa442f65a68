"""A long notebook conversation as a person sees it in JupyterLab (headless Chromium),
served under a Binder-style prefix with a token: Run All through %%agent cells against a
model with a 4k window shows the "Context compacted" line with the summary folded under
it and the window's gauge in the footers; saved and opened again, the notebook still
shows them.

Skipped without Debian's chromium or the ``browser`` extra (see tests/helpers/browser.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.helpers.browser import (
    Lab,
    keep_screenshot,
    open_notebook,
    python_notebook,
    read_when_saved,
    require_browser,
    run_all,
)
from tests.helpers.scenario_server import WindowServer

pytestmark = pytest.mark.slow

require_browser()

WINDOW = 4096


@pytest.fixture
def lab_options() -> dict[str, Any]:
    """Served as Binder serves a person's server: under a prefix, with a token."""
    return {"prefix": "/user/labs-compaction-abc123/", "token": "binder-style-token-0123456789"}


def see_what_was_kept(page: Any) -> None:
    """The summary is folded under the compaction's line: hidden, then shown by a click,
    with steps the person wrote among the kept messages."""
    card = page.locator(".agent-magics-compaction").first
    summary = card.get_by_text("Summary 1: the person ran numbered steps.")
    assert not summary.is_visible()
    card.get_by_text("What the conversation goes on from").click()
    summary.wait_for(state="visible", timeout=10_000)
    assert card.locator("li").filter(has_text=re.compile(r"^step \d+: x+$")).count() >= 1


def test_compaction_line_and_gauge_show_and_stay_saved(
    lab: Lab, browser: Any, tmp_path: Path
) -> None:
    server = WindowServer(WINDOW, answer_chars=400)
    options = f"--base-url {server.base_url} -m local-model -a never -s danger-full-access"
    options += f" -c model_context_window={WINDOW}"
    cells = [f"%%agent {options}\nstep {n}: " + "x" * 900 for n in range(1, 13)]
    nbformat.write(python_notebook("%load_ext agent_magics", *cells), lab.notebooks / "long.ipynb")
    page = browser.new_page()
    try:
        open_notebook(page, lab, "long.ipynb")
        run_all(page)
        page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=120_000)
        page.get_by_text("Context compacted").first.wait_for(timeout=60_000)
        page.get_by_text("% of 4,096").first.wait_for(timeout=30_000)
        assert page.get_by_text("AgentTurnFailed").count() == 0
        assert server.summaries >= 1 and max(server.sizes) <= WINDOW
        see_what_was_kept(page)
        keep_screenshot(page, tmp_path / "compacted.png")
        page.keyboard.press("Control+s")
        saved = read_when_saved(
            page, lab.notebooks / "long.ipynb", lambda nb: "% of 4,096" in str(nb.cells)
        )
    finally:
        page.close()
        server.close()
    text = str([c.get("outputs") for c in saved.cells])
    assert "Context compacted" in text and "% of 4,096" in text
    page = browser.new_page()
    try:
        open_notebook(page, lab, "long.ipynb")
        page.get_by_text("Context compacted").first.wait_for(timeout=30_000)
        page.get_by_text("% of 4,096").first.wait_for(timeout=30_000)
        see_what_was_kept(page)
        keep_screenshot(page, tmp_path / "reopened.png")
    finally:
        page.close()
