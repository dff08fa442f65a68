"""One command started by unified exec: a PTY (stdin open) or pipes (stdin at EOF).

Each command runs in a new session, so it leads its own process group and everything it
starts can be killed together. Output is read by a thread into a head/tail buffer and
the exit is awaited by another thread; coroutines learn of both through a
:class:`Wakeup`. A PTY's input goes through a writer thread so a child that does not
read cannot block the caller.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import selectors
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agent_magics.tools.sandbox import mount_points
from agent_magics.tools.unified_exec.buffer import HeadTailBuffer
from agent_magics.tools.unified_exec.wakeup import Wakeup

PTY_ROWS, PTY_COLS = 24, 80
READ_SIZE = 65536
FREEZE_ROUNDS = 8
"""Walks of a command's process tree before it is signalled (each stops what it finds)."""


def exit_status(returncode: int) -> int:
    """A shell-style exit code: a death by signal ``n`` reads as ``128 + n``."""
    return 128 - returncode if returncode < 0 else returncode


def _process_table() -> list[tuple[int, int, int, int]]:
    """``(pid, parent, group, session)`` of every live process (Linux ``/proc``)."""
    table: list[tuple[int, int, int, int]] = []
    if not sys.platform.startswith("linux"):
        return table
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 3:
            table.append((int(entry), int(fields[1]), int(fields[2]), int(fields[3])))
    return table


def _descendants(leader: int, table: list[tuple[int, int, int, int]]) -> set[int]:
    """Every process below ``leader`` by parent links, whatever its group or session."""
    children: dict[int, list[int]] = {}
    for pid, parent, _, _ in table:
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [leader]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def kill_group(leader: int, sig: int = signal.SIGKILL, whole_session: bool = False) -> None:
    """Signal the process group led by ``leader`` and every descendant of ``leader``, also
    one that left with ``setsid`` (the Landlock launcher keeps those below it); with
    ``whole_session``, also the other groups of its session (an interactive shell in a
    PTY puts each job in its own group).

    Descendants are stopped first, in rounds until no new one appears, so none can fork
    a child that escapes the walk; then each gets ``sig`` (and a ``SIGCONT``)."""
    frozen: set[int] = set()
    for _ in range(FREEZE_ROUNDS):
        found = _descendants(leader, _process_table()) - frozen
        if not found:
            break
        for pid in found:
            _signal(pid, signal.SIGSTOP)
        frozen |= found
    groups = {leader}
    if whole_session:
        groups |= {group for _, _, group, sid in _process_table() if sid == leader}
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, sig)
    for pid in frozen:
        _signal(pid, sig)
        if sig != signal.SIGKILL:
            _signal(pid, signal.SIGCONT)


def group_alive(leader: int) -> bool:
    try:
        os.killpg(leader, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class StreamPump:
    """A thread reading one descriptor until end of file (or :meth:`stop`); it owns the
    descriptor and closes it when done."""

    def __init__(self, fd: int, sink: Callable[[bytes], None], on_end: Callable[[], None]) -> None:
        self._fd = fd
        self._sink = sink
        self._on_end = on_end
        self._wake_r, self._wake_w = os.pipe()
        self.finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"exec-read-{fd}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        try:
            sel.register(self._fd, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while True:
                ready = {key.fd for key, _ in sel.select()}
                if self._wake_r in ready:
                    break
                try:
                    data = os.read(self._fd, READ_SIZE)
                except InterruptedError:
                    continue
                except OSError:  # EIO: the PTY's other side is gone
                    break
                if not data:
                    break
                self._sink(data)
        finally:
            sel.close()
            os.close(self._fd)
            os.close(self._wake_r)
            self.finished.set()
            self._on_end()

    def stop(self) -> None:
        """Make the thread stop reading even if the stream stays open."""
        if self._wake_w < 0:
            return
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        os.close(self._wake_w)
        self._wake_w = -1


def _claim_terminal() -> None:  # runs in the child, between fork and exec
    with contextlib.suppress(OSError):
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _start(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], tty: bool
) -> tuple[subprocess.Popen[bytes], int, int | None]:
    mount_points.started(argv)
    try:
        return _popen(argv, cwd, env, tty)
    except BaseException:
        mount_points.release(argv)
        raise


def _popen(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], tty: bool
) -> tuple[subprocess.Popen[bytes], int, int | None]:
    if tty:
        master, slave = os.openpty()
        try:
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", PTY_ROWS, PTY_COLS, 0, 0))
            popen = subprocess.Popen(
                list(argv),
                stdin=slave,
                stdout=slave,
                stderr=slave,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
                preexec_fn=_claim_terminal,
            )
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        return popen, master, os.dup(master)
    read_end, write_end = os.pipe()
    try:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=write_end,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    return popen, read_end, None


class ExecProcess:
    """A running (or finished) unified exec command and its collected output."""

    def __init__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], tty: bool) -> None:
        """Start the command; raises ``OSError`` when it cannot be started. Blocking
        (fork and exec): call it from a worker thread."""
        self.tty = tty
        self.changed = Wakeup()
        self.exit_code: int | None = None
        self.output_closed = False
        self._lock = threading.Lock()
        self._buffer = HeadTailBuffer()
        self._popen, read_fd, self._write_fd = _start(argv, cwd, env, tty)
        self._argv = argv  # what its sandbox holds is let go once it has ended
        self.pid = self._popen.pid
        self._writes: queue.SimpleQueue[bytes | None] | None = None
        self._disposed = False
        self._pump = StreamPump(read_fd, self._on_output, self._on_closed)
        threading.Thread(target=self._wait, name=f"exec-wait-{self.pid}", daemon=True).start()

    # -- threads -------------------------------------------------------------------------

    def _on_output(self, data: bytes) -> None:
        with self._lock:
            self._buffer.push(data)
        self.changed.fire()

    def _on_closed(self) -> None:
        self.output_closed = True
        self.changed.fire()

    def _wait(self) -> None:
        code = self._popen.wait()
        mount_points.release(self._argv)
        self.exit_code = exit_status(code)
        self.changed.fire()

    def _write_all(self, fd: int, writes: queue.SimpleQueue[bytes | None]) -> None:
        try:
            while (data := writes.get()) is not None:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
        except OSError:
            pass
        finally:
            os.close(fd)

    # -- state -----------------------------------------------------------------------------

    @property
    def exited(self) -> bool:
        return self.exit_code is not None

    def drain(self) -> bytes:
        """Output gathered since the last drain (at most the buffer's capacity)."""
        return self.drain_counted()[0]

    def drain_counted(self) -> tuple[bytes, int]:
        """Like :meth:`drain`, with the number of bytes the capacity dropped meanwhile."""
        with self._lock:
            dropped = self._buffer.dropped
            return self._buffer.drain(), dropped

    def snapshot(self) -> bytes:
        with self._lock:
            return self._buffer.snapshot()

    async def wait_exit(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the command to end; True if it did."""
        deadline = time.monotonic() + timeout
        while not self.exited:
            fut = self.changed.arm()
            if self.exited:
                self.changed.disarm(fut)
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.changed.disarm(fut)
                return False
            await self.changed.wait(fut, remaining)
        return True

    # -- actions ---------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Queue ``data`` for the terminal's input (PTY only)."""
        if self._write_fd is None or self._disposed:
            raise BrokenPipeError("stdin is closed")
        if self._writes is None:
            writes: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
            self._writes = writes
            fd = self._write_fd
            threading.Thread(
                target=self._write_all,
                args=(fd, writes),
                name=f"exec-write-{self.pid}",
                daemon=True,
            ).start()
        self._writes.put(data)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the command's process group (every group of its session for a PTY)."""
        kill_group(self.pid, sig, whole_session=self.tty)

    def dispose(self) -> None:
        """Kill what is left of the command and release its threads and descriptors."""
        if self._disposed:
            return
        self._disposed = True
        self.kill(signal.SIGKILL)
        self._pump.stop()
        if self._writes is not None:
            self._writes.put(None)
        elif self._write_fd is not None:
            os.close(self._write_fd)
        self._write_fd = None
