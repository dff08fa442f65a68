"""A repr or a len that never returns, and a turn whose code never gives the loop back, in
real kernels (both ipykernel lines of :mod:`tests.helpers.kernels`) against the scripted model.

Calling ``repr`` or ``len`` on such an object would hold the kernel for good, and a
stop that only schedules a callback on the held loop would never arrive. Neither tool
calls them (the answers say so and the turn goes on), and a stop reaches a turn whose
own code holds the loop: here the person's async function looping without an
``await``. A held kernel fails these tests by timing out; the fixture then kills it.
"""

from __future__ import annotations

import pytest

from agent_magics.jupyter.kernel.describe import NOT_CALLED
from agent_magics.testing import ScriptedResponsesServer, Turn, function_call, message
from tests.helpers.kernels import STOP_DEADLINE, TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow

STUCK = """
import numpy as np
import pandas as pd

class Stuck:
    def __repr__(self):
        while True:
            pass

class Endless(list):
    def __len__(self):
        while True:
            pass

stuck, endless = Stuck(), Endless([1, 2])
frame = pd.DataFrame({"o": [stuck, None]})
objects = np.empty(2, dtype=object)
objects[0] = stuck
"""

SPIN = """
import agent_magics

@agent_magics.tool(approval="auto")
async def spin() -> str:
    "Work that never awaits."
    open("spinning", "w").close()
    while True:
        pass
"""


def inspect(name: str, call_id: str) -> dict[str, object]:
    return function_call("inspect_variable", {"name": name}, call_id)


def test_a_repr_or_len_that_never_returns_is_not_called(kernel: Kernel) -> None:
    assert "error" not in [m["msg_type"] for m in kernel.run(STUCK)]
    script: list[Turn] = [
        [
            function_call("list_variables", {}, "c1"),
            inspect("stuck", "c2"),
            inspect("endless", "c3"),
            inspect("frame", "c4"),
            inspect("objects", "c5"),
        ],
        [message("seen")],
    ]
    with ScriptedResponsesServer(script) as server:
        kernel.run(agent_cell(server.base_url, "-a untrusted -s read-only", "what is there?"))
        kernel.wait_for(lambda: len(server.requests) == 2)  # the turn went on
        seen = server.outputs(1)
        listed = seen["c1"].splitlines()
        assert "stuck  __main__.Stuck  object (repr not called)" in listed
        assert "endless  __main__.Endless  len 2" in listed
        assert seen["c2"].splitlines()[1].endswith(NOT_CALLED)
        assert seen["c3"].splitlines()[1:] == ["length: 2", "  int 1", "  int 2"]
        assert "first rows not shown: column 0 holds a __main__.Stuck" in seen["c4"]
        assert seen["c5"].endswith(
            "values not shown: it holds Python objects, whose text is their own code"
        )
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
    assert kernel.value("1 + 1") == 2  # the kernel is free


@pytest.mark.parametrize("waits", [False, True], ids=["background", "waiting"])
def test_stop_ends_a_turn_whose_code_holds_the_loop(kernel: Kernel, waits: bool) -> None:
    if waits and kernel.ipykernel_version() < (7, 4):
        pytest.skip("a cell waits for its turn on ipykernel 7.4 or newer")
    assert "error" not in [m["msg_type"] for m in kernel.run(SPIN)]
    script: list[Turn] = [[function_call("spin", {}, "c1")], [message("next turn ok")]]
    with ScriptedResponsesServer(script) as server:
        options = "-a untrusted" + ("" if waits else " --background")
        msg_id = kernel.execute(agent_cell(server.base_url, options, "spin"))
        kernel.wait_for(lambda: (kernel.ws / "spinning").exists())
        reply = None if waits else kernel.wait_for(lambda: kernel.execute_reply(msg_id))
        if waits:
            assert not kernel.idle(msg_id)  # the cell awaits the turn
        kernel.km.interrupt_kernel()  # once
        kernel.wait_for(lambda: kernel.shows("Turn interrupted."), STOP_DEADLINE)
        reply = reply or kernel.wait_for(lambda: kernel.execute_reply(msg_id), STOP_DEADLINE)
        assert reply["content"]["status"] == "ok", reply["content"]
        assert not [m for m in kernel.log if m["msg_type"] == "error"]
        kernel.run("%%agent\nare you still there?")  # the session goes on
        kernel.wait_for(lambda: len(server.requests) == 2)
        assert server.outputs(1)["c1"].startswith("aborted by user")
