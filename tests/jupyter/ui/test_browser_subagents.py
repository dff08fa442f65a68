"""Sub-agents, a goal and a web search as a person sees them in JupyterLab (headless
Chromium): a parent spawns two children whose commands need approval; each is approved
with a click inside that child's panel (found by its header: name, status, task), the
panel folds and unfolds on a click of its header, and once the parent answered both
panels say completed, inside the spawn card, with nothing spilling out of the cell.
Saved and reopened, the cell shows the children nested in its static transcript, with
no live-widget errors. A second cell's goal shows beside its plan, and a web search's
card shows its query and its sources. Nothing logs an error in the page's console.

One JupyterLab for the module; the model is scripted per conversation on 127.0.0.1
(:mod:`tests.helpers.agents`). Skipped without Debian's chromium or the ``browser``
extra (tests/helpers/browser.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.testing import (
    ConversationsServer,
    ScriptedResponsesServer,
    function_call,
    message,
)
from tests.helpers.agents import (
    TASK_A,
    TASK_B,
    Decide,
    agent_call,
    deciding,
    outputs,
    spawned_ids,
    touch,
)
from tests.helpers.browser import (
    SHUT_DOWN,
    Lab,
    keep_screenshot,
    python_notebook,
    require_browser,
    run_all,
)
from tests.helpers.kernels import agent_cell

pytestmark = pytest.mark.slow

require_browser()

PARENT = "Ask two helpers to write their files."
IDLE = re.compile(r"^Python 3 \(ipykernel\) \| Idle$")
SOURCE = "https://example.org/ipykernel-messaging"
SEARCH = {
    "type": "web_search_call",
    "id": "ws_7",
    "status": "completed",
    "action": {
        "type": "search",
        "query": "ipykernel comm messages",
        "sources": [{"type": "url", "url": SOURCE}],
    },
}
PLAN = [
    {"step": "Read the comm docs", "status": "completed"},
    {"step": "Write the summary", "status": "in_progress"},
]
OVERFLOW = """e => {
  const right = e.getBoundingClientRect().right + 1;
  const clipped = x => {
    for (let a = x.parentElement; a && a !== e; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') return true;
    }
    return false;
  };
  const reach = x => {
    const box = x.getBoundingClientRect();
    const scrolls = getComputedStyle(x).overflowX !== 'visible';
    return scrolls ? box.right : box.left + x.scrollWidth;
  };
  const hides = x =>
    getComputedStyle(x).overflowX !== 'visible' && x.scrollWidth > x.clientWidth + 1;
  return [e, ...e.querySelectorAll('*')]
    .filter(x => hides(x) || (reach(x) > right && !clipped(x)))
    .map(x => `${x.tagName}.${x.className}: ${x.textContent.slice(0, 60)}`);
}"""
"""What reaches past the right edge of the cell's output area where no box clips it, and
each box that hides or scrolls away part of what it holds (a person would not see it)."""
INSIDE = """(inner, outer) => {
  const a = inner.getBoundingClientRect(), b = outer.getBoundingClientRect();
  return a.left >= b.left - 1 && a.right <= b.right + 1 && a.top >= b.top - 1
    && a.bottom <= b.bottom + 1;
}"""

SPAWN_CARD = (
    "xpath=ancestor::div[parent::div[contains(concat(' ', @class, ' '),"
    " ' agent-magics-transcript ')]][1]"
)
"""From a saved child up to the card that holds it: the nearest card of a transcript."""
LIVE_SPAWN_CARD = "xpath=ancestor::div[contains(concat(' ', @class, ' '), ' widget-vbox ')][2]"
"""From a live child's panel up to the card that holds it (a VBox holding the VBox of
its sub-agents)."""


def patient_parent() -> Decide:
    """A parent that spawns two children, then waits on those that have not answered
    yet (a wait returns as soon as one of its targets is final), then answers."""

    def parent(body: dict[str, Any]) -> list[dict[str, Any]]:
        said = outputs(body)
        if "s1" not in said:
            return [
                agent_call("spawn_agent", {"message": TASK_A}, "s1"),
                agent_call("spawn_agent", {"message": TASK_B}, "s2"),
            ]
        waits = " ".join(v for k, v in said.items() if k.startswith("w"))
        left = [i for i in spawned_ids(body, "s1", "s2") if f'"{i}":{{"completed"' not in waits]
        if not left:
            return [message("Both helpers are done.")]
        return [agent_call("wait_agent", {"targets": left}, f"w{len(said)}")]

    return parent


class Console:
    """The page's console errors and uncaught exceptions, from the moment it opened."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))


def open_alone(page: Any, lab: Lab, name: str) -> None:
    """Open ``name`` in a workspace of its own (no tab of another test's notebook) and
    wait until its kernel is idle."""
    page.goto(f"{lab.url}/lab/workspaces/{Path(name).stem}/tree/{name}")
    page.get_by_text(IDLE).wait_for(timeout=90_000)


def panel(page: Any, task: str) -> Any:
    """A child's panel, found by what a person sees: its header naming its task."""
    header = page.locator(".jupyter-widget-Collapse-header")
    return page.locator(".agent-magics-subagent", has=header.filter(has_text=task)).last


def test_two_children_approved_in_their_panels_then_saved_and_reopened(
    module_lab: Lab, browser: Any, tmp_path: Path
) -> None:
    scripts: dict[str, Any] = {
        PARENT: deciding(patient_parent()),
        TASK_A: [[touch("a.txt")], [message("A wrote a.txt")]],
        TASK_B: [[touch("b.txt")], [message("B wrote b.txt")]],
    }
    a, b = module_lab.notebooks / "a.txt", module_lab.notebooks / "b.txt"
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console = Console(page)
    try:
        with ConversationsServer(scripts) as server:
            nb = python_notebook(
                "%load_ext agent_magics", agent_cell(server.base_url, "-a untrusted", PARENT)
            )
            nbformat.write(nb, module_lab.notebooks / "helpers.ipynb")
            open_alone(page, module_lab, "helpers.ipynb")
            run_all(page)
            panel_a, panel_b = panel(page, TASK_A), panel(page, TASK_B)
            approve_a = panel_a.get_by_role("button", name="Approve", exact=True)
            approve_b = panel_b.get_by_role("button", name="Approve", exact=True)
            approve_a.wait_for(timeout=120_000)
            approve_b.wait_for(timeout=60_000)
            for shown in (panel_a, panel_b):  # each header says who, how and what
                head = shown.locator(".jupyter-widget-Collapse-header").first.inner_text()
                assert re.fullmatch(
                    r"sub-agent \S+ · running · Write [ab]\.txt in the workspace\.", head.strip()
                ), head
                spawn = shown.locator(LIVE_SPAWN_CARD)  # the card the panel sits in
                assert spawn.locator("b").first.text_content() == "spawn_agent"
                assert shown.evaluate(INSIDE, spawn.element_handle())
            live_output = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea")
            assert live_output.evaluate(OVERFLOW) == []
            keep_screenshot(page, tmp_path / "children-asking.png")

            approve_a.click()
            panel_a.get_by_text("completed · " + TASK_A).wait_for(timeout=60_000)
            assert a.exists() and not b.exists()  # A's click answered A's question only

            header_b = panel_b.locator(".jupyter-widget-Collapse-header").first
            header_b.click()  # folded: its card is hidden, the header stays
            approve_b.wait_for(state="hidden", timeout=10_000)
            assert header_b.is_visible()
            header_b.click()  # unfolded again, the question still waiting
            approve_b.wait_for(state="visible", timeout=10_000)
            approve_b.click()

            page.get_by_text("Both helpers are done.").wait_for(timeout=120_000)
            page.get_by_text(IDLE).wait_for(timeout=60_000)
        assert b.exists()
        transcript = page.locator(".jp-Notebook .agent-magics-transcript").first
        transcript.wait_for(timeout=60_000)  # the saved transcript replaced the widgets
        keep_screenshot(page, tmp_path / "children-done.png")
        cell_output = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea")
        assert cell_output.evaluate(OVERFLOW) == []

        page.keyboard.press("Escape")
        page.keyboard.press("Control+s")
        page.wait_for_function(
            "() => !document.querySelector('.jp-mod-dirty')", polling=100, timeout=30_000
        )
        page.evaluate(SHUT_DOWN)
        page.reload()
        page.locator(".jp-Notebook .agent-magics-transcript").first.wait_for(timeout=60_000)
        children = page.locator(".jp-Notebook details.agent-magics-subagent")
        assert children.count() == 2
        summaries = children.locator(":scope > summary").all_text_contents()
        assert sorted(s.split(" · ", 1)[-1] for s in summaries) == [
            f"completed · {TASK_A}",
            f"completed · {TASK_B}",
        ]
        for child in (children.nth(0), children.nth(1)):  # nested inside its spawn card
            spawn = child.locator(SPAWN_CARD)
            assert spawn.locator("b").first.text_content() == "spawn_agent"
            assert child.evaluate(INSIDE, spawn.element_handle())
        assert page.get_by_text("Error displaying widget").count() == 0
        assert page.get_by_text("Model not found").count() == 0
        children.first.locator(":scope > summary").click()  # a static child folds too
        assert not children.first.evaluate("d => d.open")
        keep_screenshot(page, tmp_path / "children-reopened.png")
        assert console.errors == []
    except Exception:
        keep_screenshot(page, tmp_path / "FAILED.png")
        (tmp_path / "FAILED.html").write_text(page.content())
        raise
    finally:
        page.evaluate(SHUT_DOWN)
        page.close()


def test_goal_beside_plan_and_a_web_search_card(
    module_lab: Lab, browser: Any, tmp_path: Path
) -> None:
    script = [
        [
            function_call("create_goal", {"objective": "Summarise the comm docs"}, "g1"),
            function_call("update_plan", {"plan": PLAN}, "p1"),
        ],
        [SEARCH, message("Found the docs.")],
    ]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console = Console(page)
    try:
        with ScriptedResponsesServer(script) as server:  # type: ignore[arg-type]
            nb = python_notebook(
                "%load_ext agent_magics", agent_cell(server.base_url, "-a never", "look it up")
            )
            nbformat.write(nb, module_lab.notebooks / "goal.ipynb")
            open_alone(page, module_lab, "goal.ipynb")
            run_all(page)
            page.get_by_text("Found the docs.").wait_for(timeout=120_000)
            page.get_by_text(IDLE).wait_for(timeout=60_000)
        out = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea")
        goal = out.get_by_text(re.compile(r"Goal.*Summarise the comm docs")).first
        goal.wait_for(timeout=30_000)
        assert "(active)" in goal.inner_text()
        step = out.get_by_text("Write the summary").first
        assert step.is_visible()
        g, s = goal.bounding_box(), step.bounding_box()
        assert g["y"] < s["y"]  # the goal's card, then the plan's, one after the other

        search = out.locator("b", has_text=re.compile("^web_search$")).last.locator("xpath=..")
        assert search.locator("code").first.text_content() == "ipykernel comm messages"
        search.locator("xpath=..").get_by_text(re.compile(r"^Output")).first.click()
        link = out.get_by_text(SOURCE).first  # the sources, once its output is opened
        link.wait_for(timeout=30_000)
        assert link.is_visible()
        assert out.evaluate(OVERFLOW) == []
        keep_screenshot(page, tmp_path / "goal-plan-search.png")
        assert console.errors == []
    except Exception:
        keep_screenshot(page, tmp_path / "FAILED.png")
        (tmp_path / "FAILED.html").write_text(page.content())
        raise
    finally:
        page.evaluate(SHUT_DOWN)
        page.close()
