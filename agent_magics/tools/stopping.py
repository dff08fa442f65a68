"""Stopping one running tool call while the turn goes on (a card's Stop button).

The router runs each handler as a task of its own, registered here by call id.
:meth:`RunningCalls.stop` (callable from any thread) runs the call's stop hooks on the
loop (a command's hook kills its process group) and cancels the task; the call then
ends with Codex's text for a call the user aborted, and the turn goes on. Cancelling the
turn is not a stop: it still cancels every call and ends the turn. Either way the model
also reads the output the call had produced, which the call says how to read
(:func:`output_so_far`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from agent_magics.tools.context import SessionServices, ToolOutput
from agent_magics.tools.runtime import aborted_output, report_aborted

STATE_KEY = "running_calls"

StopHook = Callable[[], None]
SoFar = Callable[[], str]


@dataclass
class RunningCall:
    task: asyncio.Future[ToolOutput]
    loop: asyncio.AbstractEventLoop
    hooks: list[StopHook] = field(default_factory=list)
    stopped: bool = False
    so_far: SoFar | None = None

    def output_so_far(self) -> str:
        if self.so_far is None:
            return ""
        try:
            return self.so_far()
        except Exception:  # the aborted text must come whatever the reader does
            logging.getLogger("agent_magics").exception("reading a stopped call's output")
            return ""


class RunningCalls:
    """The session's running tool calls, by call id."""

    def __init__(self) -> None:
        self._calls: dict[str, RunningCall] = {}
        self._lock = threading.Lock()  # stop() may come from a comm thread

    def __contains__(self, call_id: str) -> bool:
        with self._lock:
            return call_id in self._calls

    async def run(
        self, call_id: str, tool_name: str, work: Callable[[], Awaitable[ToolOutput]]
    ) -> tuple[ToolOutput, bool]:
        """Run ``work`` as the call ``call_id``; the output, and whether it was stopped."""
        started = time.monotonic()
        task = asyncio.ensure_future(work())
        entry = RunningCall(task, asyncio.get_running_loop())
        with self._lock:
            self._calls[call_id] = entry
        try:
            return await task, False
        except asyncio.CancelledError:
            current = asyncio.current_task()
            aborted = aborted_output(tool_name, time.monotonic() - started, entry.output_so_far())
            if entry.stopped and (current is None or not current.cancelling()):
                return aborted, True
            report_aborted(aborted)  # the turn ends: run_calls gives the model this text
            raise
        finally:
            with self._lock:
                if self._calls.get(call_id) is entry:
                    del self._calls[call_id]

    def on_stop(self, call_id: str, hook: StopHook) -> None:
        """Run ``hook`` (on the loop) when the call is stopped, before it is cancelled."""
        with self._lock:
            entry = self._calls.get(call_id)
        if entry is not None:
            entry.hooks.append(hook)

    def read_so_far(self, call_id: str, read: SoFar) -> None:
        """Have ``read`` give the call's output so far, should it be stopped."""
        with self._lock:
            entry = self._calls.get(call_id)
        if entry is not None:
            entry.so_far = read

    def stop(self, call_id: str) -> bool:
        """Stop the call ``call_id`` (thread-safe); False when it is not running."""
        with self._lock:
            entry = self._calls.get(call_id)
        if entry is None or entry.task.done():
            return False
        try:
            entry.loop.call_soon_threadsafe(_stop_now, entry)
        except RuntimeError:  # the loop is closed: nothing runs any more
            return False
        return True


def _stop_now(entry: RunningCall) -> None:
    if entry.stopped or entry.task.done():
        return
    entry.stopped = True
    for hook in entry.hooks:
        try:
            hook()
        except Exception:  # a hook that fails must not keep the call running
            logging.getLogger("agent_magics").exception("stopping a tool call")
    entry.task.cancel()


def running_calls(services: SessionServices) -> RunningCalls:
    """The session's running calls (created on first use)."""
    return services.state(STATE_KEY, RunningCalls)


def on_stop(services: SessionServices, call_id: str, hook: StopHook) -> None:
    """Have ``hook`` run when a person stops the call ``call_id`` (e.g. kill its process)."""
    running_calls(services).on_stop(call_id, hook)


def output_so_far(services: SessionServices, call_id: str, read: SoFar) -> None:
    """Have ``read`` give what the call ``call_id`` has printed so far: if the call is
    stopped or the turn ends while it runs, the model reads it after the aborted line."""
    running_calls(services).read_so_far(call_id, read)
