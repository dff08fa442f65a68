"""What a person approves is what runs: every character that would hide part of a
command, a patch or code is written out, the same way, wherever such a text is shown:
the terminal's question, the cards, the transcripts, the exports, ``%agent history``."""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_magics.events import AgentSpawned, AgentStatusChanged, FileDiff, ToolCallProposed
from agent_magics.protocol.approval import ApprovalRequest
from agent_magics.terminal.console import TerminalConsole, question
from agent_magics.testing import custom_tool_call, function_call
from agent_magics.text.visible import hidden, visible
from agent_magics.transcript import card_text, markdown, static_html
from agent_magics.transcript import html as render
from agent_magics.transcript.export_html import to_html
from agent_magics.transcript.export_md import to_markdown
from agent_magics.transcript.history import history_text
from agent_magics.transcript.ipynb import to_notebook
from agent_magics.transcript.model import ToolBlock, Transcript
from agent_magics.transcript.saved import fold
from agent_magics.transcript.terminal import Style
from agent_magics.transcript.turn_diff import turn_diff_html, turn_diff_markdown
from tests.helpers.visible_text import read_back

# Trojan Source (CVE-2021-42574): reads as a comparison with a string, compares with
# "user<RLO> <LRI>" and runs the rest.
TROJAN = 'if access != "user\u202e \u2066# admin only\u2069 \u2066":\n    os.remove("x")'
TROJAN_SHOWN = (
    'if access != "user<U+202E> <U+2066># admin only<U+2069> <U+2066>":\n    os.remove("x")'
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("ls -la | grep 'a b'", "ls -la | grep 'a b'", id="plain"),
        pytest.param("echo hello\x1b[;rm -f precious.txt", r"echo hello\x1b[;rm -f precious.txt",
                     id="escape-that-erased-rm"),
        pytest.param("echo hi\x1b]52;c;eA==\x07", r"echo hi\x1b]52;c;eA==\x07", id="osc52"),
        pytest.param("\x9b2J", r"\x9b2J", id="c1-csi"),
        pytest.param("safe\rrm -rf ~", r"safe\x0drm -rf ~", id="lone-cr"),
        pytest.param("a\r\nb", "a\\x0d\nb", id="crlf-cr-shown"),
        pytest.param("for x in y:\n\tprint(x)\n", "for x in y:\n\tprint(x)\n", id="layout-kept"),
        pytest.param("\x00\x08\x0b\x0c\x1f\x7f\x85", r"\x00\x08\x0b\x0c\x1f\x7f\x85",
                     id="c0-del-c1"),
        pytest.param("\u202a\u202b\u202c\u202d\u202e", "<U+202A><U+202B><U+202C><U+202D><U+202E>",
                     id="bidi-embeddings"),
        pytest.param("\u2066\u2067\u2068\u2069", "<U+2066><U+2067><U+2068><U+2069>",
                     id="bidi-isolates"),
        pytest.param("\u200e\u200f\u061c", "<U+200E><U+200F><U+061C>", id="bidi-marks"),
        pytest.param("r\u200bm \u200c\u200d\u2060\ufeff",
                     "r<U+200B>m <U+200C><U+200D><U+2060><U+FEFF>", id="zero-width"),
        pytest.param("rm\u00ad -rf", "rm<U+00AD> -rf", id="soft-hyphen"),
        pytest.param("a\u2028b\u2029c", "a<U+2028>b<U+2029>c", id="line-separators"),
        pytest.param("x\U000e0072\U000e006d", "x<U+E0072><U+E006D>", id="tag-characters"),
        pytest.param("\ufe0f\u034f\u3164\u115f\uffa0\u180b",
                     "<U+FE0F><U+034F><U+3164><U+115F><U+FFA0><U+180B>", id="draw-nothing"),
        pytest.param("\ud800 \u0378", "<U+D800> <U+0378>", id="surrogate-unassigned"),
        pytest.param(TROJAN, TROJAN_SHOWN, id="trojan-source"),
        pytest.param("über ✓ 日本 — «ok»", "über ✓ 日本 — «ok»", id="unicode-kept"),
        pytest.param(r"printf '\n\t%s\\'", r"printf '\n\t%s\\'", id="backslashes-kept"),
        pytest.param(r"printf '\x1b[31m'", r"printf '\x5cx1b[31m'", id="literal-hex-escape"),
        pytest.param(r"\xZZ \x4", r"\xZZ \x4", id="not-an-escape"),
        pytest.param("cat <U+202E> out", "cat <U+003C>U+202E> out", id="literal-marker"),
        pytest.param("<u+200b> <U+20> <b>", "<U+003C>u+200b> <U+20> <b>", id="markers-only"),
    ],
)  # fmt: skip
def test_visible(text: str, shown: str) -> None:
    assert visible(text) == shown
    assert read_back(shown) == text


def test_every_code_point_is_shown_so_it_reads_back_and_hides_nothing() -> None:
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    shown = visible(every)
    assert read_back(shown) == every
    assert [c for c in set(shown) if hidden(c)] == []
    assert re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", shown) is None


# -- every place a command, a patch or code is shown -----------------------------------------

COMMAND = "echo hello\x1b[;rm -f precious.txt\u200b"
PATCH = (
    "*** Begin Patch\n*** Add File: ok\u202e.py\n+x = 1\u2067\n*** Update File: b.py\n"
    "@@\n-a\r\n+b\x1b[2K\n*** End Patch\n"
)
CELL = "print('hi')\u202e"
MCP_ARGS = json.dumps({"q": "drop\u202e"}, ensure_ascii=False)


def shown_text(text: str) -> str:
    """What a person reads of HTML or markdown: tags left out (not our markers, which
    markdown keeps as they are), entities read."""
    return html.unescape(re.sub(r"<(?!U\+[0-9A-F]{4,6}>)[^>]*>", "", text))


def assert_written_out(text: str, *markers: str) -> None:
    raw = [f"U+{ord(c):04X}" for c in text if hidden(c)]
    assert raw == [], f"hidden characters shown raw: {raw}"
    read = shown_text(text)
    for marker in markers:
        assert marker in read, marker


CELL_EDIT = {"path": "n.ipynb", "edit_mode": "insert", "cell_type": "code", "new_source": CELL}
CARDS = [  # a call, and an escape its card must show
    (ToolBlock("c1", "exec_command", json.dumps({"cmd": COMMAND, "workdir": "w\u202e"})),
     r"\x1b[;rm"),
    (ToolBlock("c2", "run_python", json.dumps({"code": TROJAN})), "<U+2066>"),
    (ToolBlock("c3", "apply_patch", PATCH, kind="custom"), "<U+2067>"),
    (ToolBlock("c4", "edit_notebook", json.dumps(CELL_EDIT)), "<U+202E>"),
    (ToolBlock("c5", "mcp__db__query", MCP_ARGS), "<U+202E>"),
]  # fmt: skip


def blocks() -> list[ToolBlock]:
    return [block for block, _marker in CARDS]


@pytest.mark.parametrize(("block", "marker"), CARDS, ids=[b.tool_name for b, _m in CARDS])
def test_cards_and_transcripts(block: ToolBlock, marker: str) -> None:
    # short JSON arguments (an MCP tool's) are shown in the header only
    card = render.card_header_html(block) + render.arguments_html(block)
    assert_written_out(card, marker)
    assert_written_out(render.card_header_html(block))
    assert_written_out(markdown.tool_markdown(block), marker)
    assert_written_out(static_html.tool_html(block, static_html.ImageBudget()), marker)


def test_the_trojan_source_card_reads_as_what_runs() -> None:
    code = render.arguments_html(blocks()[1])
    assert TROJAN_SHOWN in shown_text(code)


def test_a_whole_transcript_and_the_turn_diff() -> None:
    t = Transcript()
    t.blocks.extend(blocks())
    diff = (FileDiff("ok\u202e.py", "added", "+x = 1\u2067\n+y\x1b[2K\n"),)
    for text in (
        static_html.transcript_html(t),
        markdown.transcript_markdown(t),
        turn_diff_html(diff),
        turn_diff_markdown(diff),
    ):
        assert_written_out(text, "<U+202E>", "<U+2067>")
    assert_written_out(turn_diff_markdown(diff), r"\x1b[2K")


def test_the_question_on_a_card_shows_the_reason_written_out() -> None:
    request = ApprovalRequest(
        "c", "exec_command", "exec", Path("."), command=("./ls\u202e",), reason="why\u202e",
        rule="the program ./ls\u202e lies where commands may write",
        session_scope="this same command (./ls\u202e)",
    )  # fmt: skip
    block = ToolBlock("c", "exec_command", json.dumps({"cmd": "ls"}), request=request)
    question = card_text.question_html(block)
    assert "\u202e" not in question
    assert "The model's reason: why&lt;U+202E&gt;" in question
    assert "Why you are asked: the program ./ls&lt;U+202E&gt; lies" in question
    assert "Approve for session: this same command (./ls&lt;U+202E&gt;)" in question


@pytest.mark.parametrize(
    ("request_", "markers"),
    [
        (ApprovalRequest("c", "exec_command", "exec", Path("."),
                         command=("/bin/bash", "-lc", COMMAND), retry_without_sandbox=True),
         (r"\x1b[;rm", "<U+200B>")),
        (ApprovalRequest("c", "apply_patch", "patch", Path("."), patch=PATCH),
         ("<U+202E>", "<U+2067>", r"-a\x0d", r"+b\x1b[2K")),
        (ApprovalRequest("c", "mcp__db__query", "mcp", Path("."), reason="Run it?", server="db",
                         mcp_tool="query", arguments=MCP_ARGS),
         ("<U+202E>",)),
        (ApprovalRequest("c", "run_python", "exec", Path("."), command=(TROJAN,)),
         ("<U+202E>", "<U+2066>")),
    ],
    ids=["exec-unsandboxed", "patch", "mcp", "run-python"],
)  # fmt: skip
def test_the_terminal_question(request_: ApprovalRequest, markers: tuple[str, ...]) -> None:
    for style in (Style(), Style(colour=True)):
        ours = re.sub(r"\x1b\[\d+m", "", question(request_, style))  # our colours
        assert_written_out(ours, *markers)
    if request_.command:  # the command or the code, read back, is what runs
        shown = question(request_).split("\n", 2)[2].rsplit("\n", 1)[0]
        shown = shown.removesuffix("\n  in .")  # where a command runs, on a line of its own
        assert read_back(shown.replace("\n  ", "\n").removeprefix("  ")) == request_.command[-1]


def test_the_terminal_shows_each_call_as_it_comes(capsys: pytest.CaptureFixture[str]) -> None:
    console = TerminalConsole(interactive=False, style=Style())
    for n, (tool, kind, arguments) in enumerate([
        ("exec_command", "function", json.dumps({"cmd": COMMAND})),
        ("apply_patch", "custom", PATCH),
        ("mcp__db__query", "function", MCP_ARGS),
    ]):  # fmt: skip
        console.report(ToolCallProposed(f"c{n}", tool, arguments, kind))
    printed = capsys.readouterr().err
    assert_written_out(printed, r"\x1b[;rm", "<U+200B>", "<U+202E>", "<U+2067>", r"-a\x0d")
    assert f"exec {visible(COMMAND)}\n" in printed


def test_the_terminal_writes_out_a_helpers_task_and_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """exec's ``[Nick] started: <task>`` and ``[Nick] completed: <answer>`` lines show the
    model's text as every other line does: an escape written out, not dropped; a bidi
    control named, not obeyed."""
    console = TerminalConsole(interactive=False, style=Style())
    console.report(AgentSpawned("s1", "agent-a", "Ada", 1, "fix \x1b[2Kthe \u202eabc"))
    console.report(AgentStatusChanged("agent-a", "completed", "did \x1b]0;x\x07it\u2067 ok\rdone"))
    printed = capsys.readouterr().err
    assert_written_out(printed, r"\x1b[2K", "<U+202E>", r"\x1b]0;x\x07", "<U+2067>", r"ok\x0ddone")
    assert "[Ada] started: fix " in printed and "[Ada] completed: did " in printed


def session_records() -> list[dict[str, Any]]:
    items = [
        function_call("exec_command", {"cmd": COMMAND}, "c1"),
        function_call("run_python", {"code": TROJAN}, "c2"),
        custom_tool_call("apply_patch", PATCH, "c3"),
    ]
    head = {"type": "turn_started", "turn": 1, "time": "t", "prompt": "go"}
    diff = {"path": "ok\u202e.py", "status": "added", "diff": "+x = 1\u2067\r\n+y\u2028z\n"}
    return [
        head,
        *({"type": "item", "turn": 1, "item": i} for i in items),
        {"type": "turn_diff", "turn": 1, "files": [diff]},
    ]


def test_the_exports_and_the_history() -> None:
    doc = fold({"id": "s"}, session_records())
    nb = to_notebook(doc)
    sources = "\n".join(c.source for c in nb.cells)
    for text in (to_markdown(doc), to_html(doc), sources):
        assert_written_out(text, r"\x1b[;rm", "<U+200B>", "<U+202E>", "<U+2067>")
        assert_written_out(text, r"+x = 1<U+2067>\x0d", "+y<U+2028>z")  # the turn's diff
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert code[1] == TROJAN_SHOWN
    assert [read_back(c) for c in code] == [COMMAND, TROJAN, PATCH]
    items = [r["item"] for r in session_records() if r["type"] == "item"]
    assert_written_out(history_text(items), r"\x1b[;rm", "<U+202E>")
