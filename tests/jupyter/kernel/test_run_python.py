"""run_python against a real IPython shell: what the model reads, what the namespace keeps,
how a timeout or an interrupt stops the code, and the approval rule."""

from __future__ import annotations

import asyncio
import builtins
import io
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_magics.errors import RespondToModel, TurnAborted
from agent_magics.jupyter.kernel.capture import NO_INPUT
from agent_magics.jupyter.kernel.outputs import MAX_IMAGES, MAX_TRACEBACK_FRAMES, html_text
from agent_magics.jupyter.kernel.run_python import (
    BAD_TIMEOUT,
    EMPTY_CODE,
    MAX_TIMEOUT_MS,
    REJECTED,
    RunPythonHandler,
)
from agent_magics.protocol.approval import (
    ApprovalPolicy,
    ApprovalRequest,
    ReviewDecision,
    SandboxMode,
)
from agent_magics.tools.approval.requirement import KERNEL_READ_ONLY, PYTHON_IN_KERNEL
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import (
    FunctionPayload,
    SessionServices,
    ToolInvocation,
    ToolOutput,
    TurnContext,
)
from agent_magics.transcript.calls import call_summary
from agent_magics.transcript.html import PRE_STYLE, arguments_html, python_html
from agent_magics.transcript.markdown import tool_markdown
from agent_magics.transcript.model import ToolBlock


async def run(ip: Any, code: str, timeout_ms: float = 30_000, images: bool = True) -> ToolOutput:
    return await RunPythonHandler(ip).run(code, timeout_ms, images)


def png(width: int = 8, height: int = 6) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


# -- what the model reads ----------------------------------------------------------------


async def test_names_stay_and_outputs_come_back_in_order(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    count, last = shell.execution_count, shell.user_ns.get("_")
    out = await run(
        shell, "x = 41\nprint('hello')\nimport sys; print('oops', file=sys.stderr)\nx + 1"
    )
    assert out.success
    assert out.content.endswith("Output:\nhello\noops\nOut: 42\nNames defined: sys, x")
    assert shell.user_ns["x"] == 41
    assert (shell.execution_count, shell.user_ns.get("_")) == (count, last)  # In/Out untouched
    again = await run(shell, "x = x + 1\ndel sys")
    assert "Names rebound: x\nNames deleted: sys" in again.text and shell.user_ns["x"] == 42
    assert capsys.readouterr() == ("", "")  # nothing reached the person's output


async def test_a_call_leaves_no_callback_or_output_behind(shell: Any) -> None:
    # A display publisher registers callbacks in shell.events; the capture removes them,
    # so nothing keeps the call's outputs (the kernel test measures the memory).
    before = {event: list(fns) for event, fns in shell.events.callbacks.items()}
    await run(shell, "from IPython.display import display\ndisplay('shown')\nprint('x')")
    await run(shell, "print('y')")
    assert {event: list(fns) for event, fns in shell.events.callbacks.items()} == before


async def test_html_only_output_is_summarised(shell: Any) -> None:
    page = "<h1>Title</h1><script>x()</script><p>a &amp; b</p>"
    code = f"from IPython.display import HTML\nHTML({page!r})"
    out = await run(shell, code)
    assert "Out:\n[HTML] Title\na & b" in out.text
    assert html_text("<table><tr><td>1</td><td>2</td></tr></table>") == "1 2"


async def test_dataframe_repr_is_trimmed(shell: Any) -> None:
    pd = pytest.importorskip("pandas")
    shell.user_ns["frame"] = pd.DataFrame({"a": range(5_000), "b": ["text" * 10] * 5_000})
    out = await run(shell, "import pandas as pd\npd.set_option('display.max_rows', None)\nframe")
    await run(shell, "pd.reset_option('display.max_rows')")
    assert "chars truncated" in out.text and "4999" in out.text
    assert len(out.text.encode()) < 10_000


async def test_images_are_attached_up_to_the_limit(shell: Any) -> None:
    shell.user_ns["data"] = png()
    loop = f"for _ in range({MAX_IMAGES + 1}):\n    display(Image(data))"
    code = f"from IPython.display import Image, display\n{loop}"
    out = await run(shell, code)
    assert isinstance(out.content, list)
    images = [i for i in out.content if i["type"] == "input_image"]
    assert len(images) == MAX_IMAGES
    assert images[0]["image_url"].startswith("data:image/png;base64,")
    assert (
        f"[image {MAX_IMAGES + 1}: image/png 8×6, not sent: at most {MAX_IMAGES} per call]"
        in out.text
    )
    plain = await run(shell, "display(Image(data))", images=False)
    assert isinstance(plain.content, str)
    assert "[image 1: image/png 8×6, not shown: this model does not take images]" in plain.content


async def test_errors_show_the_last_frames_without_colours(shell: Any) -> None:
    code = (
        "def deep(n):\n    if n == 0:\n        raise ValueError('\\x1b[31mred\\x1b[0m')\n"
        "    deep(n - 1)\nprint('before')\ndeep(20)"
    )
    out = await run(shell, code)
    assert not out.success
    assert out.text.startswith("Failed with ValueError after ")
    hidden = 22 - MAX_TRACEBACK_FRAMES  # <module> and 21 calls of deep
    assert (
        "Output:\nbefore\nError:\nTraceback (most recent call last):\n"
        f"  … {hidden} earlier frames …\n" in out.text
    )
    assert "ValueError: red" in out.text and "\x1b" not in out.text
    assert "interactiveshell.py" not in out.text
    syntax = await run(shell, "x =")
    assert "SyntaxError: invalid syntax" in syntax.text and "Traceback" not in syntax.text


async def test_input_fails_at_once(shell: Any) -> None:
    original = builtins.input
    out = await run(shell, "answer = input('name? ')")
    assert f"EOFError: {NO_INPUT}" in out.text and "answer" not in shell.user_ns
    assert builtins.input is original


async def test_top_level_await_runs_on_the_loop(shell: Any) -> None:
    out = await run(shell, "import asyncio\nawait asyncio.sleep(0.01)\n'awaited'")
    assert "Out: 'awaited'" in out.text


# -- stopping ----------------------------------------------------------------------------


async def test_timeout_interrupts_a_busy_loop(shell: Any) -> None:
    out = await run(shell, "n = 0\nwhile True:\n    n += 1", timeout_ms=300)
    assert out.text.startswith("Interrupted: still running after the timeout of 300 ms")
    assert "KeyboardInterrupt" in out.text and "interrupt.py" not in out.text
    assert shell.user_ns["n"] > 0
    assert (await run(shell, "n = -1\nn")).text.endswith("Out: -1\nNames rebound: n")


async def test_timeout_cancels_an_awaiting_cell(shell: Any) -> None:
    out = await run(shell, "import asyncio\nawait asyncio.sleep(30)", timeout_ms=200)
    assert out.text.startswith("Interrupted") and "CancelledError" in out.text
    await asyncio.sleep(0.01)  # this task was not left cancelled


@pytest.fixture
def previous_handler() -> Iterator[list[int]]:
    seen: list[int] = []
    saved = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, saved)


async def test_a_person_interrupt_stops_the_code_and_the_turn(
    shell: Any, previous_handler: list[int]
) -> None:
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(TurnAborted, match="interrupted"):
        await run(shell, "import time\ntime.sleep(30)\nafter = 1")
    assert time.monotonic() - started < 10
    assert previous_handler == [signal.SIGINT]  # the turn's own stop was told too
    assert "after" not in shell.user_ns
    assert (await run(shell, "1")).text.endswith("Out: 1")


@pytest.mark.slow
async def test_a_late_timer_reaches_nothing(shell: Any, previous_handler: list[int]) -> None:
    # The timeout fires about when the code ends: whichever comes first, nothing else
    # (this coroutine, the previous handler) sees the timer's signal.
    for i in range(200):
        out = await run(shell, "import time\ntime.sleep(0.002)", timeout_ms=1 + i % 4)
        assert out.text.startswith(("Ran in", "Interrupted")), (i, out.text)
    time.sleep(0.05)
    assert previous_handler == []


# -- the handler as the router calls it ----------------------------------------------------


def invocation(
    arguments: dict[str, Any] | str,
    policy: ApprovalPolicy,
    services: SessionServices,
    sandbox: SandboxMode = SandboxMode.WORKSPACE_WRITE,
) -> ToolInvocation:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    turn = TurnContext(cwd=Path.cwd(), approval_policy=policy, sandbox_mode=sandbox)
    return ToolInvocation("c1", "run_python", FunctionPayload(raw), turn, services)


def answering(*decisions: ReviewDecision) -> tuple[SessionServices, list[ApprovalRequest]]:
    asked: list[ApprovalRequest] = []
    queue = list(decisions)

    async def approver(request: ApprovalRequest) -> ReviewDecision:
        asked.append(request)
        return queue.pop(0)

    return SessionServices(approver=approver), asked


async def test_denied_code_does_not_run(shell: Any) -> None:
    services, asked = answering(ReviewDecision.DENIED)
    inv = invocation({"code": "made = 1"}, ApprovalPolicy.ON_REQUEST, services)
    with pytest.raises(RespondToModel, match=REJECTED):
        await RunPythonHandler(shell).handle(inv)
    assert "made" not in shell.user_ns
    assert asked[0].reason == PYTHON_IN_KERNEL and list(asked[0].command) == ["made = 1"]


async def test_never_runs_without_asking(shell: Any) -> None:
    services, asked = answering()
    inv = invocation({"code": "made = 2"}, ApprovalPolicy.NEVER, services)
    await RunPythonHandler(shell).handle(inv)
    assert shell.user_ns["made"] == 2 and asked == []


async def test_approve_for_session_covers_later_calls(shell: Any) -> None:
    services, asked = answering(ReviewDecision.APPROVED_FOR_SESSION)
    handler = RunPythonHandler(shell)
    await handler.handle(invocation({"code": "a = 1"}, ApprovalPolicy.UNTRUSTED, services))
    await handler.handle(invocation({"code": "b = a + 1"}, ApprovalPolicy.UNTRUSTED, services))
    assert len(asked) == 1 and shell.user_ns["b"] == 2


async def test_read_only_never_refuses_with_one_sentence(shell: Any) -> None:
    services, asked = answering()
    inv = invocation({"code": "made = 3"}, ApprovalPolicy.NEVER, services, SandboxMode.READ_ONLY)
    with pytest.raises(RespondToModel) as refused:
        await RunPythonHandler(shell).handle(inv)
    assert str(refused.value) == KERNEL_READ_ONLY
    assert "made" not in shell.user_ns and asked == []


async def test_read_only_approve_for_session_covers_only_the_same_code(shell: Any) -> None:
    answers = (ReviewDecision.APPROVED_FOR_SESSION, ReviewDecision.APPROVED)
    services, asked = answering(*answers)
    handler = RunPythonHandler(shell)
    calls = ["n = 1", "n = 1", "n = 2"]
    for code in calls:
        inv = invocation({"code": code}, ApprovalPolicy.ON_REQUEST, services, SandboxMode.READ_ONLY)
        await handler.handle(inv)
    assert [list(r.command) for r in asked] == [["n = 1"], ["n = 2"]]
    assert shell.user_ns["n"] == 2


async def test_a_session_yes_does_not_carry_into_read_only(shell: Any) -> None:
    services, asked = answering(ReviewDecision.APPROVED_FOR_SESSION, ReviewDecision.DENIED)
    handler = RunPythonHandler(shell)
    await handler.handle(invocation({"code": "m = 1"}, ApprovalPolicy.UNTRUSTED, services))
    read_only = invocation(
        {"code": "m = 2"}, ApprovalPolicy.UNTRUSTED, services, SandboxMode.READ_ONLY
    )
    with pytest.raises(RespondToModel, match=REJECTED):
        await handler.handle(read_only)
    assert len(asked) == 2 and shell.user_ns["m"] == 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param({"code": "  \n"}, EMPTY_CODE, id="empty"),
        pytest.param({"code": "1", "timeout_ms": 0}, BAD_TIMEOUT, id="zero-timeout"),
        pytest.param({"code": "1", "timeout_ms": MAX_TIMEOUT_MS + 1}, BAD_TIMEOUT, id="too-long"),
        pytest.param({"code": 3}, "invalid type: integer `3`, expected a string", id="not-text"),
        pytest.param({}, "missing field `code`", id="no-code"),
    ],
)
async def test_bad_arguments_are_answered(
    shell: Any, arguments: dict[str, Any], message: str
) -> None:
    services, asked = answering()
    with pytest.raises(RespondToModel) as caught:
        await RunPythonHandler(shell).handle(invocation(arguments, ApprovalPolicy.NEVER, services))
    assert message in str(caught.value) and asked == []


def test_spec() -> None:
    wire = RunPythonHandler(None).spec(ToolsConfig()).to_wire()
    assert wire["name"] == "run_python" and wire["parameters"]["required"] == ["code"]
    assert "outside the sandbox" in wire["description"]
    assert RunPythonHandler(None).supports_parallel is False


# -- the card ------------------------------------------------------------------------------


def test_card_colours_the_code_and_says_where_it_runs() -> None:
    block = ToolBlock("c1", "run_python", json.dumps({"code": "x = 1  # one\nprint(x)"}))
    assert call_summary(block.tool_name, block.arguments) == "x = 1  # one …"
    assert arguments_html(block) == python_html("x = 1  # one\nprint(x)")
    assert python_html("x = 1") == (
        f'<pre style="{PRE_STYLE}">'
        'x <span style="color: #666">=</span> <span style="color: #666">1</span></pre>'
        '<div style="color:#6e7781"><i>Runs in your kernel, outside the sandbox.</i></div>'
    )
    block.images = ["data:image/png;base64,AAAA"]
    assert tool_markdown(block).split("\n\n")[1:3] == [
        "```python\nx = 1  # one\nprint(x)\n```",
        "*output image 1: shown in this output's HTML*",  # kept once, there
    ]
