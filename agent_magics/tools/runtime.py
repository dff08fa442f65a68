"""Running the tool calls of one model response: parallel-safe calls together, the rest alone.

All calls of a response share one reader/writer lock, taken in call order: a call whose
tool is parallel-safe takes it shared, any other call exclusively. Outputs come back in
call order whatever order the calls finish in. Cancelling the turn cancels every call;
unfinished calls get Codex's "aborted" text, followed by what the call had printed by then
(a command's output so far), which Codex leaves out.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar

from agent_magics.tools.context import ToolOutput

SHELL_LIKE = frozenset({"shell", "container.exec", "local_shell", "shell_command", "unified_exec"})


OUTPUT_SO_FAR = "Output so far:"

# Where a call cut short by the turn's end leaves its own aborted output for run_calls
# (set in each call's task, so that the call needs to know nothing of the batch).
_ABORTED: ContextVar[list[ToolOutput] | None] = ContextVar("aborted_output", default=None)


def aborted_output(tool_name: str, elapsed_s: float, so_far: str = "") -> ToolOutput:
    """The text the model sees for a call cut short by the person: Codex's line, then
    the output the call had produced by then (Codex gives the model none, so it cannot
    tell how far a stopped command got; its text for a killed command carries it)."""
    secs = max(elapsed_s, 0.1)
    if tool_name in SHELL_LIKE:
        text = f"Wall time: {secs:.1f} seconds\naborted by user"
    else:
        text = f"aborted by user after {secs:.1f}s"
    if so_far:
        text += f"\n{OUTPUT_SO_FAR}\n{so_far}"
    return ToolOutput(text, success=False)


def report_aborted(output: ToolOutput) -> None:
    """Called by a call being cancelled, just before it re-raises: ``output`` (its
    aborted text with its output so far) replaces the bare one :func:`run_calls` gives."""
    slot = _ABORTED.get()
    if slot is not None:
        slot.append(output)


class FifoRWLock:
    """A reader/writer lock granted strictly in request order (no overtaking)."""

    def __init__(self) -> None:
        self._readers = 0
        self._writer = False
        self._queue: deque[tuple[bool, asyncio.Future[None]]] = deque()

    async def acquire(self, exclusive: bool) -> None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._queue.append((exclusive, fut))
        self._grant()
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release(exclusive)
            else:
                self._queue = deque(e for e in self._queue if e[1] is not fut)
                self._grant()
            raise

    def release(self, exclusive: bool) -> None:
        if exclusive:
            self._writer = False
        else:
            self._readers -= 1
        self._grant()

    def _grant(self) -> None:
        while self._queue and not self._writer:
            exclusive, fut = self._queue[0]
            if exclusive and self._readers:
                return
            self._queue.popleft()
            if fut.cancelled():
                continue
            if exclusive:
                self._writer = True
            else:
                self._readers += 1
            fut.set_result(None)
            if exclusive:
                return


Job = Callable[[], Awaitable[ToolOutput]]


async def run_calls(jobs: Sequence[tuple[str, bool, Job]]) -> list[ToolOutput]:
    """Run ``(tool_name, parallel_safe, job)`` triples; results in the same order.

    If the surrounding task is cancelled or one call ends the turn, the other calls are
    cancelled and :class:`CallsInterrupted` carries an output for every call.
    """
    lock = FifoRWLock()
    started = time.monotonic()
    reported: list[list[ToolOutput]] = [[] for _ in jobs]

    async def guarded(parallel: bool, job: Job, slot: list[ToolOutput]) -> ToolOutput:
        _ABORTED.set(slot)  # this task's own context
        await lock.acquire(exclusive=not parallel)
        try:
            return await job()
        finally:
            lock.release(exclusive=not parallel)

    tasks = [
        asyncio.ensure_future(guarded(p, job, slot))
        for (_, p, job), slot in zip(jobs, reported, strict=True)
    ]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException as exc:  # cancellation, an aborted turn or a bug: stop the rest
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        elapsed = time.monotonic() - started
        outputs = [
            t.result()
            if t.done() and not t.cancelled() and t.exception() is None
            else slot[-1]
            if slot
            else aborted_output(name, elapsed)
            for (name, _, _), t, slot in zip(jobs, tasks, reported, strict=True)
        ]
        raise CallsInterrupted(outputs, exc) from exc


class CallsInterrupted(Exception):
    """The calls were stopped before all finished; ``outputs`` pairs every call with an
    output (Codex's "aborted" text for the unfinished ones) and ``cause`` says why."""

    def __init__(self, outputs: list[ToolOutput], cause: BaseException) -> None:
        super().__init__("tool calls interrupted")
        self.outputs = outputs
        self.cause = cause
