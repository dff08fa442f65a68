""":class:`SignalWakeup`: a signal wakes an idle loop, so work a Python signal handler
schedules with a plain ``call_soon`` (as ipykernel's handler for an awaited cell does,
through tornado's ``add_callback``) runs at once instead of when the loop next wakes.

A helper thread waits until the loop's thread sleeps in ``select`` (Linux ``/proc``),
sends the signal to this process and waits for the handler's work; if the work has not
run after :data:`LATE` seconds it wakes the loop itself, so a missing wakeup fails the
test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_magics.jupyter.ui.runner import SignalWakeup

LATE = 5.0  # seconds; far above a working wakeup

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads thread states from /proc"
)


def sleeping(thread_id: int) -> bool:
    stat = Path(f"/proc/self/task/{thread_id}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "S"


@pytest.fixture
def usr1() -> Iterator[signal.Signals]:
    previous = signal.getsignal(signal.SIGUSR1)
    yield signal.SIGUSR1
    signal.signal(signal.SIGUSR1, previous)


def handled_before_late(loop: asyncio.AbstractEventLoop, sig: signal.Signals) -> bool:
    """Send ``sig`` while ``loop`` idles; whether the handler's ``call_soon`` work ran
    before the helper gave up waiting for it."""
    ran = threading.Event()
    late: list[bool] = []
    signal.signal(sig, lambda *_: loop.call_soon(ran.set))

    loop_thread = threading.get_native_id()

    def helper(done: asyncio.Future[None]) -> None:
        end = time.monotonic() + LATE
        while not sleeping(loop_thread) and time.monotonic() < end:
            time.sleep(0.001)
        os.kill(os.getpid(), sig)
        late.append(not ran.wait(LATE))
        loop.call_soon_threadsafe(done.set_result, None)

    async def idle() -> None:
        done: asyncio.Future[None] = loop.create_future()
        threading.Thread(target=helper, args=(done,), daemon=True).start()
        await done

    loop.run_until_complete(idle())
    return not late[0]


def test_a_signal_wakes_the_idle_loop(usr1: signal.Signals) -> None:
    loop = asyncio.new_event_loop()
    wakeup = SignalWakeup(loop)
    try:
        wakeup.activate()
        assert wakeup.active
        assert handled_before_late(loop, usr1)
    finally:
        wakeup.deactivate()
        loop.close()
    assert signal.set_wakeup_fd(-1) == -1  # put back as it was


def test_another_wakeup_descriptor_is_left_alone(usr1: signal.Signals) -> None:
    loop = asyncio.new_event_loop()
    theirs_r, theirs_w = os.pipe()
    os.set_blocking(theirs_w, False)
    signal.set_wakeup_fd(theirs_w)
    wakeup = SignalWakeup(loop)
    try:
        wakeup.activate()
        assert not wakeup.active
        assert signal.set_wakeup_fd(theirs_w) == theirs_w
    finally:
        wakeup.deactivate()
        assert signal.set_wakeup_fd(-1) == theirs_w
        loop.close()
        os.close(theirs_r)
        os.close(theirs_w)
