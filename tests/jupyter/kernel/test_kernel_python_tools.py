"""The person's Python functions as tools, and ``_agent``, in real kernels.

Like :mod:`tests.jupyter.ui.test_kernel`: every test runs once per kernel interpreter, the model is
a scripted Responses server in this process, and buttons are pressed with the comm
message a browser sends.
"""

from __future__ import annotations

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow


SCALE = '''
import agent_magics
from typing import Annotated

scaled = []

@agent_magics.tool
def scale(values: list[int], factor: Annotated[int, "what to multiply by"] = 2) -> list[int]:
    """Multiply every value by the factor."""
    scaled.append(values)
    return [v * factor for v in values]
'''


def has_record(kernel: Kernel) -> bool:
    return bool(kernel.value("'_agent' in get_ipython().user_ns"))


def test_a_decorated_function_is_offered_validated_and_called(kernel: Kernel) -> None:
    assert not [m for m in kernel.run(SCALE) if m["msg_type"] == "error"]
    script = [
        [function_call("scale", {"values": ["one"]}, "bad")],
        [function_call("scale", {"values": [1, 2], "factor": 3}, "good")],
        [message("Scaled: 3 and 6.")],
    ]
    with ScriptedResponsesServer(script) as server:
        # --background: the kernel answers `scaled` below while the card waits
        options = "-a on-request --background"
        kernel.run(agent_cell(server.base_url, options, "scale 1 and 2 by 3"))
        approve = kernel.wait_for(lambda: kernel.buttons("Approve"))[-1]
        # The bad call was answered to the model without asking anyone.
        assert len(server.requests) == 2
        bad = server.outputs(1)["bad"]
        assert bad.startswith("invalid arguments for scale: values.0: Input should be a valid")
        offered = {t.get("name") or t["type"]: t for t in server.requests[0]["tools"]}["scale"]
        assert offered["description"] == "Multiply every value by the factor."
        assert offered["parameters"] == {
            "additionalProperties": False,
            "properties": {
                "factor": {"default": 2, "description": "what to multiply by", "type": "integer"},
                "values": {"items": {"type": "integer"}, "type": "array"},
            },
            "required": ["values"],
            "type": "object",
        }
        assert kernel.shows("This runs your Python function in the kernel, outside the sandbox.")
        assert kernel.value("scaled") == []  # nothing ran before the click
        kernel.click(approve)
        kernel.wait_for(lambda: len(server.requests) == 3)
        assert server.outputs(2)["good"] == "[3,6]"
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
    assert kernel.value("scaled") == [[1, 2]]
    kernel.wait_for(lambda: has_record(kernel))
    # A following cell reads the turn as data.
    kernel.run("calls = [(c.tool, c.arguments, c.status) for c in _agent.calls]")
    assert kernel.value("calls") == [
        ("scale", {"values": ["one"]}, "failed"),
        ("scale", {"values": [1, 2], "factor": 3}, "completed"),
    ]
    assert kernel.value("(_agent.status, _agent.text, _agent.usage.total_tokens)") == (
        "done",
        "Scaled: 3 and 6.",
        45,
    )
    assert kernel.value("repr(_agent).splitlines()[0]") == (
        "<agent turn: done · 2 calls · 45 tokens (30 in, 15 out)>"
    )


def test_the_tool_magic_running_a_cell_again_and_the_tools_list(kernel: Kernel) -> None:
    kernel.run("def greet(name: str) -> str:\n    return 'hello ' + name\n")
    said = kernel.outputs_text(kernel.run("%agent tool greet --auto"))
    assert "greet is offered to the agent from the next turn (runs without asking)" in said
    # The defining cell, run again with another signature: the new function is offered.
    kernel.run("def greet(name: str, times: int = 1) -> str:\n    return 'hi ' * times + name\n")
    kernel.run("%agent tool greet --auto")
    listed = kernel.outputs_text(kernel.run("%agent tools"))
    assert "your Python functions" in listed
    assert "greet              auto  greet(name: str, times: int = 1) -> str" in listed
    script = [[function_call("greet", {"name": "Ada", "times": 2}, "g")], [message("greeted")]]
    with ScriptedResponsesServer(script) as server:
        kernel.run(agent_cell(server.base_url, "-a untrusted", "greet Ada"))
        kernel.wait_for(lambda: len(server.requests) == 2)
        assert server.outputs(1)["g"] == "hi hi Ada"  # "auto": no question, even untrusted
    kernel.wait_for(lambda: has_record(kernel))
    assert kernel.value("_agent.status") == "done"
    said = kernel.outputs_text(kernel.run("%agent tool --remove greet"))
    assert "greet is no longer offered" in said
    assert "greet" not in kernel.outputs_text(kernel.run("%agent tools"))


def test_a_failed_turn_leaves_its_record_too(kernel: Kernel) -> None:
    unreachable = "--base-url http://127.0.0.1:9/v1 -c request_max_retries=0"
    kernel.run(f"%%agent {unreachable} -c stream_max_retries=0\nhello")
    kernel.wait_for(lambda: has_record(kernel))
    status, error, calls = kernel.value("(_agent.status, _agent.error, _agent.calls)")
    assert (status, calls) == ("failed", ())
    assert error.startswith("Could not reach the model server at http://127.0.0.1:9/v1")
