"""One-shot command runs for ``shell`` and ``shell_command``.

stdout and stderr are captured separately (first 1 MiB of each) and shown as all of
stdout followed by all of stderr. The command runs in its own process group; on timeout
the whole group is killed and the result reads exit code 124 with a
``command timed out after <ms> milliseconds`` line in front of the output.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent_magics.tools.sandbox import mount_points
from agent_magics.tools.truncate import TruncationPolicy
from agent_magics.tools.unified_exec.format import (
    freeform_output,
    reserialize_shell_output,
    rust_debug_str,
    structured_output,
)
from agent_magics.tools.unified_exec.process import StreamPump, kill_group
from agent_magics.tools.unified_exec.wakeup import Wakeup

if TYPE_CHECKING:
    from agent_magics.tools.unified_exec.manager import ProcessManager

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "ExecOutput",
    "aggregate",
    "decode_output",
    "exec_output_text",
    "reserialize_shell_output",
    "run_oneshot",
]

DEFAULT_TIMEOUT_MS = 10_000
TIMEOUT_EXIT_CODE = 124
STREAM_CAP = 1024 * 1024
DRAIN_AFTER_EXIT_S = 2.0  # background children may keep the pipes open

# Windows-1252 as browsers decode it: latin-1 except for the printable 0x80..0x9F bytes.
_CP1252_UNDEFINED = (0x81, 0x8D, 0x8F, 0x90, 0x9D)
_CP1252_TABLE = {
    b: bytes([b]).decode("cp1252") for b in range(0x80, 0xA0) if b not in _CP1252_UNDEFINED
}


def decode_output(data: bytes) -> str:
    """UTF-8 when the bytes are UTF-8, else Windows-1252 (what charset detection picks
    for most non-UTF-8 output)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1").translate(_CP1252_TABLE)


def aggregate(stdout: bytes, stderr: bytes, cap: int = STREAM_CAP) -> bytes:
    """stdout then stderr within ``cap`` bytes; when both compete, stdout is guaranteed
    a third and stderr gets the rest (unused room goes back to stdout)."""
    if len(stdout) + len(stderr) <= cap:
        return stdout + stderr
    out_share = min(len(stdout), cap // 3)
    err_take = min(len(stderr), cap - out_share)
    out_take = out_share + min(cap - out_share - err_take, len(stdout) - out_share)
    return stdout[:out_take] + stderr[:err_take]


@dataclass(frozen=True)
class ExecOutput:
    exit_code: int
    stdout: bytes
    stderr: bytes
    duration: float
    timed_out: bool = False
    signal: int | None = None  # killed by this signal (not by the timeout)

    @property
    def aggregated(self) -> bytes:
        return aggregate(self.stdout, self.stderr)

    @property
    def content(self) -> str:
        text = decode_output(self.aggregated)
        if self.timed_out:
            return f"command timed out after {int(self.duration * 1000)} milliseconds\n{text}"
        return text


class _OneShot:
    """A started command with its two capture threads and its exit waiter."""

    def __init__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> None:
        self.changed = Wakeup()
        self.returncode: int | None = None
        self.out = bytearray()
        self.err = bytearray()
        self._open = 2
        self._lock = threading.Lock()
        out_fd, out_w = os.pipe()
        err_fd, err_w = os.pipe()
        mount_points.started(argv)
        try:
            self._popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
            )
        except BaseException:
            mount_points.release(argv)
            os.close(out_fd)
            os.close(err_fd)
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
        self._argv = argv  # what its sandbox holds is let go once it has ended
        self.pid = self._popen.pid
        self._pumps = [
            StreamPump(out_fd, lambda d: self._add(self.out, d), self._closed),
            StreamPump(err_fd, lambda d: self._add(self.err, d), self._closed),
        ]
        threading.Thread(target=self._wait, name=f"shell-wait-{self.pid}", daemon=True).start()

    def _add(self, target: bytearray, data: bytes) -> None:
        with self._lock:
            room = STREAM_CAP - len(target)
            if room > 0:
                target += data[:room]
        self.changed.fire()

    def _closed(self) -> None:
        with self._lock:
            self._open -= 1
        self.changed.fire()

    def _wait(self) -> None:
        returncode = self._popen.wait()
        mount_points.release(self._argv)
        self.returncode = returncode
        self.changed.fire()

    def captured(self) -> tuple[bytes, bytes]:
        with self._lock:
            return bytes(self.out), bytes(self.err)

    @property
    def drained(self) -> bool:
        return self._open == 0

    def kill(self, sig: int = signal.SIGKILL) -> None:
        kill_group(self.pid, sig)

    def stop_reading(self) -> None:
        for pump in self._pumps:
            pump.stop()

    async def wait_until(self, done: Callable[[], bool], timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done():
            fut = self.changed.arm()
            if done():
                self.changed.disarm(fut)
                break
            remaining = 3600.0 if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                self.changed.disarm(fut)
                return False
            await self.changed.wait(fut, remaining)
        return True


def _dispose_started(fut: asyncio.Future[_OneShot]) -> None:
    if not fut.cancelled() and fut.exception() is None:
        started = fut.result()
        started.kill()
        started.stop_reading()


async def run_oneshot(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout_ms: int,
    manager: ProcessManager | None = None,
    on_start: Callable[[Callable[[], str]], None] | None = None,
) -> ExecOutput:
    """Run ``argv`` to completion (or timeout). ``OSError`` if it cannot start.

    Cancelling the call kills the command's process group. ``on_start`` is handed a
    reader of the output so far (stdout then stderr, as the answer aggregates them), for
    the model to read should the call be stopped."""
    if not argv:
        raise ValueError("command args are empty")
    start = time.monotonic()
    loop = asyncio.get_running_loop()
    starting = loop.run_in_executor(None, _OneShot, argv, cwd, env)
    try:
        proc = await asyncio.shield(starting)
    except asyncio.CancelledError:
        starting.add_done_callback(_dispose_started)
        raise
    if manager is not None:
        manager.track(proc)
    if on_start is not None:
        on_start(lambda: decode_output(aggregate(*proc.captured())))
    leftover: int | None = proc.pid
    try:

        def ended() -> bool:
            return proc.returncode is not None

        timed_out = not await proc.wait_until(ended, timeout_ms / 1000)
        if timed_out:
            proc.kill(signal.SIGKILL)
            leftover = None
            await proc.wait_until(ended, None)
        await proc.wait_until(lambda: proc.drained, DRAIN_AFTER_EXIT_S)
    except asyncio.CancelledError:
        proc.kill(signal.SIGKILL)
        leftover = None
        raise
    finally:
        proc.stop_reading()
        if manager is not None:
            manager.untrack(proc, leftover)
    duration = time.monotonic() - start
    code = proc.returncode if proc.returncode is not None else -1
    out, err = proc.captured()
    if timed_out:
        return ExecOutput(TIMEOUT_EXIT_CODE, out, err, duration, timed_out=True)
    if code < 0:
        return ExecOutput(128 - code, out, err, duration, signal=-code)
    return ExecOutput(code, out, err, duration)


_IO_KINDS = {
    1: "PermissionDenied",
    2: "NotFound",
    7: "ArgumentListTooLong",
    12: "OutOfMemory",
    13: "PermissionDenied",
    20: "NotADirectory",
    21: "IsADirectory",
    26: "ExecutableFileBusy",
    36: "InvalidFilename",
    40: "FilesystemLoop",
}


def spawn_error_text(exc: BaseException) -> str:
    """``execution error: <Rust Debug of the I/O error>`` for a command that did not start."""
    if isinstance(exc, OSError) and exc.errno is not None:
        kind = _IO_KINDS.get(exc.errno, "Uncategorized")
        message = rust_debug_str(os.strerror(exc.errno))
        return f"execution error: Io(Os {{ code: {exc.errno}, kind: {kind}, message: {message} }})"
    return (
        f"execution error: Io(Custom {{ kind: InvalidInput, error: {rust_debug_str(str(exc))} }})"
    )


def exec_output_text(
    result: ExecOutput, structured: bool, policy: TruncationPolicy
) -> tuple[str, bool]:
    """The model's text for a one-shot result and whether it counts as a success."""
    if result.signal is not None:
        return f"execution error: Sandbox(Signal({result.signal}))", False
    render = structured_output if structured else freeform_output
    text = render(result.content, result.exit_code, result.duration, policy)
    return text, result.exit_code == 0 and not result.timed_out
