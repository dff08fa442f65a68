"""The kernel's last word while an awaited turn runs is "busy", even when another request
ended between the cell's start and the turn's.

JupyterLab makes the widgets' subshell (a control request) when a cell's first widget
arrives, which can be before the turn is awaited and before the keeper of
:mod:`agent_magics.jupyter.kernel.busy_status` is installed: on a fresh machine, with the
imports of a first turn still cold, that request's idle came last and the status bar read
"Idle" for the whole turn. Here a real kernel gets a control request while its cell is
between the two, and the statuses it publishes are read off IOPub.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.kernels import Kernel

# The cell waits for the test's go (a file) before the turn starts, then holds the
# kernel busy as an awaited turn does; the keeper is installed only then, as on the first
# turn of a kernel.
CELL = """\
import asyncio, os, time
from agent_magics.jupyter.kernel.busy_status import busy_while_running
while not os.path.exists("go"):
    time.sleep(0.05)
with busy_while_running(get_ipython().kernel).running():
    await asyncio.sleep(0.5)
"""


def statuses(kernel: Kernel) -> list[tuple[str, str]]:
    return [
        (m["content"]["execution_state"], m["parent_header"].get("msg_id", ""))
        for m in kernel.log
        if m["msg_type"] == "status"
    ]


def control_request(kernel: Kernel) -> str:
    msg: dict[str, Any] = kernel.kc.session.msg("kernel_info_request")
    kernel.kc.control_channel.send(msg)
    msg_id: str = msg["header"]["msg_id"]
    return msg_id


def test_an_idle_before_the_turn_is_followed_by_a_busy(kernel: Kernel) -> None:
    cell = kernel.execute(CELL)
    kernel.wait_for(lambda: ("busy", cell) in statuses(kernel))
    other = control_request(kernel)
    kernel.wait_for(lambda: ("idle", other) in statuses(kernel))
    (Path(kernel.ws) / "go").touch()
    kernel.wait_for(lambda: kernel.idle(cell), timeout=60)

    seen = statuses(kernel)
    after_other = seen[seen.index(("idle", other)) + 1 : seen.index(("idle", cell))]
    assert ("busy", cell) in after_other, seen
    assert seen[-1] == ("idle", cell), seen
