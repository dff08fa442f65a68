"""The pure render functions and the transcript state: exact strings."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from agent_magics.events import (
    ApprovalDecided,
    ApprovalRequested,
    AssistantMessage,
    ContextWindowNoted,
    McpServerFailed,
    McpServerReady,
    PlanStep,
    PlanUpdated,
    SandboxUnavailable,
    SandboxWeakness,
    TextDelta,
    ToolCallFinished,
    ToolCallProposed,
    ToolCallStarted,
    ToolOutputDelta,
    TurnAbortedEvent,
    TurnFinished,
    TurnStarted,
    Usage,
)
from agent_magics.jupyter.ui import info
from agent_magics.jupyter.ui.throttle import Throttle
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision
from agent_magics.transcript import calls, card_text, markdown
from agent_magics.transcript import html as render
from agent_magics.transcript.model import NoticeBlock, ToolBlock, Transcript, output_parts

PATCH = (
    "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Update File: b.py\n@@\n-x\n+y\n*** End Patch\n"
)
RED, GREEN, BLUE, PURPLE = "#cf222e", "#1a7f37", "#0969da", "#8250df"
PRE = f'<pre style="{render.PRE_STYLE}">'


DEEP_JSON = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
"""Nested past Python's recursion limit: an MCP result can be this (it crashed the card)."""


def args(**kw: object) -> str:
    return json.dumps(kw)


@pytest.mark.parametrize(
    ("tool", "arguments", "kind", "expected"),
    [
        pytest.param("exec_command", args(cmd="ls -la"), "function", "ls -la", id="exec"),
        pytest.param(
            "shell",
            args(command=["bash", "-lc", "echo 'a b'"]),
            "function",
            "bash -lc 'echo '\"'\"'a b'\"'\"''",
            id="shell-argv",
        ),
        pytest.param("shell_command", args(command="pwd"), "function", "pwd", id="shell-command"),
        pytest.param(
            "exec_command",
            args(cmd="line one\nline two"),
            "function",
            "line one …",
            id="multi-line",
        ),
        pytest.param("exec_command", args(cmd="x" * 130), "function", "x" * 119 + " …", id="long"),
        pytest.param("apply_patch", PATCH, "custom", "Add a.txt, Update b.py", id="patch"),
        pytest.param(
            "apply_patch",
            args(input=PATCH),
            "function",
            "Add a.txt, Update b.py",
            id="patch-json",
        ),
        pytest.param("read_file", args(file_path="/w/a.py"), "function", "/w/a.py", id="read"),
        pytest.param("list_dir", args(dir_path="/w"), "function", "/w", id="list"),
        pytest.param("view_image", args(path="p.png"), "function", "p.png", id="image"),
        pytest.param(
            "grep_files", args(pattern="TODO", path="src"), "function", "TODO in src", id="grep"
        ),
        pytest.param(
            "write_stdin",
            args(session_id=7, chars="q\n"),
            "function",
            'session 7: "q\\n"',
            id="stdin",
        ),
        pytest.param("write_stdin", args(session_id=7), "function", "session 7 (poll)", id="poll"),
        pytest.param(
            "update_plan",
            args(plan=[{"step": "a", "status": "pending"}]),
            "function",
            "1 step",
            id="plan",
        ),
        pytest.param("run_cell", args(cell_id="c3"), "function", "cell c3", id="run-cell"),
        pytest.param("run_cell", args(index=2), "function", "cell at index 2", id="run-index"),
        pytest.param(
            "run_cell", args(source="df.plot()"), "function", "new cell: df.plot()", id="run-new"
        ),
        pytest.param(
            "run_cell",
            args(cell_id="c3", source="x"),
            "function",
            "new cell after cell c3: x",
            id="run-new-after",
        ),
        pytest.param("mcp__x", args(q=1), "function", '{"q": 1}', id="other"),
        pytest.param("exec_command", "{not json", "function", "{not json", id="bad-json"),
    ],
)
def test_call_summary(tool: str, arguments: str, kind: str, expected: str) -> None:
    assert calls.call_summary(tool, arguments, kind) == expected


def test_diff_is_coloured_line_by_line() -> None:
    assert render.diff_html("*** Add File: a<b>\n+new\n-old\n@@ ctx\n same") == (
        PRE
        + f'<span style="color:{BLUE}">*** Add File: a&lt;b&gt;</span>\n'
        + f'<span style="color:{GREEN}">+new</span>\n'
        + f'<span style="color:{RED}">-old</span>\n'
        + f'<span style="color:{PURPLE}">@@ ctx</span>\n'
        + " same</pre>"
    )


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        pytest.param(
            ToolBlock("c", "exec_command", args(cmd="rm -rf <x>", workdir="sub")),
            f"{PRE}$ rm -rf &lt;x&gt;</pre><div>in <code>sub</code></div>",
            id="command",
        ),
        pytest.param(
            ToolBlock("c", "read_file", args(file_path="a&b.py")),
            "",  # the header names the path
            id="path",
        ),
        pytest.param(ToolBlock("c", "update_plan", args(plan=[])), "", id="plan"),
        pytest.param(ToolBlock("c", "mcp__t", args(a=1)), "", id="json-in-the-header"),
        pytest.param(ToolBlock("c", "list_variables", "{}"), "", id="no-arguments"),
        pytest.param(
            ToolBlock("c", "grep_files", args(pattern="x", path="src", limit=5)),
            f'{PRE}{{\n  "limit": 5\n}}</pre>',
            id="what-the-header-does-not-say",
        ),
        pytest.param(ToolBlock("c", "grep_files", args(pattern="x")), "", id="all-in-the-header"),
        pytest.param(
            ToolBlock("c", "mcp__t", args(a="x" * 120)),
            f'{PRE}{{\n  "a": "{"x" * 120}"\n}}</pre>',
            id="json-too-long-for-the-header",
        ),
    ],
)
def test_arguments_html(block: ToolBlock, expected: str) -> None:
    assert render.arguments_html(block) == expected


def decided(decision: ReviewDecision, *, remembered: bool = False, policy: bool = False) -> str:
    block = ToolBlock("c", "exec_command", args(cmd="ls"), decision=decision)
    block.remembered, block.decided_by_policy = remembered, policy
    return calls.decision_text(block)


def test_decision_texts() -> None:
    assert decided(ReviewDecision.APPROVED) == "approved"
    assert decided(ReviewDecision.APPROVED_FOR_SESSION) == "approved for this session"
    assert decided(ReviewDecision.APPROVED_FOR_SESSION, remembered=True) == (
        "approved earlier for this session"
    )
    assert decided(ReviewDecision.DENIED) == ""
    assert decided(ReviewDecision.DENIED, policy=True) == "by the headless policy"
    assert decided(ReviewDecision.ABORT) == ""


def test_card_header() -> None:
    block = ToolBlock("c", "exec_command", args(cmd="make <all>"), status="done")
    block.decision = ReviewDecision.APPROVED
    # The command shows once, in the body; the decision has its own line.
    assert render.card_header_html(block) == (
        f'<b>exec_command</b> · <span style="color:{GREEN};font-weight:600">done</span>'
    )
    path = ToolBlock("c", "read_file", args(file_path="a.py"), status="done")
    assert render.card_header_html(path) == (
        f'<b>read_file</b> <code>a.py</code> · <span style="color:{GREEN};font-weight:600">'
        "done</span>"
    )


def test_mcp_cards_name_the_server_and_the_tool() -> None:
    t = Transcript()
    t.apply(TurnStarted("go"))
    call = ToolCallProposed("c", "mcp__time__now", args(tz="UTC"), server="time", mcp_tool="now")
    block = t.apply(call)
    assert isinstance(block, ToolBlock) and block.label == "time · now"
    assert render.card_header_html(block) == (
        '<b>time · now</b> <code>{"tz": "UTC"}</code> · '
        '<span style="color:#6e7781;font-weight:600">queued</span>'
    )
    assert markdown.tool_markdown(block).startswith('**time · now** `{"tz": "UTC"}` · queued')


@pytest.mark.parametrize(
    ("event", "kind", "text"),
    [
        pytest.param(
            McpServerFailed("docs", "timed out after 10 s", "logs/mcp-docs.log"),
            "error",
            "MCP server 'docs' is not available: timed out after 10 s. Its tools answer the "
            "model with an error. Its log: logs/mcp-docs.log",
            id="failed",
        ),
        pytest.param(
            McpServerFailed("web", "HTTP 404 from the URL.", None),
            "error",
            "MCP server 'web' is not available: HTTP 404 from the URL. Its tools answer the "
            "model with an error.",
            id="failed-http",
        ),
        pytest.param(
            McpServerReady("time", "stdio", ("a", "b")),
            "info",
            "MCP server 'time' is ready: 2 tools.",
            id="ready",
        ),
        pytest.param(SandboxUnavailable("No sandbox."), "error", "No sandbox.", id="sandbox"),
        pytest.param(SandboxWeakness("Key readable."), "error", "Key readable.", id="weakness"),
        pytest.param(ContextWindowNoted("Window unknown."), "info", "Window unknown.", id="window"),
    ],
)
def test_session_notices(event: Any, kind: str, text: str) -> None:
    t = Transcript()
    block = t.apply(event)
    assert isinstance(block, NoticeBlock) and (block.kind, block.text) == (kind, text)
    color = "#cf222e" if kind == "error" else "#6e7781"
    assert render.notice_html(block) == f'<div style="color:{color}"><i>{text}</i></div>'


def test_question_names_the_rule_the_reason_and_the_sandbox_retry() -> None:
    request = ApprovalRequest(
        "c", "exec_command", "exec", Path("/w"), reason="needs <net>", rule="A <rule>."
    )
    block = ToolBlock("c", "exec_command", "{}", request=request)
    assert card_text.question_html(block) == (
        "<b>Allow this call?</b><div>Why you are asked: A &lt;rule&gt;.</div>"
        "<div>The model's reason: needs &lt;net&gt;</div>"
    )
    block.request = ApprovalRequest(
        "c", "x", "exec", Path("/w"), reason="r", retry_without_sandbox=True, rule="Blocked."
    )
    assert card_text.question_html(block) == (
        "<b>Allow this call? (it would run without the sandbox)</b>"
        "<div>Why you are asked: Blocked.</div>"
    )


@pytest.mark.parametrize(
    ("tool", "output", "expected"),
    [
        pytest.param(
            "exec_command",
            "Chunk ID: ab\nWall time: 0.1 seconds\nProcess exited with code 3\n"
            "Original token count: 2\nOutput:\nboom\n",
            ("boom", 3),
            id="unified-exec",
        ),
        pytest.param(
            "shell_command",
            "Exit code: 0\nWall time: 0.1 seconds\nOutput:\na\nb\n",
            ("a\nb", 0),
            id="shell-command",
        ),
        pytest.param(
            "apply_patch",
            json.dumps({"output": "Success.\n", "metadata": {"exit_code": 0}}),
            ("Success.", None),  # a patch has no exit code
            id="structured-patch",
        ),
        pytest.param(
            "shell",
            json.dumps({"output": "no\n", "metadata": {"exit_code": 2}}),
            ("no", 2),
            id="structured-command",
        ),
        pytest.param("read_file", "L1: x", ("L1: x", None), id="plain"),
        pytest.param("mcp__s__t", DEEP_JSON, (DEEP_JSON, None), id="deeply-nested-json"),
    ],
)
def test_shown_output(tool: str, output: str, expected: tuple[str, int | None]) -> None:
    assert calls.shown_output(ToolBlock("c", tool, "{}", output=output)) == expected


def test_deeply_nested_arguments_show_as_text() -> None:
    assert calls.parse_arguments(DEEP_JSON) is None


def test_live_output_shows_while_running() -> None:
    block = ToolBlock("c", "exec_command", "{}", live_output="partial")
    assert calls.shown_output(block) == ("partial", None)


def test_output_titles() -> None:
    assert calls.output_title("") == "Output (empty)"
    assert calls.output_title("a") == "Output (1 line)"
    assert calls.output_title("a\nb", 0) == "Output (2 lines, exit code 0)"


def test_long_output_keeps_head_and_tail() -> None:
    text = "\n".join(f"l{i}" for i in range(10))
    assert calls.clip_output(text, max_lines=4) == "l0\nl1\n… 6 more lines …\nl8\nl9"
    assert calls.clip_output("abcdefghij", max_chars=4) == "ab\n… 6 more characters …\nij"
    assert render.output_html("<a>") == f'<pre style="{render.OUTPUT_STYLE}">&lt;a&gt;</pre>'


PLAN = PlanUpdated(
    "c",
    "why <now>",
    [PlanStep("read", "completed"), PlanStep("fix", "in_progress"), PlanStep("test", "pending")],
)


def test_plan_checklist_html() -> None:
    assert render.plan_html(PLAN) == (
        "<i>why &lt;now&gt;</i>"
        '<ul style="list-style:none;padding-left:0;margin:2px 0">'
        "<li>✔ <s>read</s></li><li>▶ <b>fix</b></li><li>○ test</li></ul>"
    )


def test_plan_checklist_markdown() -> None:
    assert markdown.plan_markdown(PLAN) == (
        "*why <now>*\n- [x] read\n- [ ] **fix** (in progress)\n- [ ] test"
    )


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        pytest.param(Usage(10, 0, 5, 0, 15), "Tokens: 10 in · 5 out · 15 total", id="plain"),
        pytest.param(
            Usage(1200, 1000, 340, 120, 1540),
            "Tokens: 1,200 in (1,000 cached) · 340 out (120 reasoning) · 1,540 total",
            id="details",
        ),
    ],
)
def test_usage_line(usage: Usage, expected: str) -> None:
    assert calls.usage_text(usage) == expected


def test_fences_outgrow_the_backticks_inside() -> None:
    assert markdown.fence("a", "text") == "```text\na\n```"
    assert markdown.fence("x ```` y") == "`````\nx ```` y\n`````"
    assert markdown.inline_code("a`b") == "``a`b``"
    assert markdown.inline_code("`a") == "`` `a ``"


def approval(call_id: str) -> ApprovalRequest:
    return ApprovalRequest(call_id, "exec_command", "exec", Path("/w"), command=("rm", "x"))


def test_transcript_folds_a_turn_and_renders_markdown() -> None:
    t = Transcript()
    events = [
        TurnStarted("go"),
        TextDelta("m1", "Let me "),
        TextDelta("m1", "look."),
        AssistantMessage("Let me look."),
        ToolCallProposed("c1", "exec_command", args(cmd="rm x")),
        ToolCallStarted("c1", "exec_command"),
        ApprovalRequested(approval("c1")),
    ]
    for e in events:
        t.apply(e)
    assert t.status == "waiting"
    t.apply(ApprovalDecided("c1", ReviewDecision.APPROVED, waited_s=123.0))
    assert t.status == "running"
    t.apply(ToolOutputDelta("c1", "gone\n"))
    output = "Exit code: 0\nOutput:\ngone\n"
    t.apply(ToolCallFinished("c1", "exec_command", output, True, 123.29))
    t.apply(AssistantMessage("Removed `x`."))
    t.apply(TurnFinished("Removed `x`.", Usage(10, 0, 5, 0, 15)))
    assert markdown.transcript_markdown(t) == (
        "Let me look.\n\n"
        "**exec_command** `rm x` · done (0.3 s, after waiting 2 min 3 s for you) · approved\n\n"
        "```console\n$ rm x\n```\n\n"
        "<details><summary>Output (1 line, exit code 0)</summary>\n\n"
        "```text\ngone\n```\n\n</details>\n\n"
        "Removed `x`.\n\n"
        "*Tokens: 10 in · 5 out · 15 total*"
    )


def test_headless_denial_is_explained() -> None:
    t = Transcript(policy_note="Denied: nobody can approve.")
    for e in [
        TurnStarted("go"),
        ToolCallProposed("c1", "exec_command", args(cmd="rm x")),
        ToolCallStarted("c1", "exec_command"),
        ApprovalRequested(approval("c1")),
        ApprovalDecided("c1", ReviewDecision.DENIED),
        ToolCallFinished("c1", "exec_command", "rejected", False, 0.0),
    ]:
        t.apply(e)
    assert markdown.tool_markdown(t.tools[0], t.policy_note) == (
        "**exec_command** `rm x` · denied · by the headless policy\n\n"
        "```console\n$ rm x\n```\n\n"
        "> Denied: nobody can approve."
    )  # the answer the model got ("rejected", Codex's words) is not the person's


def test_an_interrupt_closes_open_cards() -> None:
    t = Transcript()
    for e in [
        TurnStarted("go"),
        ToolCallProposed("c1", "exec_command", args(cmd="sleep 9")),
        ToolCallStarted("c1", "exec_command"),
        TurnAbortedEvent("interrupted"),
    ]:
        t.apply(e)
    assert t.tools[0].status == "aborted"
    assert calls.turn_status_text(t) == "Turn interrupted."
    assert markdown.transcript_markdown(t).endswith("**Turn interrupted.**")


@pytest.mark.parametrize(
    ("status", "message", "expected"),
    [
        pytest.param("starting", "", "<span>Starting…</span>", id="starting"),
        pytest.param("running", "", "<span>Working…</span>", id="running"),
        pytest.param(
            "waiting",
            "",
            '<span style="color:#9a6700">Waiting for your approval.</span>',
            id="waiting",
        ),
        pytest.param(
            "failed",
            "No API key <here>.",
            '<span style="color:#cf222e">No API key &lt;here&gt;.</span>',
            id="failed",
        ),
        pytest.param(
            "aborted",
            "exec command rejected by user",
            '<span style="color:#9a6700">Turn aborted.</span>',
            id="aborted",
        ),
    ],
)
def test_turn_status_html(status: str, message: str, expected: str) -> None:
    t = Transcript(status=status, message=message)  # type: ignore[arg-type]
    assert render.turn_status_html(t) == expected


def test_output_parts_split_text_and_images() -> None:
    content = [
        {"type": "input_text", "text": "a"},
        {"type": "input_image", "image_url": "data:image/png;base64,AA=="},
    ]
    assert output_parts(content) == ("a", ["data:image/png;base64,AA=="])
    assert output_parts("plain") == ("plain", [])


def test_tools_list() -> None:
    specs = [{"name": "exec_command", "description": "Run a command.\nMore."}, {"type": "x"}]
    assert info.tools_text(specs) == "exec_command         Run a command. …\nx"


class FakeTimer:
    def __init__(self, jobs: list[tuple[float, object]], entry: tuple[float, object]) -> None:
        self.jobs, self.entry = jobs, entry

    def cancel(self) -> None:
        if self.entry in self.jobs:
            self.jobs.remove(self.entry)


def test_throttle_draws_at_most_ten_times_a_second() -> None:
    now = [0.0]
    jobs: list[tuple[float, object]] = []

    def schedule(delay: float, fn: object) -> FakeTimer:
        entry = (now[0] + delay, fn)
        jobs.append(entry)
        return FakeTimer(jobs, entry)

    drawn: list[float] = []
    throttle = Throttle(lambda: drawn.append(now[0]), schedule, 0.1, lambda: now[0])
    for step in range(1000):  # a delta every millisecond for one second
        now[0] = step / 1000
        for due, fn in [j for j in jobs if j[0] <= now[0]]:
            jobs.remove((due, fn))
            fn()  # type: ignore[operator]
        throttle.poke()
    assert 9 <= len(drawn) <= 11
    assert all(b - a >= 0.1 - 1e-9 for a, b in itertools.pairwise(drawn))
    throttle.now()
    assert drawn[-1] == now[0] and not jobs


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        pytest.param("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok\n", "done", id="zero"),
        pytest.param(
            "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 127\n"
            "Original token count: 9\nOutput:\nbash: python: command not found\n",
            "failed",
            id="127",
        ),
        pytest.param(
            "Chunk ID: 1\nWall time: 1.0 seconds\nProcess running with session ID 3\n"
            "Original token count: 0\nOutput:\n",
            "done",
            id="still-running",
        ),
        pytest.param('{"output": "x\\n", "metadata": {"exit_code": 2}}', "failed", id="shell-json"),
    ],
)
def test_a_command_that_exits_with_an_error_is_headed_failed(answer: str, status: str) -> None:
    t = Transcript()
    t.apply(ToolCallProposed("c1", "exec_command", args(cmd="python x.py")))
    t.apply(ToolCallStarted("c1", "exec_command"))
    t.apply(ToolCallFinished("c1", "exec_command", answer, True, 0.1))
    assert f"· {status}" in markdown.transcript_markdown(t)


def test_a_long_output_is_a_bounded_box_with_the_cut_in_its_middle() -> None:
    """A 1,047-line output: a box of bounded height that scrolls, its head, the mark of
    what is left out, then its tail (live card and saved transcript alike)."""
    text = "\n".join(f"row {n}" for n in range(1047))
    shown = render.output_html(text)
    assert shown.startswith(f'<pre style="{render.OUTPUT_STYLE}">')
    assert "max-height:" in render.OUTPUT_STYLE and "overflow:auto" in render.OUTPUT_STYLE
    body = shown.removeprefix(f'<pre style="{render.OUTPUT_STYLE}">').removesuffix("</pre>")
    lines = body.splitlines()
    assert lines[0] == "row 0" and lines[-1] == "row 1046"
    assert lines[30] == "… 987 more lines …", lines[28:32]
