"""The per-session store of unified exec processes: ids, waiting rules, pruning, cleanup.

``exec_command`` starts a process and waits up to its yield time for output; a process
still running then is kept under a session id for ``write_stdin``. Every process a tool
started dies with the session (:meth:`ProcessManager.close`) or at once when the person
stops the turn (:meth:`ProcessManager.kill_all`).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from agent_magics.tools.unified_exec.buffer import Collected
from agent_magics.tools.unified_exec.collect import clamp_yield, collect_output, poll_wait_ms
from agent_magics.tools.unified_exec.process import ExecProcess, group_alive, kill_group

STATE_KEY = "unified_exec"
MAX_SESSIONS = 64
WARN_SESSIONS = 60
PROTECTED_RECENT = 8
EARLY_EXIT_S = 0.15  # a command that ends this fast is reported without a session
AFTER_WRITE_S = 0.1  # after writing input, give the process a moment to answer
CLOSE_GRACE_S = 2.0  # SIGTERM, then SIGKILL after this long


class _UnknownSession(Exception):
    def __init__(self, session_id: int) -> None:
        super().__init__(f"Unknown process id {session_id}")
        self.session_id = session_id


class _StdinClosed(Exception):
    def __init__(self) -> None:
        super().__init__(
            "stdin is closed for this session; rerun exec_command with tty=true to keep stdin open"
        )


class Killable(Protocol):
    def kill(self, sig: int = signal.SIGKILL) -> None: ...


@dataclass
class ExecSession:
    """A running process the model can write to and read from, by its id (not the
    agent's conversation: :class:`agent_magics.agent.session.Session`)."""

    process: ExecProcess
    session_id: int
    command: Sequence[str]
    tty: bool
    last_used: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class ExecResult:
    """What one exec_command / write_stdin call saw."""

    wall_time: float
    output: Collected
    exit_code: int | None
    session_id: int | None  # set while the process keeps running


class ProcessManager:
    """Unified exec processes of one agent session, plus every other process group the
    shell tools started, so that all of them can be stopped together."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.SystemRandom()
        self._sessions: dict[int, ExecSession] = {}
        self._reserved: set[int] = set()
        self._live: set[Killable] = set()
        self._groups: set[int] = set()  # groups left behind by finished one-shot commands

    # -- ids ---------------------------------------------------------------------------------

    def reserve_id(self) -> int:
        while True:
            sid = self._rng.randrange(1_000, 100_000)
            if sid not in self._reserved:
                self._reserved.add(sid)
                return sid

    def release_id(self, session_id: int) -> None:
        self._reserved.discard(session_id)

    @property
    def session_ids(self) -> list[int]:
        return list(self._sessions)

    # -- tracking (also used by the one-shot shell tools) -------------------------------------

    def track(self, item: Killable) -> None:
        self._live.add(item)

    def untrack(self, item: Killable, leftover_group: int | None = None) -> None:
        self._live.discard(item)
        self._groups = {g for g in self._groups if group_alive(g)}
        if leftover_group is not None and group_alive(leftover_group):
            self._groups.add(leftover_group)

    # -- exec_command ------------------------------------------------------------------------

    async def spawn(
        self,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        tty: bool,
        on_start: Callable[[ExecProcess], None] | None = None,
    ) -> ExecProcess:
        """Start a command (in a worker thread) and give it a moment to finish early;
        ``on_start`` sees the process as soon as it runs (before that moment).

        A cancellation while this runs kills the command: nothing keeps it yet."""
        loop = asyncio.get_running_loop()
        started = loop.run_in_executor(None, ExecProcess, argv, cwd, env, tty)
        try:
            process = await asyncio.shield(started)
        except asyncio.CancelledError:
            started.add_done_callback(_dispose_result)
            raise
        self.track(process)
        if on_start is not None:
            on_start(process)
        try:
            await process.wait_exit(EARLY_EXIT_S)
        except asyncio.CancelledError:
            self.discard(process)
            raise
        return process

    def is_session(self, process: ExecProcess) -> bool:
        return any(s.process is process for s in self._sessions.values())

    def discard(self, process: ExecProcess) -> None:
        """Kill and forget a process that is not (or no longer) kept as a session."""
        process.dispose()
        self._live.discard(process)

    def stop(self, process: ExecProcess) -> None:
        """A person stopped the call running ``process``: kill its process group and
        forget its session, if it was kept."""
        for session_id, kept in list(self._sessions.items()):
            if kept.process is process:
                self._forget(session_id)
        self.discard(process)

    def process_of(self, session_id: int) -> ExecProcess | None:
        kept = self._sessions.get(session_id)
        return kept.process if kept is not None else None

    async def start(
        self,
        process: ExecProcess,
        *,
        session_id: int,
        command: Sequence[str],
        yield_time_ms: int,
        warn: Callable[[str], None],
        on_output: Callable[[bytes], None] | None = None,
    ) -> ExecResult:
        """Collect the first output of a started process; keep it if it still runs.

        A still-running process is stored *before* the wait, so interrupting the call
        leaves it to the session (and to :meth:`kill_all`)."""
        alive = not process.exited
        if alive:
            count = self._store(ExecSession(process, session_id, command, process.tty))
            if count >= WARN_SESSIONS:
                warn(
                    f"The maximum number of unified exec processes you can keep open is "
                    f"{WARN_SESSIONS} and you currently have {count} processes open. Reuse "
                    "older processes or close them to prevent automatic pruning of old processes"
                )
        start = time.monotonic()
        deadline = start + clamp_yield(yield_time_ms) / 1000
        try:
            output = await collect_output(process, deadline, on_output)
        except asyncio.CancelledError:
            if not alive:
                self.discard(process)
            raise
        wall = time.monotonic() - start
        if alive and not process.exited:
            if session_id not in self._sessions:
                raise _UnknownSession(session_id)
            return ExecResult(wall, output, None, session_id)
        self._forget(session_id)
        self.discard(process)
        return ExecResult(wall, output, process.exit_code, None)

    # -- write_stdin -------------------------------------------------------------------------

    async def write_stdin(
        self,
        session_id: int,
        chars: str,
        yield_time_ms: int,
        on_output: Callable[[bytes], None] | None = None,
    ) -> ExecResult:
        session = self._sessions.get(session_id)
        if session is None:
            raise _UnknownSession(session_id)
        session.last_used = time.monotonic()
        process = session.process
        if chars:
            if not session.tty:
                raise _StdinClosed()
            with contextlib.suppress(OSError):  # gone: the poll below says how it ended
                process.write(chars.encode("utf-8"))
            await asyncio.sleep(AFTER_WRITE_S)
        start = time.monotonic()
        deadline = start + poll_wait_ms(yield_time_ms, bool(chars)) / 1000
        output = await collect_output(process, deadline, on_output)
        wall = time.monotonic() - start
        if self._sessions.get(session_id) is not session:
            raise _UnknownSession(session_id)
        if not process.exited:
            return ExecResult(wall, output, None, session_id)
        self._forget(session_id)
        self.discard(process)
        return ExecResult(wall, output, process.exit_code, None)

    # -- store -------------------------------------------------------------------------------

    def _store(self, session: ExecSession) -> int:
        if len(self._sessions) >= MAX_SESSIONS:
            victim = self._prune_candidate()
            if victim is not None:
                pruned = self._sessions.pop(victim)
                self.release_id(victim)
                self.discard(pruned.process)
        self._sessions[session.session_id] = session
        return len(self._sessions)

    def _prune_candidate(self) -> int | None:
        by_recency = sorted(self._sessions.values(), key=lambda s: s.last_used, reverse=True)
        protected = {s.session_id for s in by_recency[:PROTECTED_RECENT]}
        oldest_first = [s for s in reversed(by_recency) if s.session_id not in protected]
        for s in oldest_first:
            if s.process.exited:
                return s.session_id
        return oldest_first[0].session_id if oldest_first else None

    def _forget(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)
        self.release_id(session_id)

    # -- stopping ----------------------------------------------------------------------------

    def kill_all(self) -> None:
        """Kill every process the shell tools started in this session, at once (SIGKILL).

        For the stop button; safe to call from any thread."""
        sessions = list(self._sessions.values())
        self._sessions.clear()
        for s in sessions:
            self.release_id(s.session_id)
            s.process.dispose()
        for item in list(self._live):
            item.kill(signal.SIGKILL)
            if isinstance(item, ExecProcess):
                item.dispose()
        self._live.clear()
        for group in list(self._groups):
            kill_group(group, signal.SIGKILL)
        self._groups.clear()

    async def close(self) -> None:
        """End of the session: SIGTERM every process group, SIGKILL what is left after a
        grace period."""
        processes = {s.process for s in self._sessions.values()}
        processes |= {p for p in self._live if isinstance(p, ExecProcess)}
        for item in processes | self._live:
            item.kill(signal.SIGTERM)
        for group in self._groups:
            kill_group(group, signal.SIGTERM)
        deadline = time.monotonic() + CLOSE_GRACE_S
        for p in processes:
            await p.wait_exit(max(deadline - time.monotonic(), 0))
        self.kill_all()


def _dispose_result(fut: asyncio.Future[ExecProcess]) -> None:
    if not fut.cancelled() and fut.exception() is None:
        fut.result().dispose()
