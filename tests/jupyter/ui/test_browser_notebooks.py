"""Each notebook in notebooks/ as a person who cloned the repository meets it: JupyterLab
(with jupyter-collaboration) serving a fresh copy of the folder, no model configured and
a home of its own, the notebook opened in headless Chromium and run with Run > Run All
Cells. Every approval card is answered with a real click on Approve; when the last cell
has run, no cell shows an error or is still running, and each ``%%agent`` cell shows
its transcript (saved with the notebook too), and no output says that its recording does
not match, has run out or that no model is configured.

One screenshot of each card kind seen (an approval card, a command, a patch, the plan,
run_python, a denial, the turn's diff, a figure, an answer...) is kept per notebook as
``<notebook>--<kind>.png``, with one of the whole page when a notebook fails: in the
folder named by ``AGENT_MAGICS_SCREENSHOTS`` (the other browser tests copy theirs there
too), else in pytest's temporary folder (its path is printed). Skipped without Debian's
chromium or the ``browser`` extra, as the other browser tests are (tests/helpers/browser.py).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.browser import (
    AUTOSAVE_SETTINGS,
    SCREENSHOTS_ENV,
    SHUT_DOWN,
    Lab,
    read_when_saved,
    require_browser,
)
from tests.helpers.paths import ROOT

pytestmark = pytest.mark.slow
require_browser()
pytest.importorskip("jupyter_server_ydoc", reason="pip install -e '.[browser]'")


NOTEBOOKS = ROOT / "notebooks"
RUN_LIMIT_S = 600
"""How long one notebook may take from Run All to its last cell, approvals included."""
NOT_SET = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "AGENT_MAGICS_MODEL",
    "AGENT_MAGICS_PROVIDER",
    "AGENT_MAGICS_APPROVAL_POLICY",
    "AGENT_MAGICS_SANDBOX",
    "AGENT_MAGICS_HEADLESS_APPROVAL",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
)
"""What a newcomer has not set: no model, no policy, no config of their own."""
PROBLEMS = [
    re.compile(re.escape(s))
    for s in ("does not match", "has no more answers", "No model is configured:")
]
"""What an output says when a notebook's recording no longer fits it, or is missing (the
first cell's note that no model is configured, so a recording plays, is fine)."""
IDLE = re.compile(r"^Python 3 \(ipykernel\) \| Idle$")

PROGRESS = """() => {
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
    .map(p => p.textContent);
  const asking = [...document.querySelectorAll('.jp-Notebook button')]
    .some(b => !b.disabled && b.textContent.trim() === 'Approve');
  return asking || (!prompts.some(t => t.includes('*')) && prompts.some(t => /\\d/.test(t)));
}"""
"""True when an approval card waits for a click, or Run All is over: no cell queued or
running (``[*]``) and some cell ran."""
STARTED = """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
  .some(p => /[*\\d]/.test(p.textContent))"""
CARD_KINDS = """cards => cards.map(card => {
  const head = card.firstElementChild;
  const label = head.querySelector('b')?.textContent ?? 'card';
  const status = [...head.querySelectorAll('span')]
    .find(s => getComputedStyle(s).fontWeight === '600')?.textContent ?? '';
  return status ? `${label}-${status}` : label;
})"""
"""Each saved card's kind: its tool's name and status, as its header shows them."""
SETTLE = """async e => {
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  for (let n = 0, top = null; n < 50 && top !== e.getBoundingClientRect().top; n++, await frame()) {
    top = e.getBoundingClientRect().top;
    e.scrollIntoView({block: "nearest"});
  }
}"""
"""Scroll an element into view until it stays put: cells out of view are laid out only
once they come near it (JupyterLab's content visibility), which moves what follows."""
LIVE_CARD = "xpath=ancestor::div[contains(concat(' ', @class, ' '), ' widget-vbox ')][1]"
"""From a card's button up to the card (a VBox holding the row of buttons)."""


@pytest.fixture(scope="module")
def module_lab_options() -> dict[str, Any]:
    """No model set. The test saves each notebook itself: an autosave on top (every 2
    minutes, reached on a loaded machine) raced that save, and JupyterLab then asked
    whether the file "has changed on disk", a dialog over the page."""
    return {
        "env": dict.fromkeys(NOT_SET),
        "settings": {AUTOSAVE_SETTINGS: {"autosave": False}},
    }


@pytest.fixture(scope="module", autouse=True)
def notebooks(module_lab: Lab) -> None:
    """One server for every notebook, the notebooks copied into it."""
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
    shutil.copytree(NOTEBOOKS, module_lab.notebooks, ignore=ignore, dirs_exist_ok=True)


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    named = os.environ.get(SCREENSHOTS_ENV)
    folder = Path(named) if named else tmp_path_factory.mktemp("notebook-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots of the notebooks' cards: {folder}")
    return folder


class Shots:
    """The first card of each kind in one notebook, kept as a PNG."""

    def __init__(self, folder: Path, notebook: str) -> None:
        self.folder, self.stem = folder, Path(notebook).stem
        self.kinds: list[str] = []

    def take(self, element: Any, kind: str) -> None:
        kind = re.sub(r"[^A-Za-z0-9_.-]+", "-", kind).strip("-")
        if kind not in self.kinds:
            self.kinds.append(kind)
            element.evaluate(SETTLE)
            element.screenshot(path=str(self.folder / f"{self.stem}--{kind}.png"))


def run_all(page: Any, shots: Shots) -> int:
    """Run > Run All Cells, then click Approve on each approval card until no cell is
    queued or running; the number of approvals given."""
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.keyboard.press("Escape")
    page.get_by_text("Run", exact=True).first.click()
    page.get_by_text("Run All Cells", exact=True).click()
    deadline = time.monotonic() + RUN_LIMIT_S
    page.wait_for_function(STARTED, polling=200, timeout=60_000)
    approve = page.get_by_role("button", name="Approve", exact=True, disabled=False)
    approvals = 0
    while True:
        left_ms = max(1.0, deadline - time.monotonic()) * 1000
        page.wait_for_function(PROGRESS, polling=250, timeout=left_ms)
        if approve.count() == 0:
            return approvals
        button = approve.first.element_handle()
        card = approve.first.locator(LIVE_CARD)
        shots.take(card, "approval-" + card.locator("b").first.text_content())
        button.click()
        page.wait_for_function("b => !b.isConnected || b.disabled", arg=button, polling=100)
        approvals += 1


def keep_card_kinds(page: Any, shots: Shots) -> None:
    """A screenshot of the first saved card of each kind, the turn's diff (opened), a
    figure and an answer."""
    saved_cards = ".agent-magics-transcript > div:has(> div > b):not(.agent-magics-turn-diff)"
    cards = page.locator(f".jp-Notebook {saved_cards}")
    for n, kind in enumerate(cards.evaluate_all(CARD_KINDS)):
        shots.take(cards.nth(n), kind)
    diff = page.locator(".jp-Notebook .agent-magics-turn-diff")
    if diff.count():
        diff.first.locator("summary").first.click()
        shots.take(diff.first, "turn-diff")
    figures = page.locator(".jp-Notebook .jp-OutputArea-output img")
    if figures.count():
        shots.take(figures.first, "figure")
    answers = page.locator(".jp-Notebook .agent-magics-transcript > div:has(> p)")
    if answers.count():
        shots.take(answers.first, "answer")


def code_cells(page: Any) -> list[tuple[str, str, Any]]:
    """Each code cell on the page: its prompt, its first line, the cell. (Text content,
    not inner text: a cell out of view is not rendered, and its inner text is empty.)"""
    found = []
    cells = page.locator(".jp-Notebook .jp-CodeCell")
    for n in range(cells.count()):
        cell = cells.nth(n)
        prompt = cell.locator(".jp-InputPrompt").first.text_content().strip()
        line = cell.locator(".cm-line").first.text_content().replace("\u200b", "")
        found.append((prompt, line.strip(), cell))
    return found


def saved(page: Any, path: Path, ran: int) -> Any:
    """Save with Ctrl+S and read the file once it holds the ``ran`` cells' outputs."""
    page.locator(".jp-Notebook .jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")

    def all_ran(nb: Any) -> bool:
        counts = [c.get("execution_count") for c in nb.cells if c.cell_type == "code"]
        return sum(c is not None for c in counts) >= ran

    return read_when_saved(page, path, all_ran)


def output_text(output: Any) -> str:
    if output.output_type == "error":
        return f"{output.ename}: {output.evalue}"
    if output.output_type == "stream":
        return str(output.text)
    return "\n".join(str(v) for k, v in output.get("data", {}).items() if k.startswith("text/"))


@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs_all_in_jupyterlab_with_approvals_clicked(
    name: str, module_lab: Lab, browser: Any, screenshots: Path
) -> None:
    shots = Shots(screenshots, name)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(f"{module_lab.url}/lab/workspaces/{Path(name).stem}/tree/{name}")  # alone
        page.get_by_text(IDLE).wait_for(timeout=90_000)
        run_all(page, shots)
        page.get_by_text(IDLE).wait_for(timeout=60_000)
        cells = code_cells(page)
        ran = sum(re.fullmatch(r"\[\d+\]:", prompt) is not None for prompt, _, _ in cells)
        nb = saved(page, module_lab.notebooks / name, ran)
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        errors = [output_text(o) for o in outputs if o.output_type == "error"]
        errors += [output_text(o) for o in outputs if "Traceback" in output_text(o)]
        assert not errors, f"{name}: {errors}"
        assert re.fullmatch(r"\[\d+\]:", cells[-1][0]), f"{name}: the last cell did not run"
        for prompt, first_line, cell in cells:
            if first_line.startswith("%%agent"):
                where = f"{name}: {first_line!r} ({prompt})"
                assert cell.locator(".agent-magics-transcript").count() == 1, where
        outputs_shown = page.locator(".jp-Notebook .jp-OutputArea")
        for problem in PROBLEMS:
            said = outputs_shown.get_by_text(problem).all_text_contents()
            assert not said, f"{name}: {said}"
        assert page.locator(".jp-Notebook .agent-magics-live").count() == 0  # no turn runs
        assert page.get_by_text("Error displaying widget").count() == 0
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.source.startswith("%%agent"):
                shown = [o.get("data", {}).get("text/html", "") for o in cell.outputs]
                assert any("agent-magics-transcript" in h for h in shown), cell.source
        keep_card_kinds(page, shots)
    except Exception:
        page.screenshot(path=str(screenshots / f"{Path(name).stem}--FAILED.png"))
        shutil.copy(module_lab.notebooks / name, screenshots / f"{Path(name).stem}--FAILED.ipynb")
        raise
    finally:
        page.evaluate(SHUT_DOWN)  # the next notebook has the two cores to itself
        page.close()
