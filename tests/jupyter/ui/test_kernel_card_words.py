"""The words and looks of a card, through real turns in a real kernel: a call you denied
says so in our words (the model still reads Codex's), a patch has no exit code, a kernel
tool's arguments are shown once, undo counts its files in English, and the cards' text is
spaced like JupyterLab's output text. The cell's saved transcript says the same."""

from __future__ import annotations

from typing import Any

import pytest

from agent_magics.testing import (
    ScriptedResponsesServer,
    custom_tool_call,
    function_call,
    message,
)
from tests.helpers.cards import asking, kept, question, read
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell
from tests.helpers.paths import MCP_SERVERS

pytestmark = pytest.mark.slow

DEMO_SERVER = MCP_SERVERS / "demo_server.py"
PATCH = "*** Begin Patch\n*** Add File: note.txt\n+one\n*** End Patch\n"
CODEX_SAYS = {  # what the model reads for each denied call, byte for byte
    "c1": 'exec_command failed: CreateProcess { message: "Rejected(\\"exec command '
    'rejected by user\\")" }',
    "p1": "patch rejected by user",
    "r1": "The user did not allow this code to run; nothing ran and no variable changed.",
    "m1": 'err: "user rejected MCP tool call"',
}
OURS = "Not run: you denied it, and the model was told so."


def answer_all(kernel: Kernel, script: list[Any], options: str, label: str, n: int) -> Any:
    """Run one turn, answering its ``n`` questions with the button ``label``; the
    scripted server, for what the model read."""
    with ScriptedResponsesServer(script) as server:
        cell = kernel.execute(agent_cell(server.base_url, options))
        for i in range(1, n + 1):
            asking(kernel, i)
            kernel.click(kernel.wait_for(lambda: kernel.buttons(label))[-1])
            kernel.wait_for(
                lambda i=i: (
                    len(kernel.buttons("Approve")) > i
                    or not any(question(v) for v in kernel.html_values())
                )
            )
        kernel.wait_for(lambda: kernel.shows(TURN_DONE), timeout=60)
        kernel.wait_for(lambda: kernel.idle(cell))
    return server


def titles(kernel: Kernel) -> list[str]:
    """The titles of the cards' output sections (ipywidgets 8 ``titles``, 7 ``_titles``)."""
    found: list[str] = []
    for state in kernel.states.values():
        if state.get("_model_name") == "AccordionModel":
            shown = state.get("titles", state.get("_titles", {}))
            found += [str(t) for t in (shown.values() if isinstance(shown, dict) else shown)]
    return [t for t in found if t]


def test_a_denied_call_says_so_in_our_words(kernel: Kernel) -> None:
    python = kernel.value("__import__('sys').executable")
    msg_id = kernel.execute(f"%agent mcp add demo -- {python} {DEMO_SERVER}")
    kernel.wait_for(lambda: "MCP server 'demo' added" in kernel.outputs_text(kernel.log))
    kernel.wait_for(lambda: kernel.idle(msg_id))
    script = [
        [function_call("exec_command", {"cmd": "touch ran.txt"}, "c1")],
        [custom_tool_call("apply_patch", PATCH, "p1")],
        [function_call("run_python", {"code": "ran = 1"}, "r1")],
        [function_call("mcp__demo__add", {"a": 2, "b": 3}, "m1")],
        [message("ok")],
    ]
    server = answer_all(kernel, script, "-a untrusted", "Deny", 4)
    assert server.outputs(-1) == CODEX_SAYS  # the model's words are Codex's, unchanged
    assert not (kernel.ws / "ran.txt").exists() and not (kernel.ws / "note.txt").exists()
    live = "\n".join(read(v) for v in kernel.html_values())
    saved_html, saved_markdown = read(kept(kernel, "text/html")), kept(kernel, "text/markdown")
    for shown in (live, saved_html, saved_markdown):
        assert shown.count(OURS) == 4, shown
        assert shown.count("Denied by you") == (0 if shown is saved_markdown else 4)
        for codex in ("CreateProcess", "rejected", "did not allow", "Output ("):
            assert codex not in shown, codex
    assert titles(kernel) == []  # no output section on a denied card


def test_a_patch_has_no_exit_code_and_undo_counts_in_english(kernel: Kernel) -> None:
    script = [[custom_tool_call("apply_patch", PATCH, "p1")], [message("ok")]]
    answer_all(kernel, script, "-a untrusted", "Approve", 1)
    assert (kernel.ws / "note.txt").read_text() == "one\n"
    assert titles(kernel) == ["Output (2 lines)"]  # Success. ... / A note.txt
    assert "Output (2 lines)" in read(kept(kernel, "text/html"))
    assert "exit code" not in read(kept(kernel, "text/html")) + kept(kernel, "text/markdown")
    asked = kernel.outputs_text(kernel.run("%agent undo"))
    assert asked.startswith(
        "Undo restores 1 file to its state before the agent's tools wrote it: note.txt."
    ), asked


def test_a_kernel_tools_arguments_are_shown_once(kernel: Kernel) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbformat.write(nbformat.v4.new_notebook(), str(kernel.ws / "nb.ipynb"))
    kernel.run("df_x = [1, 2, 3]")
    script = [
        [
            function_call("list_variables", {}, "l1"),
            function_call("inspect_variable", {"name": "df_x"}, "i1"),
            function_call("read_notebook", {"path": "nb.ipynb"}, "n1"),
            # (grep_files is off by default: its card shows the call all the same)
            function_call("grep_files", {"pattern": "zzz", "path": ".", "limit": 5}, "g1"),
        ],
        [message("ok")],
    ]
    answer_all(kernel, script, "-a on-request", "Approve", 0)
    saved_html, saved_markdown = kept(kernel, "text/html"), kept(kernel, "text/markdown")
    for shown in ("\n".join(kernel.html_values()), saved_html):
        assert "<b>list_variables</b> · " in shown  # no arguments: nothing shown
        assert '<b>inspect_variable</b> <code>{"name": "df_x"}</code>' in shown
        assert '<b>read_notebook</b> <code>{"path": "nb.ipynb"}</code>' in shown
        assert "{}" not in shown and '"name": "df_x"\n' not in shown  # no JSON body
        assert '"path": "nb.ipynb"\n' not in shown
        assert "<b>grep_files</b> <code>zzz in .</code>" in shown  # in its own terms
        assert '{\n  "limit": 5\n}</pre>' in shown and '"pattern"' not in shown  # the rest
    assert "**list_variables** · done" in saved_markdown and "{}" not in saved_markdown


def test_the_cards_text_is_spaced_like_output_text(kernel: Kernel) -> None:
    """The transcript's widgets carry the rule that spaces their text (checked in a
    browser in tests/jupyter/ui/test_browser.py)."""
    script = [[function_call("exec_command", {"cmd": "touch x.txt"}, "c1")], [message("ok")]]
    with ScriptedResponsesServer(script) as server:
        kernel.execute(agent_cell(server.base_url, "-a untrusted"))
        asking(kernel, 1)
        roots = [
            s for s in kernel.states.values() if "agent-magics-live" in s.get("_dom_classes", ())
        ]
        assert len(roots) == 1
        css = [v for v in kernel.html_values() if v.startswith("<style>")]
        assert css and "line-height:var(--jp-code-line-height" in css[0]
        kernel.click(kernel.buttons("Deny")[-1])
        kernel.wait_for(lambda: kernel.shows(TURN_DONE), timeout=60)
