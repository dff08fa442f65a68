"""The kernel's stop button (SIGINT, what ``km.interrupt_kernel()`` sends) during an
approved command, with ``--background`` and in a cell that awaits its turn (the default
on ipykernel >= 7.4): the command's process group is gone, the cell's ``execute_reply``
arrives and the turn says it was interrupted, and the model's next request carries the
lines the command had printed before the stop (it read only "aborted by user after 6.3s").

The command writes its process group id first and starts two sleeps in it. "Gone"
is measured as "no live process left in the group": a killed ``sleep`` that its shell
left behind is reparented to PID 1 and stays a zombie (still a member for
``os.killpg(pgid, 0)``) until init reaps it, which some container inits do only every
second or so; the test then also waits for ``os.killpg`` to fail. The click-to-end
times are printed (``-s`` shows them), not asserted: a generous deadline only keeps a
broken stop from hanging the suite.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.kernels import STOP_DEADLINE, Kernel, agent_cell

pytestmark = pytest.mark.slow

APPROVED = "-a untrusted"  # the command waits for a click on Approve
PRINTED = ("first-printed-line", "second-printed-line")
SLEEPER = (
    f"echo {PRINTED[0]}; echo {PRINTED[1]} >&2; "
    "ps -o pgid= $$ > sleep.pgid; sleep 30 & sleep 30; wait"
)


def group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (zombies aside)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, _parent, group = stat.rsplit(")", 1)[1].split()[:3]
        if int(group) == pgid and state != "Z":
            return True
    return False


def stop_while_sleeping(kernel: Kernel, options: str, tool: str) -> None:
    call = (
        function_call("exec_command", {"cmd": SLEEPER, "yield_time_ms": 30_000}, "c1")
        if tool == "exec_command"
        else function_call(
            "shell", {"command": ["bash", "-c", SLEEPER], "timeout_ms": 30_000}, "c1"
        )
    )
    if tool == "shell":
        options += " -c shell_type=shell"
    with ScriptedResponsesServer([[call], [message("next turn ok")]]) as server:
        msg_id = kernel.execute(agent_cell(server.base_url, options, "sleep"))
        if APPROVED in options:
            kernel.click(kernel.wait_for(lambda: kernel.buttons("Approve"))[-1])
        pgid_file = kernel.ws / "sleep.pgid"
        kernel.wait_for(lambda: pgid_file.exists() and pgid_file.read_text().strip())
        pgid = int(pgid_file.read_text())
        assert group_alive(pgid)
        waiting = "--background" not in options
        reply = None
        if waiting:
            assert not kernel.idle(msg_id)  # the cell awaits the turn
        else:
            reply = kernel.wait_for(lambda: kernel.execute_reply(msg_id))
        kernel.km.interrupt_kernel()
        clicked = time.monotonic()
        while group_alive(pgid) and time.monotonic() - clicked < STOP_DEADLINE:
            time.sleep(0.01)
        killed = time.monotonic() - clicked
        assert not group_alive(pgid), "the command outlived the stop button"
        reply = reply or kernel.wait_for(lambda: kernel.execute_reply(msg_id), STOP_DEADLINE)
        ended = time.monotonic() - clicked  # the busy cell's reply (background: before)
        kernel.wait_for(lambda: kernel.shows("Turn interrupted."), STOP_DEADLINE)
        shown = time.monotonic() - clicked
        print(
            f"\n{tool} {options}: no live process {killed:.3f} s, reply {ended:.3f} s, "
            f"'Turn interrupted.' shown {shown:.3f} s after the click"
        )
        kernel.wait_for(lambda: not group_exists(pgid), STOP_DEADLINE)  # zombies reaped too
        assert reply["content"]["status"] == "ok", reply["content"]
        assert not [m for m in kernel.log if m["msg_type"] == "error"]
        kernel.run("%%agent\nare you still there?")  # the session goes on
        kernel.wait_for(lambda: len(server.requests) == 2)
        told = server.outputs(1)["c1"]
        assert "aborted by user" in told
        assert told.endswith(f"Output so far:\n{PRINTED[0]}\n{PRINTED[1]}\n"), told


@pytest.mark.parametrize("tool", ["exec_command", "shell"])
def test_stop_button_in_background_mode(kernel: Kernel, tool: str) -> None:
    stop_while_sleeping(kernel, f"{APPROVED} -s danger-full-access --background", tool)


@pytest.mark.parametrize("tool", ["exec_command", "shell"])
@pytest.mark.parametrize("approval", [APPROVED, "-a never"])
def test_stop_button_in_a_waiting_cell(kernel: Kernel, tool: str, approval: str) -> None:
    if kernel.ipykernel_version() < (7, 4):
        pytest.skip("a cell waits for its turn on ipykernel 7.4 or newer")
    stop_while_sleeping(kernel, f"{approval} -s danger-full-access", tool)
