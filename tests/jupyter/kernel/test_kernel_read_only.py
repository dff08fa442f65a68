"""Under the read-only sandbox, code that runs in the kernel's own process (run_python,
the person's functions) never runs without a person's yes, in real kernels (both
ipykernel lines) driven by the scripted model server: ``-a never`` refuses it with one
sentence the model reads and the turn goes on; ``-a on-request`` shows a card and runs
only after the click (the comm message a browser sends); a headless run, where nobody
can answer, runs none of it. A function the person registered with ``approval="auto"``
runs: that registration was their yes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.approval.requirement import KERNEL_READ_ONLY
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow

FUNCTIONS = """
import agent_magics

saved = []

@agent_magics.tool
def save(text: str) -> str:
    \"\"\"Keep a text.\"\"\"
    saved.append(text)
    return "saved"

@agent_magics.tool(approval="auto")
def lookup(key: str) -> str:
    \"\"\"Find a key.\"\"\"
    return "found " + key
"""


def writer(target: Path, line: str) -> str:
    """Code that appends ``line`` to ``target`` (outside the workspace)."""
    return f"with open({str(target)!r}, 'a') as f:\n    f.write({line + chr(10)!r})"


def python_call(call_id: str, code: str) -> dict[str, Any]:
    return function_call("run_python", {"code": code}, call_id)


def text_of(output: Any) -> str:
    if isinstance(output, str):
        return output
    return "\n".join(i.get("text", "") for i in output if i.get("type") == "input_text")


def finished_turns(kernel: Kernel) -> int:
    return sum(value.count(TURN_DONE) for value in kernel.html_values())


def test_never_refuses_kernel_code_with_one_sentence(kernel: Kernel) -> None:
    target = kernel.ws.parent / "outside.txt"
    assert not [m for m in kernel.run(FUNCTIONS) if m["msg_type"] == "error"]
    calls = [
        python_call("py", writer(target, "written")),
        function_call("save", {"text": "kept"}, "save"),
        function_call("lookup", {"key": "k"}, "lookup"),
    ]
    with ScriptedResponsesServer([calls, [message("went on")]]) as server:
        kernel.run(agent_cell(server.base_url, "-a never -s read-only"))
        kernel.wait_for(lambda: len(server.requests) == 2)
        outputs = server.outputs(1)
        assert text_of(outputs["py"]) == KERNEL_READ_ONLY
        assert outputs["save"] == KERNEL_READ_ONLY
        assert outputs["lookup"] == "found k"
        kernel.wait_for(lambda: finished_turns(kernel) == 1)  # the turn went on to its end
    assert not target.exists()
    assert kernel.value("saved") == []
    assert kernel.buttons("Approve") == []


def test_on_request_asks_and_runs_only_after_the_click(kernel: Kernel) -> None:
    target = kernel.ws.parent / "outside.txt"
    first, other = writer(target, "first"), writer(target, "other")
    script = [
        [python_call("c1", first)],
        [python_call("c2", first)],
        [python_call("c3", other)],
        [message("ok")],
    ]
    with ScriptedResponsesServer(script) as server:
        kernel.execute(agent_cell(server.base_url, "-a on-request -s read-only"))
        kernel.wait_for(lambda: kernel.buttons("Approve for session"))
        assert kernel.shows("outside the sandbox")
        assert not target.exists() and len(server.requests) == 1  # nothing ran before the click
        kernel.click(kernel.buttons("Approve for session")[-1])
        # The same code again runs without a question; other code asks again.
        kernel.wait_for(lambda: len(kernel.buttons("Approve")) == 2)
        assert len(server.requests) == 3
        assert text_of(server.outputs(2)["c2"]).startswith("Ran in")
        assert target.read_text() == "first\nfirst\n"
        kernel.click(kernel.buttons("Approve")[-1])
        kernel.wait_for(lambda: len(server.requests) == 4)
        assert text_of(server.outputs(3)["c3"]).startswith("Ran in")
        kernel.wait_for(lambda: finished_turns(kernel) == 1)
    assert target.read_text() == "first\nfirst\nother\n"


def test_headless_runs_none_of_it(kernel: Kernel) -> None:
    target = kernel.ws.parent / "outside.txt"
    code = writer(target, "written")
    assert not [m for m in kernel.run(FUNCTIONS) if m["msg_type"] == "error"]
    kernel.run('%config AgentMagics.headless = "always"')

    def calls(turn: int) -> list[dict[str, Any]]:
        save = function_call("save", {"text": "kept"}, f"save{turn}")
        return [python_call(f"py{turn}", code), save]

    script = [calls(1), [message("one")], calls(2), [message("two")]]
    with ScriptedResponsesServer(script) as server:
        kernel.run(agent_cell(server.base_url, "-a on-request -s read-only"), timeout=120)
        denied = server.outputs(1)
        assert "did not allow this code to run" in text_of(denied["py1"])
        assert denied["save1"] == "the person declined to run this function"
        kernel.run(agent_cell(server.base_url, "-a never -s read-only"), timeout=120)
        refused = server.outputs(3)
        assert (text_of(refused["py2"]), refused["save2"]) == (KERNEL_READ_ONLY, KERNEL_READ_ONLY)
    assert not target.exists()
    assert kernel.value("saved") == []
