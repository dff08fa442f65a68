"""The saved cell keeps its transcript: after a turn in a real kernel (interactive, not
headless), the outputs a front end would save hold a static HTML transcript instead of
the widget, and nbconvert turns the saved notebook into HTML that shows the tool calls."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from agent_magics.models.secret import REDACTED
from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from agent_magics.transcript.html import DONE_CLASS
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PATCH = "*** Begin Patch\n*** Add File: notes.txt\n+kept <notes>\n*** End Patch\n"
COMMAND = "echo ran > marker.txt; echo ran-it"
ANSWER = "The marker and **the notes** are there."
KEY = "sk-transcript-secret-5551234"


def test_the_saved_cell_holds_the_transcript_not_the_widget(kernel: Kernel, tmp_path: Path) -> None:
    script = [
        [function_call("exec_command", {"cmd": COMMAND}, "c1")],
        [custom_tool_call("apply_patch", PATCH, "c2")],
        [message(f"{ANSWER} Your key: {KEY}")],
    ]
    kernel.run(f"%env OPENAI_API_KEY={KEY}")
    with ScriptedResponsesServer(script) as server:
        cell = agent_cell(server.base_url, "-a untrusted", "make a marker and notes")
        msg_id = kernel.execute(cell)
        clicked: set[str] = set()
        while not kernel.shows(TURN_DONE):
            for button in kernel.buttons("Approve"):
                if button not in clicked and not kernel.states[button].get("disabled"):
                    clicked.add(button)
                    kernel.click(button)
            kernel.pump(0.05)
            assert len(clicked) <= 2
        assert len(server.requests) == 3
        saved = kernel.wait_for(
            lambda: [o for o in kernel.saved_outputs(msg_id) if "text/html" in o["data"]]
        )
    outputs = kernel.saved_outputs(msg_id)
    assert [o for o in outputs if WIDGET_VIEW in o.get("data", {})] == []
    html = saved[0]["data"]["text/html"]
    assert "$ echo ran &gt; marker.txt; echo ran-it</pre>" in html  # once, in the body
    assert "<b>exec_command</b> · " in html
    assert "✔ Approved by you</div>" in html
    assert "<summary>Output (1 line, exit code 0)</summary>" in html
    assert '<span style="color:#1a7f37">+kept &lt;notes&gt;</span>' in html  # the diff, coloured
    assert "<b>apply_patch</b> <code>Add notes.txt</code>" in html
    assert (
        f"<p>The marker and <strong>the notes</strong> are there. Your key: {REDACTED}</p>" in html
    )
    assert "Tokens: " in html
    assert (
        "**exec_command** `echo ran > marker.txt; echo ran-it`" in saved[0]["data"]["text/markdown"]
    )

    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell(cell)
    code.outputs = [nbformat.from_dict(o) for o in outputs]
    nb.cells = [code]
    nbformat.validate(nb)
    path = tmp_path / "saved.ipynb"
    nbformat.write(nb, path)
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(path)],
        check=True,
        capture_output=True,
    )
    page = (tmp_path / "saved.html").read_text()
    assert "$ echo ran &gt; marker.txt; echo ran-it</pre>" in page
    assert "Approved by you" in page
    assert "+kept &lt;notes&gt;" in page
    assert "<strong>the notes</strong>" in page
    assert "model not found" not in page
    assert KEY[3:] not in json.dumps(outputs) and KEY[3:] not in page  # secrets stay out


def test_a_headless_cell_ends_with_the_same_html(kernel: Kernel) -> None:
    script = [[function_call("exec_command", {"cmd": COMMAND}, "c1")], [message(ANSWER)]]
    with ScriptedResponsesServer(script) as server:
        kernel.run('%config AgentMagics.headless = "always"')
        cell = agent_cell(server.base_url, "-a never -s danger-full-access", "make a marker")
        msg_id = kernel.execute(cell)
        kernel.wait_for(lambda: kernel.idle(msg_id), timeout=60)
    (saved,) = [o for o in kernel.saved_outputs(msg_id) if o["output_type"] == "display_data"]
    assert sorted(saved["data"]) == ["text/html", "text/markdown", "text/plain"]
    html = saved["data"]["text/html"]
    assert "<b>exec_command</b> · " in html
    assert "$ echo ran &gt; marker.txt; echo ran-it</pre>" in html
    assert f'<span class="{DONE_CLASS}"></span>' in html and "Done." not in html
    assert saved["data"]["text/markdown"].startswith("**exec_command** `echo ran > marker.txt")
