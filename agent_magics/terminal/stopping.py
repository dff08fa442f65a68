"""How ``agent-magics exec`` ends when it is told to stop: SIGTERM as Ctrl-C.

A CI job that is cancelled or times out sends SIGTERM (GitHub Actions, GitLab and
``timeout`` all do), and a person sends SIGINT with Ctrl-C. Both end the turn the same
way: the task running it is cancelled, so the session records the turn as aborted, its
commands are killed when the session closes, and the process exits with the status a
shell gives a process killed by that signal (128 + its number: 130, 143), which a job can
tell apart from a failure of its own.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any

EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143


class _Terminated(Exception):
    """SIGTERM ended the run (control flow between :func:`until_terminated` and ``main``)."""


async def until_terminated(work: Coroutine[Any, Any, int]) -> int:
    """Await ``work``; a SIGTERM meanwhile cancels it as asyncio's own Ctrl-C handling
    does, and raises :class:`_Terminated` once it has unwound (its ``finally`` blocks ran:
    the turn recorded as aborted, the session closed)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    signalled = False

    def stop() -> None:
        nonlocal signalled
        if not signalled and task is not None:
            signalled = True
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, stop)
    except (NotImplementedError, RuntimeError):  # no signal handlers here (Windows)
        return await work
    try:
        return await work
    except asyncio.CancelledError:
        if signalled:
            raise _Terminated from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
