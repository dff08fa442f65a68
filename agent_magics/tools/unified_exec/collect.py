"""Waiting for a unified exec process's output, with Codex's timing rules.

``exec_command`` waits ``clamp(yield_time_ms, 250, 30000)``; ``write_stdin`` waits at
most 30 s after writing, and an empty poll waits between 5 s and 300 s. Either stops
early once the process has ended and its output is closed (giving the output at most
50 ms to close after the exit).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from agent_magics.tools.unified_exec.buffer import Collected, HeadTailBuffer
from agent_magics.tools.unified_exec.process import ExecProcess

MIN_YIELD_MS = 250
MAX_YIELD_MS = 30_000
MIN_EMPTY_POLL_MS = 5_000
MAX_BACKGROUND_WAIT_MS = 300_000
AFTER_EXIT_S = 0.05  # after the exit, how long to wait for the output to close


async def collect_output(
    process: ExecProcess, deadline: float, on_output: Callable[[bytes], None] | None = None
) -> Collected:
    """Output until ``deadline``, or until the process ended and its output closed
    (waiting at most :data:`AFTER_EXIT_S` for the close once it ended). ``on_output``
    sees each piece as it arrives (for live display).

    What one wait keeps is capped like Codex's (1 MiB, head and tail): the bytes dropped
    are counted, and the answer says how many."""
    collected = HeadTailBuffer()
    close_deadline: float | None = None
    while True:
        fut = process.changed.arm()
        chunk, dropped = process.drain_counted()
        if chunk or dropped:
            process.changed.disarm(fut)
            collected.push_drained(chunk, dropped)
            if on_output is not None:
                on_output(chunk)
            if time.monotonic() >= deadline:
                break
            continue
        now = time.monotonic()
        remaining = deadline - now
        if (process.exited and process.output_closed) or remaining <= 0:
            process.changed.disarm(fut)
            break
        if process.exited:
            if close_deadline is None:
                close_deadline = now + min(remaining, AFTER_EXIT_S)
            if not await process.changed.wait(fut, close_deadline - now):
                break
            continue
        if not await process.changed.wait(fut, remaining):
            break
    return collected.collected()


def clamp_yield(ms: int) -> int:
    return min(max(ms, MIN_YIELD_MS), MAX_YIELD_MS)


def poll_wait_ms(ms: int, writing: bool) -> int:
    """write_stdin's wait: writes are capped at 30 s, empty polls wait 5 s to 300 s."""
    t = max(ms, MIN_YIELD_MS)
    return (
        min(t, MAX_YIELD_MS) if writing else min(max(t, MIN_EMPTY_POLL_MS), MAX_BACKGROUND_WAIT_MS)
    )
