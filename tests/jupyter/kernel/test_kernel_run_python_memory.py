"""run_python keeps nothing after a call: in a real kernel (both ipykernel lines), calls
that print a large text leave the kernel's memory where it was, and the shell's event
callbacks (where a display publisher registers itself) do not grow with the calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads RSS from /proc"),
]

BIG = 1 << 27
"""Characters each call prints: 128 MiB, so three kept outputs are far above the slack."""
CALLS = 3
SLACK = 100 * 1024 * 1024
"""How far above its start the kernel's RSS may end (the issue's bound)."""

STATE = (
    "(sorted((event, len(fns)) for event, fns in get_ipython().events.callbacks.items()),"
    " int(open('/proc/self/statm').read().split()[1]) * __import__('os').sysconf('SC_PAGE_SIZE'))"
)


def kernel_state(kernel: Kernel) -> tuple[list[tuple[str, int]], int]:
    """The number of callbacks per shell event and the kernel's RSS, after a collection."""
    kernel.value("__import__('gc').collect()")
    callbacks, rss = kernel.value(STATE)
    return callbacks, rss


def finished_turns(kernel: Kernel) -> int:
    return sum(value.count(TURN_DONE) for value in kernel.html_values())


def python_call(call_id: str, code: str) -> dict[str, Any]:
    return function_call("run_python", {"code": code}, call_id)


def test_large_outputs_are_released_and_no_callback_accumulates(kernel: Kernel) -> None:
    big = [[python_call(f"big{i}", f"print('x' * {BIG})")] for i in range(CALLS)]
    warm = [[python_call("warm", "print('warm')")], [message("warm")]]
    script: list[Any] = [*warm, *big, [message("ok")]]
    with ScriptedResponsesServer(script) as server:
        # A first turn loads what every turn needs: the start is measured after it.
        kernel.run(agent_cell(server.base_url, "-a never"))
        kernel.wait_for(lambda: finished_turns(kernel) == 1, timeout=120)
        callbacks_before, rss_before = kernel_state(kernel)
        kernel.run(agent_cell(server.base_url, "-a never"))
        kernel.wait_for(lambda: finished_turns(kernel) == 2, timeout=120)
        for i in range(CALLS):
            assert server.outputs(3 + i)[f"big{i}"].startswith("Ran in")
        callbacks_after, rss_after = kernel_state(kernel)
    print(f"RSS {rss_before / 2**20:.0f} MiB -> {rss_after / 2**20:.0f} MiB; {callbacks_after}")
    assert callbacks_after == callbacks_before
    assert rss_after - rss_before < SLACK
