"""A stdio MCP server: its process, its pipes as the SDK's streams, and its end.

The SDK's ``stdio_client`` hides the process, so it cannot say how a server ended. This
transport keeps it: ``returncode`` tells the exit code, and ``lost`` is set as soon as
the server's stdout closes or the process exits (a child that inherited stdout cannot
keep a dead server looking alive). The server runs in its own process group with only
the environment it is given; its stderr goes to ``errlog`` line by line through
``redact`` (a line longer than :data:`MAX_LOG_LINE` bytes is written in parts), and
lines it wrote on stdout that are not JSON-RPC go there too. Closing follows the MCP
shutdown sequence: close stdin, give the server ``grace_s`` to exit, then terminate its
process group (SIGTERM, SIGKILL after two seconds).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from anyio.streams.text import TextReceiveStream
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter

GRACE_S = 2.0  # a server has this long to exit once its stdin is closed
KILL_AFTER_S = 2.0  # SIGTERM to SIGKILL
EXIT_POLL_S = 0.1  # how often a running server's process is checked
STDOUT_AFTER_EXIT_S = 0.5  # how long stdout may stay open after the process exited
EXIT_AFTER_EOF_S = 1.0  # how long a server that closed stdout has to be seen exiting
MAX_LOG_LINE = 65536  # bytes of one stderr line held before it is written anyway

Redact = Callable[[str], str]


def keep_text(text: str) -> str:
    return text


TransportStreams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


class StdioTransport(contextlib.AbstractAsyncContextManager[TransportStreams]):
    """Starts ``command`` on entry; stops it on exit. Enter and exit in one task."""

    def __init__(
        self,
        command: str,
        args: list[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        errlog: IO[bytes],
        grace_s: float = GRACE_S,
        redact: Redact = keep_text,
    ) -> None:
        self._argv = [command, *args]
        self._redact = redact
        self._env = dict(env)
        self._cwd = cwd
        self._errlog = errlog
        self.process: Process | None = None
        self.lost = anyio.Event()
        self.grace_s = grace_s
        self.exited_itself = False  # the process ended before we had to signal it
        self._stdout_closed = anyio.Event()
        self._stderr_closed = anyio.Event()
        self._cm: contextlib.AbstractAsyncContextManager[TransportStreams] | None = None

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.returncode

    async def __aenter__(self) -> TransportStreams:
        self._cm = self._run()
        return await self._cm.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._cm is not None
        return await self._cm.__aexit__(exc_type, exc, tb)

    async def wait_exit(self, timeout_s: float) -> int | None:
        """The exit code, waiting up to ``timeout_s`` for the process to end."""
        with anyio.move_on_after(timeout_s):
            while self.process is not None and self.process.returncode is None:
                await anyio.sleep(0.01)
        return self.returncode

    @contextlib.asynccontextmanager
    async def _run(self) -> AsyncIterator[TransportStreams]:
        process = await anyio.open_process(
            self._argv,
            env=self._env,
            cwd=self._cwd,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.process = process
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
        reader_scope = anyio.CancelScope()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._read, process, read_send, reader_scope)
            tg.start_soon(self._write, process, write_recv)
            tg.start_soon(self._watch, process, reader_scope)
            tg.start_soon(self._log_stderr, process)
            try:
                yield read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await self._stop(process)
                    for stream in (read_recv, write_send):
                        await stream.aclose()
                tg.cancel_scope.cancel()

    async def _read(
        self,
        process: Process,
        send: MemoryObjectSendStream[SessionMessage | Exception],
        scope: anyio.CancelScope,
    ) -> None:
        assert process.stdout is not None
        delivering = True
        try:
            with scope:
                async with send:
                    buffer = ""
                    async for chunk in TextReceiveStream(process.stdout, errors="replace"):
                        lines = (buffer + chunk).split("\n")
                        buffer = lines.pop()
                        for line in lines:
                            if not (delivering and line.strip()):
                                continue
                            message = self._parse(line)
                            if message is None:
                                continue
                            try:
                                await send.send(message)
                            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                                delivering = False  # nobody listens; keep draining stdout
                    self._stdout_closed.set()  # the server closed it: it is ending
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            self.lost.set()

    def _parse(self, line: str) -> SessionMessage | None:
        """A JSON-RPC message, or None for anything else (noted in the log)."""
        try:
            return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValueError:
            self._log(f"[not JSON-RPC on stdout] {line}\n")
            return None

    def _log(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._errlog.write(self._redact(text).encode("utf-8", "replace"))
            self._errlog.flush()

    async def _log_stderr(self, process: Process) -> None:
        """Copy the server's stderr to the log, one redacted line at a time."""
        assert process.stderr is not None
        held = b""
        try:
            async for chunk in process.stderr:
                *lines, held = (held + chunk).split(b"\n")
                for line in lines:
                    self._log(line.decode("utf-8", "replace") + "\n")
                if len(held) > MAX_LOG_LINE:
                    self._log(held.decode("utf-8", "replace"))
                    held = b""
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            if held:
                self._log(held.decode("utf-8", "replace") + "\n")
            self._stderr_closed.set()

    async def _write(
        self, process: Process, receive: MemoryObjectReceiveStream[SessionMessage]
    ) -> None:
        assert process.stdin is not None
        try:
            async with receive:
                async for message in receive:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            self.lost.set()

    async def _watch(self, process: Process, reader_scope: anyio.CancelScope) -> None:
        while process.returncode is None:
            await anyio.sleep(EXIT_POLL_S)
        # Let the reader deliver what the server wrote before it ended; a child that
        # still holds stdout open must not keep the session waiting.
        with anyio.move_on_after(STDOUT_AFTER_EXIT_S):
            await self._stdout_closed.wait()
        reader_scope.cancel()
        self.lost.set()

    async def _stop(self, process: Process) -> None:
        if process.stdin is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await process.stdin.aclose()
        # A server that closed its stdout is on its way out: see how it ends.
        grace = max(self.grace_s, EXIT_AFTER_EOF_S if self._stdout_closed.is_set() else 0.0)
        if grace > 0:
            await self.wait_exit(grace)
        self.exited_itself = process.returncode is not None
        await _terminate_group(process)
        await self.wait_exit(KILL_AFTER_S)
        # What it wrote last (often why it ended) belongs in the log.
        with anyio.move_on_after(STDOUT_AFTER_EXIT_S):
            await self._stderr_closed.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(
                    OSError, anyio.BrokenResourceError, anyio.ClosedResourceError
                ):
                    await stream.aclose()
        _close_transport(process)


async def _terminate_group(process: Process) -> None:
    """SIGTERM the server's process group, SIGKILL whatever is left after a while."""
    if sys.platform == "win32":  # pragma: no cover - no process groups
        if process.returncode is None:
            process.kill()
        return
    pgid = process.pid  # the server leads its own group (start_new_session)
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    with anyio.move_on_after(KILL_AFTER_S):
        while _group_alive(pgid):
            await anyio.sleep(0.01)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _close_transport(process: Process) -> None:
    """Close asyncio's subprocess transport even when a leftover child still holds a
    pipe (it would warn when collected otherwise). Nothing public reaches it."""
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError):
            close()
