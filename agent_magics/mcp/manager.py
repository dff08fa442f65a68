"""The session's MCP servers: started together, called by name, stopped together.

Each server's connection is owned by one long-lived asyncio task (the SDK's contexts are
entered and left in that task); calls come from any task on the same event loop. A
server that cannot start, times out or dies is marked failed with a short reason, an
:class:`~agent_magics.events.McpServerFailed` is emitted once, and its tools answer an
error; the other servers and the session carry on. A stdio server's stderr goes to
``<log_dir>/mcp-<name>.log``, line by line through ``redact`` (a server can read our
environment, so its log must not carry our secrets).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
from mcp import Client, MCPError
from mcp.types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)

from agent_magics.events import EventSink, ignore_events
from agent_magics.mcp._reasons import describe, seconds
from agent_magics.mcp._server import ServerRun, State
from agent_magics.mcp._stdio import Redact, keep_text
from agent_magics.mcp.config import ApprovalMode, McpServerConfig
from agent_magics.mcp.names import qualify_tools

T = TypeVar("T")

MAX_PAGES = 100  # listing pages read from one server before giving up
ENDED_WAIT_S = 5.0  # how long a failed call waits for its server's end to be known


@dataclass(frozen=True)
class McpTool:
    """A tool a ready server offers, under the name the model sees."""

    qualified_name: str
    server: str
    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] | None  # wire names: readOnlyHint, destructiveHint, ...


@dataclass(frozen=True)
class ServerStatus:
    """One configured server as listings show it."""

    name: str
    transport: Literal["stdio", "http"]
    state: State
    reason: str | None
    tools: tuple[str, ...]  # the server's own names of the tools it offers
    log_path: Path | None
    description: str


class McpError(Exception):
    """An MCP request got no result; ``message`` says why and names the server."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class McpManager:
    """Starts, calls and stops the MCP servers of one session (one event loop).

    ``on_tools_changed`` is called after servers were synced, added, removed or
    restarted: the session then offers the tools of the servers as they are."""

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        *,
        cwd: Path,
        log_dir: Path,
        emit: EventSink = ignore_events,
        redact: Redact = keep_text,
        on_tools_changed: Callable[[], None] = lambda: None,
    ) -> None:
        self._cwd = cwd
        self._on_tools_changed = on_tools_changed
        self._redact = redact
        self._log_dir = log_dir
        self._emit = emit
        self._runs = {name: self._new_run(name, cfg) for name, cfg in servers.items()}
        self._closed = False
        self._warmup: asyncio.Task[None] | None = None

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Start every enabled server not started yet, and wait until each is ready or
        failed. A server's failure is recorded and reported, never raised."""
        if self._closed:
            return
        for run in self._runs.values():
            if run.state == "stopped" and run.task is None and run.cfg.enabled:
                self._launch(run)
        await asyncio.gather(*(run.settled.wait() for run in self._runs.values() if run.task))

    async def sync(self, wanted: Mapping[str, McpServerConfig]) -> None:
        """Bring the servers in line with ``wanted``: stop the ones not in it, (re)start
        the new and changed ones, start the others not started yet."""
        for name in [name for name in self._runs if name not in wanted]:
            await self._runs.pop(name).stop()
        for name, cfg in wanted.items():
            if self.config(name) != cfg:
                await self._replace(name, cfg)
        await self.start()
        self._on_tools_changed()

    async def add(self, name: str, cfg: McpServerConfig) -> ServerStatus:
        """Add a server (replacing one of the same name) and start it if enabled."""
        status = self._status(await self._replace(name, cfg))
        self._on_tools_changed()
        return status

    async def remove(self, name: str) -> bool:
        """Stop a server and forget it; False when there was none of that name."""
        run = self._runs.pop(name, None)
        if run is None:
            return False
        await run.stop()
        self._on_tools_changed()
        return True

    async def restart(self, name: str) -> ServerStatus:
        """Stop a server and start it again with the same configuration."""
        run = self._runs.get(name)
        if run is None:
            raise McpError(f"unknown MCP server '{name}'")
        return await self.add(name, run.cfg)

    async def aclose(self) -> None:
        """Stop every server (stdio children are killed if they linger). Idempotent."""
        self._closed = True
        await asyncio.gather(*(run.stop() for run in list(self._runs.values())))
        if self._warmup is not None:
            await self._warmup

    # -- what is there ------------------------------------------------------------------

    @property
    def configured(self) -> bool:
        return bool(self._runs)

    def names(self) -> list[str]:
        return list(self._runs)

    def config(self, name: str) -> McpServerConfig | None:
        run = self._runs.get(name)
        return None if run is None else run.cfg

    def approval_mode(self, name: str) -> ApprovalMode:
        """The server's ``default_tools_approval_mode`` (``auto`` when unknown)."""
        run = self._runs.get(name)
        return "auto" if run is None else run.cfg.default_tools_approval_mode

    def statuses(self) -> list[ServerStatus]:
        return [self._status(run) for run in self._runs.values()]

    def tools(self) -> list[McpTool]:
        """The ready servers' offered tools, sorted by the name the model sees."""
        found: dict[tuple[str, str], Tool] = {}
        for run in self._runs.values():
            if run.state == "ready":
                for tool in run.offered():
                    found.setdefault((run.name, tool.name), tool)
        tools = [
            _mcp_tool(qualified, server, found[(server, name)])
            for qualified, server, name in qualify_tools(found)
        ]
        return sorted(tools, key=lambda tool: tool.qualified_name)

    def tool(self, qualified: str) -> McpTool | None:
        return next((t for t in self.tools() if t.qualified_name == qualified), None)

    # -- requests -----------------------------------------------------------------------

    async def call_tool(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any] | None,
        timeout_s: float | None = None,
    ) -> CallToolResult:
        """Call ``tool`` on ``server``; McpError when no result comes back (server not
        running, timeout, server died during the call)."""
        run, client = await self._client(server)
        timeout = run.cfg.tool_timeout_sec if timeout_s is None else timeout_s
        return await self._request(
            run,
            "tools/call",
            lambda: client.call_tool(tool, arguments, read_timeout_seconds=timeout),
            timeout,
        )

    async def list_resources(self, server: str, cursor: str | None = None) -> ListResourcesResult:
        run, client = await self._client(server)
        return await self._request(
            run, "resources/list", lambda: client.list_resources(cursor=cursor)
        )

    async def list_resource_templates(
        self, server: str, cursor: str | None = None
    ) -> ListResourceTemplatesResult:
        run, client = await self._client(server)
        return await self._request(
            run,
            "resources/templates/list",
            lambda: client.list_resource_templates(cursor=cursor),
        )

    async def read_resource(self, server: str, uri: str) -> ReadResourceResult:
        run, client = await self._client(server)
        return await self._request(run, "resources/read", lambda: client.read_resource(uri))

    async def list_all_resources(self) -> dict[str, list[Resource]]:
        """Every ready server's resources (all pages); a server that errors is left out."""

        async def page(name: str, cursor: str | None) -> tuple[list[Resource], str | None]:
            found = await self.list_resources(name, cursor)
            return found.resources, found.next_cursor

        return await self._from_each(page)

    async def list_all_resource_templates(self) -> dict[str, list[ResourceTemplate]]:
        """Every ready server's resource templates; a server that errors is left out."""

        async def page(name: str, cursor: str | None) -> tuple[list[ResourceTemplate], str | None]:
            found = await self.list_resource_templates(name, cursor)
            return found.resource_templates, found.next_cursor

        return await self._from_each(page)

    # -- inside -------------------------------------------------------------------------

    async def _replace(self, name: str, cfg: McpServerConfig) -> ServerRun:
        old = self._runs.get(name)
        if old is not None:
            await old.stop()
        run = self._runs[name] = self._new_run(name, cfg)
        if cfg.enabled and not self._closed:
            self._launch(run)
            await run.settled.wait()
        return run

    def _launch(self, run: ServerRun) -> None:
        run.launch()
        if self._warmup is None:
            # The SDK imports jsonschema on the first structured result; the import takes
            # seconds and would stall the event loop in the middle of a call.
            self._warmup = asyncio.create_task(asyncio.to_thread(_import_quietly, "jsonschema"))

    def _new_run(self, name: str, cfg: McpServerConfig) -> ServerRun:
        return ServerRun(
            name, cfg, cwd=self._cwd, log_dir=self._log_dir, emit=self._emit, redact=self._redact
        )

    def _status(self, run: ServerRun) -> ServerStatus:
        return ServerStatus(
            name=run.name,
            transport=run.cfg.transport,
            state=run.state,
            reason=run.reason,
            tools=tuple(tool.name for tool in run.offered()) if run.state == "ready" else (),
            log_path=run.log_path,
            description=run.cfg.describe(),
        )

    async def _client(self, server: str) -> tuple[ServerRun, Client]:
        run = self._runs.get(server)
        if run is None:
            raise McpError(f"unknown MCP server '{server}'")
        if run.state == "starting":
            await run.settled.wait()
        if run.state == "ready" and run.client is not None:
            return run, run.client
        if run.state == "failed":
            raise McpError(f"MCP server '{server}' is not available: {run.reason}")
        if run.state == "disabled":
            raise McpError(f"MCP server '{server}' is disabled")
        raise McpError(f"MCP server '{server}' is not running")

    async def _request(
        self,
        run: ServerRun,
        method: str,
        send: Callable[[], Awaitable[T]],
        timeout_s: float | None = None,
    ) -> T:
        try:
            return await send()
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                after = seconds(timeout_s if timeout_s is not None else run.cfg.tool_timeout_sec)
                raise McpError(
                    f"MCP server '{run.name}' timed out awaiting {method} after {after}"
                ) from exc
            if exc.code != CONNECTION_CLOSED:
                raise McpError(
                    f"MCP server '{run.name}' answered {method} with error {exc.code}: "
                    f"{exc.message}"
                ) from exc
            raise await self._lost_during(run, method) from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise await self._lost_during(run, method) from exc
        except Exception as exc:
            raise McpError(
                f"MCP server '{run.name}' failed during {method}: {describe(exc)}"
            ) from exc

    async def _lost_during(self, run: ServerRun, method: str) -> McpError:
        with anyio.move_on_after(ENDED_WAIT_S):
            await run.ended.wait()
        if run.state == "failed":
            return McpError(f"MCP server '{run.name}' failed during {method}: {run.reason}")
        if run.stopping:
            return McpError(f"MCP server '{run.name}' was stopped during {method}")
        return McpError(f"MCP server '{run.name}' closed the connection during {method}")

    async def _from_each(
        self, page: Callable[[str, str | None], Awaitable[tuple[list[T], str | None]]]
    ) -> dict[str, list[T]]:
        async def every_page(name: str) -> list[T] | None:
            found: list[T] = []
            cursor: str | None = None
            try:
                for _ in range(MAX_PAGES):
                    items, cursor = await page(name, cursor)
                    found.extend(items)
                    if not cursor:
                        break
            except McpError:
                return None
            return found

        names = [run.name for run in self._runs.values() if run.state == "ready"]
        found = await asyncio.gather(*(every_page(name) for name in names))
        return {name: items for name, items in zip(names, found, strict=True) if items is not None}


def _import_quietly(module: str) -> None:
    with contextlib.suppress(ImportError):
        importlib.import_module(module)


def _mcp_tool(qualified: str, server: str, tool: Tool) -> McpTool:
    annotations = tool.annotations
    return McpTool(
        qualified_name=qualified,
        server=server,
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        annotations=None
        if annotations is None
        else annotations.model_dump(mode="json", by_alias=True, exclude_none=True),
    )
