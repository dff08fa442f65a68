"""One run of one MCP server: the task that owns its connection from start to end.

The task enters the transport and the SDK client, lists the tools, reports the server
ready, then waits until the connection is lost or it is told to stop; leaving the
contexts there closes the connection and ends a stdio server's process. Startup runs
under a deadline of ``startup_timeout_sec``. Failures become a short reason and one
:class:`~agent_magics.events.McpServerFailed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Literal

import anyio
import httpx2
from mcp import Client
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation, Tool

from agent_magics.events import EventSink, McpServerFailed, McpServerReady
from agent_magics.mcp import _reasons
from agent_magics.mcp._stdio import GRACE_S, Redact, StdioTransport, keep_text
from agent_magics.mcp.config import McpServerConfig, http_headers, server_env
from agent_magics.mcp.names import sanitize_tool_name

State = Literal["starting", "ready", "failed", "disabled", "stopped"]

MAX_TOOL_PAGES = 100
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # reads wait for long tool calls


def _client_info() -> Implementation:
    try:
        ours = version("agent_magics")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        ours = "0"
    return Implementation(name="agent_magics", version=ours)


class _Unstartable(Exception):
    """Nothing was started: the reason is already a sentence."""


class ServerRun:
    """One server from launch to end. The manager reads its state; only its task
    writes it."""

    def __init__(
        self,
        name: str,
        cfg: McpServerConfig,
        *,
        cwd: Path,
        log_dir: Path,
        emit: EventSink,
        redact: Redact = keep_text,
    ) -> None:
        self.name = name
        self.cfg = cfg
        self.state: State = "stopped" if cfg.enabled else "disabled"
        self.reason: str | None = None
        self.tools: list[Tool] = []
        self.log_path: Path | None = None
        self.client: Client | None = None
        self.task: asyncio.Task[None] | None = None
        self.stopping = False
        self.settled = asyncio.Event()  # startup is over (ready, failed or stopped)
        self.ended = asyncio.Event()  # the task is over
        self._cwd = cwd
        self._log_dir = log_dir.expanduser()
        self._emit = emit
        self._redact = redact
        self._scope: anyio.CancelScope | None = None

    def offered(self) -> list[Tool]:
        return [tool for tool in self.tools if self.cfg.offers(tool.name)]

    def launch(self) -> None:
        self.state = "starting"
        self.reason = None
        self.task = asyncio.get_running_loop().create_task(self._own(), name=f"mcp:{self.name}")

    async def stop(self) -> None:
        """End the connection (and the process) and wait until it is over."""
        if self.task is None:
            if self.state != "disabled":
                self.state = "stopped"
            return
        self.stopping = True
        if self._scope is not None:
            self._scope.cancel()
        await asyncio.wait([self.task])

    # -- the owning task ----------------------------------------------------------------

    async def _own(self) -> None:
        failure: str | None = None
        timed_out = False
        stdio: StdioTransport | None = None
        offset = 0
        try:
            deadline = anyio.current_time() + self.cfg.startup_timeout_sec
            with anyio.CancelScope(deadline=deadline) as scope:
                self._scope = scope
                if self.stopping:
                    scope.cancel()
                try:
                    async with contextlib.AsyncExitStack() as stack:
                        if self.cfg.transport == "stdio":
                            stdio, offset = self._stdio(stack)
                        await self._serve(stack, stdio, scope)
                except _Unstartable as exc:
                    failure = str(exc)
                except Exception as exc:
                    failure = _reasons.describe(exc, command=self.cfg.command, url=self.cfg.url)
            timed_out = scope.cancel_called and not self.stopping and self.state == "starting"
        except Exception as exc:  # pragma: no cover - a fault outside the connection
            failure = _reasons.describe(exc)
        finally:
            self.client = None
            self._finish(failure, timed_out, stdio, offset)

    async def _serve(
        self,
        stack: contextlib.AsyncExitStack,
        stdio: StdioTransport | None,
        scope: anyio.CancelScope,
    ) -> None:
        cfg = self.cfg
        transport: Transport
        if stdio is None:
            assert cfg.url is not None
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=http_headers(cfg), timeout=HTTP_TIMEOUT)
            )
            transport = streamable_http_client(cfg.url, http_client=http)
        else:
            transport = stdio
        client = Client(
            transport,
            cache=None,
            read_timeout_seconds=cfg.tool_timeout_sec,
            client_info=_client_info(),
        )
        await stack.enter_async_context(client)
        self.tools = await _list_tools(client)
        scope.deadline = math.inf
        if stdio is not None:
            stdio.grace_s = GRACE_S  # a server that started may take a moment to stop
        self.client = client
        self.state = "ready"
        self.settled.set()
        self._emit(McpServerReady(self.name, cfg.transport, tuple(t.name for t in self.offered())))
        if stdio is None:
            await anyio.sleep_forever()  # an HTTP failure ends this through the transport
        else:
            await stdio.lost.wait()
        self.client = None

    def _stdio(self, stack: contextlib.AsyncExitStack) -> tuple[StdioTransport, int]:
        cfg = self.cfg
        assert cfg.command is not None
        cwd = self._cwd / cfg.cwd.expanduser() if cfg.cwd is not None else self._cwd
        if not cwd.is_dir():
            raise _Unstartable(f"its working folder does not exist: {cwd}")
        log_path = self._log_dir / f"mcp-{sanitize_tool_name(self.name)}.log"
        try:
            self._log_dir.mkdir(parents=True, exist_ok=True)
            log = stack.enter_context(log_path.open("ab"))
            stamp = datetime.now().isoformat(sep=" ", timespec="seconds")
            log.write(self._redact(f"--- {stamp} starting: {cfg.describe()}\n").encode())
            log.flush()
        except OSError as exc:
            raise _Unstartable(f"cannot write its log file {log_path}: {exc.strerror}") from exc
        self.log_path = log_path
        # Until it has started, a server is stopped without waiting for it.
        transport = StdioTransport(
            cfg.command,
            list(cfg.args),
            env=server_env(cfg),
            cwd=cwd,
            errlog=log,
            grace_s=0.0,
            redact=self._redact,
        )
        return transport, log.tell()

    def _finish(
        self, failure: str | None, timed_out: bool, stdio: StdioTransport | None, offset: int
    ) -> None:
        starting = self.state == "starting"
        if self.stopping:
            self.state = "stopped"
        else:
            if timed_out:
                failure = _reasons.timed_out(self.cfg.startup_timeout_sec)
            elif stdio is not None and stdio.exited_itself and stdio.returncode is not None:
                line = _reasons.last_stderr_line(self.log_path, offset)
                failure = _reasons.exited(stdio.returncode, line, starting=starting)
            self.state = "failed"
            self.reason = self._redact(failure or "the connection closed")
            log = str(self.log_path) if self.log_path is not None else None
            self._emit(McpServerFailed(self.name, self.reason, log))
        self.settled.set()
        self.ended.set()


async def _list_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        if not (cursor := page.next_cursor):
            break
    return tools
