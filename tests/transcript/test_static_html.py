"""The static transcript a saved cell keeps: HTML from a Transcript folded from the events
of a real session turn, compared as exact snippets."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_magics import ReviewDecision, Session, SessionConfig
from agent_magics.events import (
    ApprovalDecided,
    ApprovalRequested,
    Event,
    ToolCallFinished,
    ToolCallProposed,
    ToolCallStarted,
    TurnStarted,
)
from agent_magics.jupyter.ui.headless import StaticTranscript
from agent_magics.jupyter.ui.widgets import TranscriptView
from agent_magics.protocol.approval import ApprovalRequest
from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from agent_magics.transcript.html import COPY_SCRIPT, DONE_CLASS, OUTPUT_STYLE, PRE_STYLE
from agent_magics.transcript.model import Transcript
from agent_magics.transcript.static_html import (
    IMAGE_BUDGET_BYTES,
    TranscriptDocument,
    answer_html,
    transcript_html,
)

PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"
PLAN = {"plan": [{"step": "look", "status": "completed"}, {"step": "fix", "status": "pending"}]}
SCRIPT_OUT = "printf '<script>alert(1)</script>\\n'"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STATUS_ABORTED = '<span style="color:#6e7781;font-weight:600">aborted</span>'


async def folded_turn(tmp_path: Path) -> Transcript:
    """A real turn: a plan, a command (approved), a patch (denied), an image, an answer."""
    Image.new("RGB", (40, 30), "red").save(tmp_path / "red.png")
    script = [
        [function_call("update_plan", PLAN, "c0")],
        [function_call("exec_command", {"cmd": SCRIPT_OUT}, "c1")],
        [custom_tool_call("apply_patch", PATCH, "c2")],
        [function_call("view_image", {"path": "red.png"}, "c3")],
        [message("All <b>done</b>, see **red.png**.")],
    ]

    async def approve_commands(request: ApprovalRequest) -> ReviewDecision:
        return ReviewDecision.APPROVED if request.kind == "exec" else ReviewDecision.DENIED

    t = Transcript()
    events: list[Event] = []
    with ScriptedResponsesServer(script) as server:
        config = SessionConfig(
            model="m",
            base_url=server.base_url,
            cwd=tmp_path,
            api_key="sk-x",
            approval_policy="untrusted",
            allow_login_shell=False,
        )
        session = Session(config)
        session.approver = approve_commands
        session.subscribe(events.append)
        await session.run_turn("go")
        await session.aclose()
    for event in events:
        t.apply(event)
    return t


async def test_a_folded_turn_renders_every_call(tmp_path: Path) -> None:
    html = transcript_html(await folded_turn(tmp_path))
    assert '<span style="color:#cf222e;font-weight:600">denied</span>' in html
    assert '<div style="color:#cf222e;font-weight:600">✘ Denied by you</div>' in html
    assert "<b>apply_patch</b> <code>Add hello.txt</code>" in html
    assert '<span style="color:#1a7f37">+hi</span>' in html
    assert '<div style="color:#1a7f37;font-weight:600">✔ Approved by you</div>' in html
    assert (
        "<details><summary>Output (1 line, exit code 0)</summary>"
        f'<pre style="{OUTPUT_STYLE}">'
        "&lt;script&gt;alert(1)&lt;/script&gt;</pre></details>"
    ) in html
    assert "<script>" not in html
    assert "<li>✔ <s>look</s></li><li>○ fix</li>" in html
    image = f'<img src="data:image/png;base64,[A-Za-z0-9+/=]+" alt="{tmp_path}/red.png"'
    assert re.search(image, html)
    assert "<p>All &lt;b&gt;done&lt;/b&gt;, see <strong>red.png</strong>.</p>" in html
    assert f'<span class="{DONE_CLASS}"></span>' in html and "Done." not in html
    assert "Tokens: " in html


async def test_an_image_over_the_budget_becomes_a_note(tmp_path: Path) -> None:
    t = await folded_turn(tmp_path)
    image = t.tools[-1].image
    assert image is not None and image.data_url is not None
    html = transcript_html(t, image_budget=100)
    assert "<img" not in html
    assert (
        f"<i>{tmp_path}/red.png ({len(image.data_url) / 1e3:.1f} kB) is not kept: "
        "the saved transcript embeds at most "
        f"{IMAGE_BUDGET_BYTES / 1e6:g} MB of images.</i>"
    ) in html


def fold(*events: Event) -> Transcript:
    t = Transcript(policy_note="Denied: nobody can approve in a headless run.")
    for event in (TurnStarted("go"), *events):
        t.apply(event)
    return t


def args(**kw: Any) -> str:
    return json.dumps(kw)


def test_a_headless_denial_says_the_policy_denied() -> None:
    request = ApprovalRequest("c1", "exec_command", "exec", Path("/w"), command=("rm", "x"))
    t = fold(
        ToolCallProposed("c1", "exec_command", args(cmd="rm x")),
        ToolCallStarted("c1", "exec_command"),
        ApprovalRequested(request),
        ApprovalDecided("c1", ReviewDecision.DENIED),
        ToolCallFinished("c1", "exec_command", "rejected", False, 0.0),
    )
    html = transcript_html(t)
    assert ">denied</span></div>" in html
    assert "✘ Denied by the policy</div>" in html
    assert "<details>" not in html and "rejected" not in html  # nothing ran; Codex's text
    # (the answer the model got) is not the person's: they read the policy's note
    assert "<i>Denied: nobody can approve in a headless run.</i>" in html


def test_a_failed_command_shows_its_output_open() -> None:
    ran = "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code {}\nOutput:\n{}\n"
    t = fold(
        ToolCallProposed("c1", "exec_command", args(cmd="make")),
        ToolCallStarted("c1", "exec_command"),
        ToolCallFinished("c1", "exec_command", ran.format(2, "boom"), True, 0.1),
        ToolCallProposed("c2", "exec_command", args(cmd="ls")),
        ToolCallStarted("c2", "exec_command"),
        ToolCallFinished("c2", "exec_command", ran.format(0, "a.txt"), True, 0.1),
    )
    html = transcript_html(t)
    assert "<details open><summary>Output (1 line, exit code 2)</summary>" in html
    assert "<details><summary>Output (1 line, exit code 0)</summary>" in html


@pytest.mark.parametrize(
    ("url", "note"),
    [
        pytest.param("https://example.com/x.png", "not an embedded image", id="address"),
        pytest.param('data:image/png;base64,AA" onerror="x', "not an embedded image", id="quote"),
    ],
)
def test_only_embedded_images_are_kept(url: str, note: str) -> None:
    output = [{"type": "input_image", "image_url": url}]
    t = fold(
        ToolCallProposed("c1", "mcp__s__t", "{}"),
        ToolCallFinished("c1", "mcp__s__t", output, True, 0.1),
    )
    html = transcript_html(t)
    assert f"<i>output image 1: {note}, not kept.</i>" in html
    assert "<img" not in html and "onerror" not in html


def test_a_proposed_cell_keeps_its_copy_button_and_code_is_coloured() -> None:
    edit = args(path="a.ipynb", edit_mode="insert", cell_type="code", new_source="x = '<b>'")
    t = fold(
        ToolCallProposed("c1", "edit_notebook", edit),
        ToolCallProposed("c2", "run_python", args(code="print(1)")),
    )
    html = transcript_html(t)
    copy = f'<button class="agent-magics-copy" onclick="{escape(COPY_SCRIPT, quote=True)}">'
    assert html.count("<button") == 1 and html.count("onclick") == 1 and copy in html
    assert "<div>New code cell at the top of a.ipynb " in html
    assert f"<pre style=\"{PRE_STYLE}\">x = '&lt;b&gt;'</pre>" in html  # the text escaped
    assert '<span style="color: #008000">print</span>' in html


def test_a_cell_that_went_into_the_notebook_offers_no_copy() -> None:
    edit = args(path="a.ipynb", edit_mode="insert", cell_type="code", new_source="y = 2")
    landed = fold(
        ToolCallProposed("c1", "edit_notebook", edit),
        ToolCallFinished("c1", "edit_notebook", "Inserted code cell at the top", True, 0.1),
    )
    refused = fold(
        ToolCallProposed("c1", "edit_notebook", edit),
        ToolCallFinished("c1", "edit_notebook", "The notebook was not changed", False, 0.1),
    )
    assert "agent-magics-copy" not in transcript_html(landed)
    assert "<div>New code cell at the top of a.ipynb</div>" in transcript_html(landed)
    assert "agent-magics-copy" in transcript_html(refused)  # pasted by hand, from this copy


def test_answers_keep_markdown_and_drop_links_that_run_code() -> None:
    assert answer_html("[a](javascript:alert(1)) `<i>`") == (
        "<p>[a](javascript:alert(1)) <code>&lt;i&gt;</code></p>\n"
    )


def test_a_turn_cancelled_before_it_began_ends_as_aborted() -> None:
    shown: list[Any] = []

    class Handle:
        def update(self, obj: Any) -> None:
            shown.append(obj)

    view = StaticTranscript(lambda md: Handle(), lambda delay, fn: Handle())  # type: ignore[arg-type,return-value]
    view.mark_queued()
    view.finish()
    document = shown[-1]
    assert isinstance(document, TranscriptDocument)
    bundle = document._repr_mimebundle_()
    assert sorted(bundle) == ["text/html", "text/markdown", "text/plain"]
    assert "Turn aborted." in bundle["text/html"]


def test_the_widget_view_is_replaced_by_the_document() -> None:
    shown: list[Any] = []

    class Handle:
        def update(self, obj: Any) -> None:
            shown.append(obj._repr_mimebundle_())

    view = TranscriptView(lambda delay, fn: Handle())  # type: ignore[arg-type,return-value]
    assert WIDGET_VIEW in view.root._repr_mimebundle_()
    view.handle = Handle()
    view(TurnStarted("go"))
    view(ToolCallProposed("c1", "exec_command", args(cmd="sleep 9")))
    view.finish()
    assert len(shown) == 1 and WIDGET_VIEW not in shown[0]
    assert f"<b>exec_command</b> · {STATUS_ABORTED}" in shown[0]["text/html"]
    assert "$ sleep 9</pre>" in shown[0]["text/html"]
    assert ">aborted</span>" in shown[0]["text/html"]
    assert view.status.value == '<span style="color:#9a6700">Turn aborted.</span>'
