"""run_python in real kernels (both ipykernel lines), driven by the scripted model server:
the namespace it leaves, what reaches the model, denial, ``never``, the stop button and
the timeout. Clicks are the comm messages a browser sends."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow

FIGURE = (
    "import matplotlib.pyplot as plt\n"
    "made = [1, 4, 9]\n"
    "print('printed-by-agent', sum(made))\n"
    "plt.plot(made)\n"
    "None"
)


def python_call(call_id: str, code: str, **more: Any) -> dict[str, Any]:
    return function_call("run_python", {"code": code, **more}, call_id)


def text_of(output: Any) -> str:
    if isinstance(output, str):
        return output
    return "\n".join(i.get("text", "") for i in output if i.get("type") == "input_text")


def stream_text(kernel: Kernel) -> str:
    return "".join(m["content"]["text"] for m in kernel.log if m["msg_type"] == "stream")


def test_approved_code_leaves_its_names_and_its_outputs_reach_the_model(kernel: Kernel) -> None:
    with ScriptedResponsesServer([[python_call("c1", FIGURE)], [message("ok")]]) as server:
        kernel.execute(agent_cell(server.base_url, "-a on-request"))
        approve = kernel.wait_for(lambda: kernel.buttons("Approve"))[-1]
        assert kernel.shows("outside the sandbox")
        kernel.click(approve)
        kernel.wait_for(lambda: len(server.requests) == 2)
        output = server.outputs(1)["c1"]
        assert "printed-by-agent 14" in text_of(output)
        assert "Names defined: made, plt" in text_of(output)
        images = [i for i in output if i["type"] == "input_image"]
        assert len(images) == 1 and images[0]["image_url"].startswith("data:image/png;base64,")
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        following = kernel.run("print('next cell', made[-1] + 1)")
        assert "next cell 10" in kernel.outputs_text(following)
        assert "printed-by-agent" not in stream_text(kernel)  # not in the person's cells
        assert any(
            m["msg_type"] == "comm_open"
            and m["content"]["data"].get("state", {}).get("_model_name") == "ImageModel"
            for m in kernel.log
        )  # the card shows the figure


def test_denied_code_changes_nothing(kernel: Kernel) -> None:
    script = [[python_call("c1", "denied_name = 1")], [message("ok")]]
    with ScriptedResponsesServer(script) as server:
        kernel.execute(agent_cell(server.base_url, "-a untrusted"))
        kernel.click(kernel.wait_for(lambda: kernel.buttons("Deny"))[-1])
        kernel.wait_for(lambda: len(server.requests) == 2)
        assert "did not allow this code to run" in text_of(server.outputs(1)["c1"])
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        assert kernel.value("'denied_name' in globals()") is False


def test_never_runs_without_a_question(kernel: Kernel) -> None:
    script = [[python_call("c1", "quiet = 6 * 7\nquiet")], [message("ok")]]
    with ScriptedResponsesServer(script) as server:
        kernel.run(agent_cell(server.base_url, "-a never"))
        kernel.wait_for(lambda: len(server.requests) == 2)
        assert "Out: 42" in text_of(server.outputs(1)["c1"])
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        assert kernel.buttons("Approve") == []
        assert kernel.value("quiet") == 42


def test_the_stop_button_interrupts_the_code_and_the_kernel_stays_usable(kernel: Kernel) -> None:
    code = "open('started', 'w').close()\nimport time\ntime.sleep(60)\nafter_sleep = 1"
    with ScriptedResponsesServer([[python_call("c1", code)], [message("ok")]]) as server:
        kernel.execute(agent_cell(server.base_url, "-a never"))
        started = kernel.ws / "started"  # type: ignore[attr-defined]
        kernel.wait_for(lambda: started.exists())
        stopped_at = time.monotonic()
        kernel.km.interrupt_kernel()
        kernel.wait_for(lambda: kernel.shows("Turn interrupted."), timeout=30)
        print(f"stop button -> turn interrupted: {time.monotonic() - stopped_at:.3f} s")
        following = kernel.run("print('still here')", timeout=30)
        assert "still here" in kernel.outputs_text(following)
        assert kernel.value("'after_sleep' in globals()") is False
        assert len(server.requests) == 1  # the turn ended; the model was not asked again
        assert not [m for m in kernel.log if m["msg_type"] == "error"]


def test_the_timeout_interrupts_a_busy_loop(kernel: Kernel) -> None:
    code = "spins = 0\nwhile True:\n    spins += 1"
    script = [[python_call("c1", code, timeout_ms=500)], [message("ok")]]
    with ScriptedResponsesServer(script) as server:
        kernel.run(agent_cell(server.base_url, "-a never"))
        kernel.wait_for(lambda: len(server.requests) == 2, timeout=30)
        answer = text_of(server.outputs(1)["c1"])
        assert answer.startswith("Interrupted: still running after the timeout of 500 ms")
        assert "KeyboardInterrupt" in answer
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        assert kernel.value("spins") > 0


TEXTS = ["text/html", "text/markdown", "text/plain"]


def test_in_a_cell_that_awaits_the_turn(kernel: Kernel) -> None:
    # Headless: the turn, and so the code, runs inside the person's running cell.
    sleeper = "open('started', 'w').close()\nimport time\ntime.sleep(60)"
    script = [[python_call("c1", FIGURE)], [python_call("c2", sleeper)], [message("ok")]]
    with ScriptedResponsesServer(script) as server:
        kernel.run('%config AgentMagics.headless = "always"')
        msg_id = kernel.execute(agent_cell(server.base_url, "-a never"))
        started = kernel.ws / "started"  # type: ignore[attr-defined]
        kernel.wait_for(lambda: started.exists())
        assert "printed-by-agent 14" in text_of(server.outputs(1)["c1"])
        kernel.km.interrupt_kernel()
        kernel.wait_for(lambda: kernel.idle(msg_id), timeout=30)
        saved = [o["data"] for o in kernel.saved_outputs(msg_id) if "data" in o]
        kinds = [sorted(d) for d in saved]
        transcript = "".join(d.get("text/markdown", "") for d in saved)
        # the figure is kept once, as an output of its own, right below the card that drew it
        assert kinds == [TEXTS, ["image/png", "text/plain"], TEXTS], kinds
        assert saved[1]["text/plain"] == "<output image 1>"
        card, rest = saved[0]["text/markdown"], saved[2]["text/markdown"]
        assert f"```python\n{FIGURE}\n```" in card
        assert "*output image 1: shown below this card*" in card
        assert "time.sleep(60)" in rest and rest.endswith("**Turn interrupted.**")
        assert 'class="agent-magics-transcript-rest"' in saved[2]["text/html"]
        assert "base64" not in transcript
        assert "printed-by-agent" not in stream_text(kernel)
        following = kernel.run("print('next', made)")
        assert "next [1, 4, 9]" in kernel.outputs_text(following)
        assert not [m for m in kernel.log if m["msg_type"] == "error"]
