"""What a card says is true, through real turns in a real kernel: a call's run time is
not the time it waited for you, the question says which rule asks and what "Approve for
session" covers (and the next calls show it does), a run_python card says where its code
runs once and shows its code once. The cell's saved transcript says the same."""

from __future__ import annotations

import re

import pytest

from agent_magics.testing import (
    custom_tool_call,
    function_call,
    message,
)
from tests.helpers.cards import WAIT_S, kept, read, run_turn
from tests.helpers.kernels import Kernel

pytestmark = pytest.mark.slow

TOOK = re.compile(r"done \((\d+\.\d) s, after waiting (\d+\.\d) s for you\)")


def test_the_run_time_is_shown_apart_from_the_wait(kernel: Kernel) -> None:
    script = [[function_call("run_python", {"code": "x = 1"}, "c1")], [message("ok")]]
    run_turn(kernel, script, "", ["Approve"])
    live = "\n".join(read(v) for v in kernel.html_values())
    found = TOOK.search(live)
    assert found, live
    ran, waited = float(found.group(1)), float(found.group(2))
    assert waited >= WAIT_S and ran < waited
    assert found.group(0) in read(kept(kernel, "text/html"))
    assert found.group(0) in kept(kernel, "text/markdown")


def test_a_command_question_says_why_and_what_the_session_covers(kernel: Kernel) -> None:
    (kernel.ws / "s.py").write_text("import sys\nprint('ran', sys.argv[1])\n")
    script = [
        [function_call("exec_command", {"cmd": "python3 s.py a"}, "c1")],
        [function_call("exec_command", {"cmd": "python3 s.py a"}, "c2")],
        [function_call("exec_command", {"cmd": "python3 s.py b"}, "c3")],
        [message("ok")],
    ]
    first, third = run_turn(kernel, script, "-a untrusted", ["Approve for session", "Deny"])
    assert (
        "Why you are asked: The approval policy is untrusted: only commands known to be "
        "safe (reading, listing, searching) run without asking, and this one is not "
        "among them." in first
    )
    covers = (
        "this same command, in this same folder, runs again without asking; another "
        "command, another argument or another folder asks again"
    )
    assert f"Approve for session: {covers}." in first
    # what it said is what happened: c2 ran unasked, c3 (another argument) asked
    assert "Why you are asked" in third
    saved = read(kept(kernel, "text/html"))
    assert f"Approved for this session by you: {covers}" in saved
    assert "Allowed: approved earlier for this session" in saved
    assert saved.count("Allow this call?") == 0


def test_run_python_says_outside_the_sandbox_once(kernel: Kernel) -> None:
    code = "x = 1\ny = x + 1"
    script = [
        [function_call("run_python", {"code": code}, "c1")],
        [function_call("run_python", {"code": "z = 3"}, "c2")],
        [
            function_call(
                "exec_command",
                {
                    "cmd": "touch made.txt",
                    "sandbox_permissions": "require_escalated",
                    "justification": "to write beside the project",
                },
                "c3",
            )
        ],
        [message("ok")],
    ]
    first, escalated = run_turn(kernel, script, "-a on-request", ["Approve for session", "Deny"])
    assert first.count("outside the sandbox") == 1
    assert first.count("y = x + 1") == 1
    assert (
        "Why you are asked: The approval policy is on-request: code the model writes runs "
        "in your kernel only once you approve it" in first
    )
    assert (
        "Approve for session: every later run_python call of this session runs without "
        "asking, whatever it runs." in first
    )
    assert kernel.value("z") == 3  # it did cover other code
    assert (
        "Why you are asked: The command asks to run outside the sandbox, and the approval "
        "policy on-request asks you first." in escalated
    )
    assert "The model's reason: to write beside the project" in escalated
    markdown = kept(kernel, "text/markdown")
    assert markdown.count("y = x + 1") == 1 and markdown.count("x = 1") == 1
    assert read(kept(kernel, "text/html")).count("outside the sandbox") == 2  # two cards


def test_an_edited_cell_is_named_by_its_position_and_first_line(kernel: Kernel) -> None:
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Temperatures"),
        nbformat.v4.new_code_cell("import pandas as pd\ndf = pd.read_csv('t.csv')"),
    ]
    nb.cells[1]["id"] = "c5a438b6"
    nbformat.write(nb, str(kernel.ws / "nb.ipynb"))
    edit = {"path": "nb.ipynb", "cell_id": "c5a438b6", "new_source": "df = None"}
    script = [[function_call("edit_notebook", edit, "c1")], [message("ok")]]
    (asked,) = run_turn(kernel, script, "-a untrusted", ["Approve"])
    where = 'Cell 2 ("import pandas as pd…") of nb.ipynb, replaced by'
    assert where in asked and "c5a438b6" not in asked
    saved_html, saved_markdown = read(kept(kernel, "text/html")), kept(kernel, "text/markdown")
    assert where in saved_html and where in saved_markdown
    # (the tool's answer, below in the collapsed output, names the id for the model)
    assert "c5a438b6" not in saved_html.split("Output (")[0]
    assert "c5a438b6" not in saved_markdown.split("Output (")[0]
    assert nbformat.read(str(kernel.ws / "nb.ipynb"), 4).cells[1].source == "df = None"


def patch(name: str, line: str) -> str:
    return f"*** Begin Patch\n*** Add File: {name}\n+{line}\n*** End Patch\n"


def test_a_patch_question_says_why_and_which_files_the_session_covers(kernel: Kernel) -> None:
    script = [
        [custom_tool_call("apply_patch", patch("note.txt", "one"), "p1")],
        [custom_tool_call("apply_patch", patch("note.txt", "two"), "p2")],
        [custom_tool_call("apply_patch", patch("other.txt", "three"), "p3")],
        [message("ok")],
    ]
    first, third = run_turn(kernel, script, "-a untrusted", ["Approve for session", "Deny"])
    assert (
        "Why you are asked: The approval policy is untrusted: every edit of a file asks." in first
    )
    covers = (
        "later edits that touch only note.txt go in without asking; an edit of any other "
        "file asks again, and so does writing outside the sandbox after it blocked one"
    )
    assert f"Approve for session: {covers}." in first
    assert "other.txt" in third  # p2 (note.txt again) went in unasked, p3 asked
    assert (kernel.ws / "note.txt").read_text() == "two\n"
    assert not (kernel.ws / "other.txt").exists()
    assert f"Approved for this session by you: {covers}" in read(kept(kernel, "text/html"))
