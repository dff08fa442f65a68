"""The agent as a persona in Jupyter AI's chat, as a person uses it: JupyterLab 4 with
jupyter-ai-acp-client in Debian's Chromium. The person opens a chat, picks agent-magics
in the chat's persona menu (the persona manager sends each message to the persona picked
there) and asks; the persona starts ``python -m agent_magics acp`` with the server's
environment (here a scripted model on 127.0.0.1). The command that asks waits for a click
on the chat's permission button and then runs, the patch shows its diff, Stop ends a turn
whose command still runs, and with a notebook attached run_python runs in the notebook's
own kernel.

Needs what tests/jupyter/ui/test_browser.py needs plus the ``chat`` extra
(``pip install -e '.[chat]'``). A screenshot of the chat is kept in the test's folder
and, when ``AGENT_MAGICS_SCREENSHOTS`` names a folder, there too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
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
pytest.importorskip("jupyter_ai_acp_client", reason="pip install -e '.[chat]'")

PERSONA = "agent-magics"
PATCH = "*** Begin Patch\n*** Add File: notes.txt\n+made in the chat\n*** End Patch\n"
WAIT_MS = 90_000


def shell(command: str, call_id: str) -> dict[str, Any]:
    return function_call("exec_command", {"cmd": command}, call_id)


@pytest.fixture
def model() -> Iterator[ScriptedResponsesServer]:
    """The model's turns, set by each test before the lab starts."""
    with ScriptedResponsesServer() as server:
        yield server


@pytest.fixture
def lab_options(tmp_path: Path, model: ScriptedResponsesServer) -> dict[str, Any]:
    """JupyterLab whose environment points the persona's agent at ``model``, asking
    before every command that is not known to only read (``untrusted``). Only this
    package's persona is loaded: jupyter-ai-acp-client's own (Claude, Codex, ...) stay
    out, as its end-to-end tests keep them."""
    home = tmp_path / "home"
    (home / ".agent_magics").mkdir(parents=True)
    (home / ".agent_magics" / "config.toml").write_text("allow_login_shell = false\n")
    env = {
        "HOME": str(home),
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "sk-dummy-chat-7Qm2",
        "AGENT_MAGICS_MODEL": "m",
        "AGENT_MAGICS_PROVIDER": "responses",
        "AGENT_MAGICS_APPROVAL_POLICY": "untrusted",
        "JUPYTER_AI_ACP_CLIENT_E2E_TESTING_ONLY": "1",
    }
    return {"env": env}


def open_chat(page: Any, lab: Lab) -> Any:
    """A new chat (File > New > Chat), agent-magics picked from its persona menu; its
    message box once the persona's session is up (the mode menu shows the session's
    approval policy)."""
    page.get_by_text("File", exact=True).first.click()
    page.get_by_text("New", exact=True).first.hover()
    page.locator(".lm-Menu-itemLabel", has_text="Chat").last.click()
    box = page.get_by_placeholder("Type a chat message, @ to mention...")
    box.wait_for(timeout=WAIT_MS)
    page.get_by_title("Choose which persona to message").click()
    page.get_by_role("menuitem").filter(has_text=PERSONA).first.click()
    page.get_by_role("button", name="Ask first").wait_for(timeout=WAIT_MS)
    # The chat's server side drops a message that comes while the chat has changes not
    # yet saved (jupyterlab-chat's YChat skips messages while the document is dirty),
    # and the new session's id was just written into it: wait until that is saved.
    for _ in range(300):
        if any("acp_session_ids" in c.read_text() for c in lab.notebooks.glob("*.chat")):
            break
        page.wait_for_timeout(100)
    page.wait_for_timeout(500)
    return box


def ask(page: Any, box: Any, text: str) -> None:
    box.click()
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def running(command: str) -> bool:
    """Whether a process runs ``command`` (its whole command line)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if cmdline.read_bytes().replace(b"\0", b" ").strip() == command.encode():
                return True
        except OSError:
            continue  # ended meanwhile
    return False


def test_the_persona_asks_in_the_chat_runs_the_command_and_shows_its_patch(
    lab: Lab, model: ScriptedResponsesServer, browser: Any, tmp_path: Path
) -> None:
    model.turns = [
        [shell("touch made.txt", "c1")],
        [custom_tool_call("apply_patch", PATCH, "p1")],
        [message("Made made.txt and wrote notes.txt.")],
    ]
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    calls = page.locator(".jp-jupyter-ai-acp-client-tool-call")
    approve = page.locator(".jp-jupyter-ai-acp-client-permission-btn", has_text="Approve")
    try:
        page.goto(lab.page_url("lab"))
        box = open_chat(page, lab)
        ask(page, box, "make a file, then a note")
        approve.first.wait_for(timeout=WAIT_MS)
        asked = calls.first.inner_text()
        options = page.locator(".jp-jupyter-ai-acp-client-permission-btn").all_inner_texts()
        approve.first.click()
        diff = page.locator(".jp-jupyter-ai-acp-client-diff-block")
        diff.first.wait_for(timeout=WAIT_MS)  # the patch's question shows what it changes
        made = (lab.notebooks / "made.txt").exists()
        shown = diff.first.inner_text()
        before = (lab.notebooks / "notes.txt").exists()
        keep_screenshot(page, tmp_path / "chat-approval.png")
        approve.first.click()
        page.get_by_text("Made made.txt and wrote notes.txt.").wait_for(timeout=WAIT_MS)
        done = calls.all_inner_texts()
    finally:
        context.close()
    log = (tmp_path / "lab.log").read_text()
    assert "Loaded AI persona class 'AgentMagicsPersona'" in log
    assert "touch made.txt" in asked, asked
    assert [o.partition(":")[0] for o in options] == ["Approve", "Approve for session", "Deny"]
    assert made
    assert "notes.txt" in shown and "+ made in the chat" in shown, shown
    assert not before
    assert (lab.notebooks / "notes.txt").read_text() == "made in the chat\n"
    assert [t.splitlines()[0] for t in done] == [
        "✓ exec_command: touch made.txt — Approve",
        "✓ Edit: Add notes.txt — Approve",
    ], done
    assert len(model.requests) == 3


def test_stop_ends_the_turn_and_its_running_command(
    lab: Lab, model: ScriptedResponsesServer, browser: Any
) -> None:
    command = "sleep 97"
    model.turns = [[shell(command, "c1")], [message("never asked for")]]
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    try:
        page.goto(lab.page_url("lab"))
        box = open_chat(page, lab)
        ask(page, box, "wait a while")
        approve = page.locator(".jp-jupyter-ai-acp-client-permission-btn", has_text="Approve")
        approve.first.click(timeout=WAIT_MS)
        for _ in range(300):
            if running(command):
                break
            page.wait_for_timeout(100)
        started = running(command)
        page.get_by_title("Stop generating").click()
        idle = page.locator("button[title='Stop generating']:disabled")  # nothing to stop
        idle.wait_for(timeout=WAIT_MS)
        for _ in range(100):
            if not running(command):
                break
            page.wait_for_timeout(100)
        ended = not running(command)
        call = page.locator(".jp-jupyter-ai-acp-client-tool-call").first.inner_text()
    finally:
        context.close()
    assert started
    assert ended
    assert not call.startswith("✓"), call
    assert len(model.requests) == 1


def test_run_python_runs_in_the_attached_notebooks_kernel(
    lab: Lab, model: ScriptedResponsesServer, browser: Any
) -> None:
    """The person has analysis.ipynb open and its first cell run, opens a chat beside
    it and attaches the notebook; the agent's run_python, approved in the chat, runs in
    that very kernel, so the notebook's next cell sees the variable it made."""
    nbformat.write(python_notebook("x = 1"), lab.notebooks / "analysis.ipynb")
    code = "answer = 6 * 7\nprint(answer)"
    model.turns = [
        [function_call("run_python", {"code": code}, "r1")],
        [message("answer is 42 in your kernel.")],
    ]
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    try:
        open_notebook(page, lab, "analysis.ipynb")
        run_all(page)
        page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt", has_text="[1]").wait_for()
        box = open_chat(page, lab)
        page.get_by_title("Add attachment").click()
        dialog = page.locator(".jp-Dialog")
        dialog.get_by_text("analysis.ipynb", exact=True).click()
        dialog.get_by_role("button", name="Select").click()
        ask(page, box, "set answer in my kernel")
        approve = page.locator(".jp-jupyter-ai-acp-client-permission-btn", has_text="Approve")
        approve.first.click(timeout=WAIT_MS)
        page.get_by_text("answer is 42 in your kernel.").wait_for(timeout=WAIT_MS)
        attached = page.get_by_text("run_python now runs in analysis.ipynb's kernel.").count()
        page.locator(".lm-TabBar-tab", has_text="analysis.ipynb").click()
        page.locator(".jp-Notebook .jp-Cell").first.click()
        page.keyboard.press("Escape")
        page.keyboard.press("b")  # a new cell below, as a person adds one
        page.keyboard.press("Enter")
        page.keyboard.type("print(answer + x)")
        page.keyboard.press("Shift+Enter")
        output = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output")
        output.wait_for(timeout=WAIT_MS)
        shown = output.inner_text()
    finally:
        context.close()
    assert attached == 1
    assert "Output:\n42\n" in model.outputs(1)["r1"], model.outputs(1)
    assert shown.strip() == "43"
