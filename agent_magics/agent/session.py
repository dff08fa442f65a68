"""A conversation with a coding agent: history, and turns of model <-> tools.

One turn: send instructions + the whole history + the tools; run the tool calls the
model makes; append their outputs; repeat until the model answers with no tool call.
Everything a front end needs to show arrives as events (:mod:`agent_magics.events`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.agent import compaction
from agent_magics.agent.command_setup import sandbox_notices, start_shell_snapshot
from agent_magics.agent.compact_trigger import (
    ContextState,
)
from agent_magics.agent.multi_agent import multi_agent_tools
from agent_magics.agent.redaction import SecretSource, SessionRedactor
from agent_magics.agent.requests import request_for, turn_context
from agent_magics.agent.subagents import AgentNode
from agent_magics.agent.tool_round import run_round, take_pending
from agent_magics.agent.turn_messages import environment_changes, opening_messages
from agent_magics.agent.turn_window import TurnWindow
from agent_magics.agent.window_watch import WindowWatch
from agent_magics.config import SessionConfig
from agent_magics.errors import TurnAborted, UserError
from agent_magics.events import (
    ContextCompacted,
    Event,
    EventSink,
    RetryScheduled,
    TurnAbortedEvent,
    TurnFinished,
    TurnStarted,
    Usage,
)
from agent_magics.models.base import ModelClient, ModelRequest
from agent_magics.protocol.approval import Approver, deny_all
from agent_magics.protocol.items import AnyItem, Message
from agent_magics.store.changes import ChangeTracker
from agent_magics.store.paths import undo_folder
from agent_magics.tools.context import SessionServices, ShellInfo, TurnContext
from agent_magics.tools.goal_state import goal_state, items_after_response
from agent_magics.tools.handlers.toolset import ExtraTools, ToolFilter, build_registry
from agent_magics.tools.notebook.cell_undo import take_cell_edits
from agent_magics.tools.notebook.document import close_live_notebooks
from agent_magics.tools.registry import ToolRegistry
from agent_magics.tools.router import ToolRouter, tool_call_from_item
from agent_magics.tools.sandbox.jupyter import runtime_secrets
from agent_magics.tools.stopping import running_calls
from agent_magics.tools.unified_exec import close_tool_processes, kill_tool_processes
from agent_magics.tools.unified_exec.snapshot import close_shell_snapshot

if TYPE_CHECKING:
    from agent_magics.mcp.manager import McpManager, ServerStatus
    from agent_magics.tools.context import KeptFiles

DEFAULT_LOG_DIR = Path.home() / ".agent_magics" / "logs"
ENGINE_FIELDS = {
    "base_url",
    "provider",
    "request_max_retries",
    "stream_idle_timeout_s",
    "record_path",
    "replay_path",
} & set(SessionConfig.model_fields)
"""Settings the model client is built from: a change of one needs a new session."""


@dataclass(frozen=True)
class TurnResult:
    final_text: str
    usage: Usage


class Session:
    """One conversation. Consecutive :meth:`run_turn` calls continue it."""

    def __init__(
        self,
        config: SessionConfig,
        *,
        client: ModelClient | None = None,
        approver: Approver = deny_all,
        extra_tools: ExtraTools | None = None,
        offers: ToolFilter | None = None,
        node: Callable[[Session], AgentNode] | None = None,
        kept: KeptFiles | None = None,
        secrets: SecretSource = runtime_secrets,
    ) -> None:
        self.config = config
        self.extra_tools = extra_tools
        self.offers = offers  # a teacher's policy may keep tools from the model
        self.kept = kept  # files its commands and patches never change (its helpers' too)
        # Jupyter's tokens and keys, from the front end (by default the runtime folder's,
        # so a session made in a script scrubs them too): its helpers' too
        self.secrets = secrets
        # Secrets never reach the model, a front end or a log (see agent_magics.agent.redaction).
        self.redact = SessionRedactor(lambda: self.config, found=secrets)
        self.thread_id = str(uuid.uuid4())
        self._sinks: list[EventSink] = []
        self.services = SessionServices(approver=approver, emit=self._emit)
        self.changes = ChangeTracker(self.redact.text)  # the turn's diff and undo
        self.services.before_write = lambda paths: self.changes.before_write(paths)
        # The MCP SDK is imported only when a server is configured (or added later).
        self.mcp: McpManager | None = self._new_mcp() if config.mcp_servers else None
        self.agents = node(self) if node is not None else AgentNode(self)  # sub-agents
        self.registry = self._build_registry()
        self.router = ToolRouter(self.registry, self.services)
        self._client = client
        self.history: list[AnyItem] = []
        self.on_history: Callable[[], None] | None = None
        """Called after items join the history (a session file writes them at once)."""
        self.usage = Usage()
        self.turns = 0  # the conversation's turns: the one count of them (file, undo, view)
        self.context = ContextState(window=config.model_context_window)  # window fill
        self.windows = WindowWatch()  # the model's window, found once
        self.shell = ShellInfo.detect()
        self._sync_shell_snapshot()
        self._sandbox_checked = False
        self._held_notes: list[str] = []  # context of a turn taken back, for the next one
        self._output_schema: dict[str, Any] | None = None  # the running turn's, if any

    def add_note(self, text: str) -> None:
        """Tell the model ``text`` before the next turn's prompt: what the person did
        between turns (a review they ran, say). Its secrets are taken out as a tool
        output's are."""
        self._held_notes.append(text)

    # -- events -------------------------------------------------------------------------

    def subscribe(self, sink: EventSink) -> Callable[[], None]:
        """Call ``sink`` with every event; returns a function that unsubscribes."""
        self._sinks.append(sink)
        return lambda: self._sinks.remove(sink) if sink in self._sinks else None

    def _emit(self, event: Event) -> None:
        event = self.redact.event(event)
        for sink in list(self._sinks):
            sink(event)

    @property
    def approver(self) -> Approver:
        return self.services.approver

    @approver.setter
    def approver(self, approver: Approver) -> None:
        self.services.approver = approver

    # -- settings and MCP servers -------------------------------------------------------

    def reconfigure(self, config: SessionConfig) -> bool:
        """Take ``config`` for the next turns when this session can run them: the same
        model client and tool set (per-turn settings such as the model, the policies, the
        folder or the MCP servers may differ). False, leaving this session as it is, when
        the model server, its key or the tools changed: that needs a new session."""
        old = self.config
        same = old.model_dump(include=ENGINE_FIELDS) == config.model_dump(include=ENGINE_FIELDS)
        if not (same and old.key() == config.key() and old.tools_config() == config.tools_config()):
            return False
        self.config = config
        return True

    async def sync_mcp_servers(self) -> None:
        """Bring the MCP servers in line with the settings (every turn does it first):
        stop the removed ones, (re)start the new and changed ones. A server that fails is
        reported by an event; this never raises for it."""
        if self.mcp is None:
            if not self.config.mcp_servers:
                return
            self.mcp = self._new_mcp()
        await self.mcp.sync(self.config.mcp_servers)

    def mcp_statuses(self) -> list[ServerStatus]:
        """Every configured server: state, reason of a failure, tools, log file."""
        return self.mcp.statuses() if self.mcp is not None else []

    def _new_mcp(self) -> McpManager:
        from agent_magics.mcp.manager import McpManager

        return McpManager(
            self.config.mcp_servers,
            cwd=self.config.cwd,
            log_dir=self.config.log_dir or DEFAULT_LOG_DIR,
            emit=self._emit,
            redact=self.redact.text,
            on_tools_changed=self.refresh_tools,
        )

    def refresh_tools(self) -> None:
        """Offer the tools as they are now: the MCP servers' and the front end's extra
        tools (every turn does it first)."""
        self.registry = self._build_registry()
        self.router.registry = self.registry

    def _build_registry(self) -> ToolRegistry:
        agents = multi_agent_tools(self.agents, self.offers) if self.agents.can_spawn else ()
        return build_registry(
            self.config.tools_config(), self.mcp, self.extra_tools, self.offers, agents
        )

    # -- model --------------------------------------------------------------------------

    @property
    def client(self) -> ModelClient:
        if self._client is None:
            from agent_magics.agent.providers import create_client

            self._client = create_client(self.config, on_retry=self._on_retry)
        return self._client

    def _on_retry(self, attempt: int, delay: float, reason: str) -> None:
        self._emit(RetryScheduled(attempt, delay, reason))

    def turn_context(self) -> TurnContext:
        read_only = tuple(self.kept()) if self.kept is not None else ()
        return turn_context(self.config, self.shell, self.thread_id, read_only)

    def request(self) -> ModelRequest:
        """The turn's next request (with the turn's output schema, if it has one)."""
        request = self.request_for(self.history, True, [])
        if self._output_schema is None:
            return request
        return replace(request, output_schema=self._output_schema)

    def request_for(
        self, history: Sequence[AnyItem], tools: bool, tail: list[dict[str, Any]]
    ) -> ModelRequest:
        """The request for ``history`` (then the raw ``tail`` items), offering the
        tools or none (a summarising request): :func:`.requests.request_for`."""
        return request_for(
            self.config, self.registry.wire_specs(), self.thread_id, history, tools, tail
        )

    # -- turns --------------------------------------------------------------------------

    async def run_turn(
        self,
        prompt: str,
        context: Sequence[str] = (),
        *,
        images: Sequence[str] = (),
        output_schema: dict[str, Any] | None = None,
    ) -> TurnResult:
        """Run one turn to its end. ``context``: texts a front end adds as user messages
        before the prompt (what happened around it, such as the cells that ran); their
        secrets are taken out like a tool output's. ``images``: data URLs attached to
        the prompt; ``output_schema``: the JSON schema this turn's requests ask the final
        answer to follow (checking it is the caller's part). Raises UserError for
        problems a person must fix and TurnAborted when the person stopped it; the
        history stays well-formed either way, and as it was when the turn failed before
        the model answered."""
        self.redact.refresh()  # a server or kernel started since the last turn
        turn = self.turn_context()
        self._sync_shell_snapshot()
        self._check_sandbox(turn)
        window = TurnWindow(self)
        await window.before([prompt, *context, *self._held_notes])
        start = len(self.history)
        if not self.history:
            self.history.extend(opening_messages(turn))
        else:
            self.history.extend(environment_changes(self.history, turn))
        notes, self._held_notes = [*self._held_notes, *self.changes.take_notes(), *context], []
        self.history.extend(Message.user(self.redact.text(text)) for text in notes)
        self.history.append(Message.user(prompt, images))
        self._output_schema = output_schema  # for this turn's requests (request())
        self.turns += 1
        self._emit(TurnStarted(prompt, self.turns))
        self.changes.start_turn(turn.cwd, undo_folder(self.config, self.thread_id), self.turns)
        take_cell_edits(self.services)  # none left from a turn that ended another way
        usage = Usage()
        goal_state(self.services).turn_started()  # idle time is not goal time
        final_text = ""
        answered = False
        try:
            await self.sync_mcp_servers()  # settings may have changed since the last turn
            if self.extra_tools is not None:
                self.refresh_tools()
            while True:
                items, step_usage = await window.respond()
                usage = usage + step_usage
                goal_state(self.services).response(step_usage.total_tokens)
                answered = True
                self.history.extend(items)
                self._history_grew()
                window.counted(step_usage)
                calls = [c for c in (tool_call_from_item(i.wire()) for i in items) if c]
                texts = [i.text for i in items if isinstance(i, Message) and i.role == "assistant"]
                if texts:
                    final_text = texts[-1]
                if not calls:
                    self.history.extend(items_after_response(self.services))  # a goal's usage
                    await self.agents.settle()  # a turn ends with the agents it started
                    take_pending(self)  # their ends, for the next request
                    break
                await run_round(self, calls, turn)
                self.history.extend(items_after_response(self.services))  # a goal's usage
                await window.between_rounds()
        except (asyncio.CancelledError, TurnAborted) as exc:
            self.agents.stop()  # a stopped turn stops the children it started
            self.usage = self.usage + usage
            self._emit_changes()
            self._emit(
                TurnAbortedEvent(
                    "interrupted" if isinstance(exc, asyncio.CancelledError) else str(exc)
                )
            )
            raise
        except Exception:
            if not answered and not window.compacted:  # (a compacted history keeps the prompt)
                self._take_back(start, notes)
            self._emit_changes()
            raise
        finally:
            self._output_schema = None
        self.usage = self.usage + usage
        self._emit_changes()
        self._emit(TurnFinished(final_text, usage, await window.after()))
        return TurnResult(final_text, usage)

    async def compact(self, words: str = "") -> ContextCompacted:
        """Compact the conversation now (a person asked: ``%agent compact WORDS``,
        the words added to the prompt); raises as a turn's request does."""
        if not self.history:
            raise UserError("There is no conversation to compact yet.")
        return await compaction.compact(self, "manual", "standalone_turn", words)

    def fills_window(self, request: ModelRequest) -> bool:
        """Whether ``request`` may not fit the model's known window."""
        return self.context.near(request.instructions, request.input)

    def _take_back(self, start: int, notes: list[str]) -> None:
        """Forget a turn that failed before the model answered, so that asking again does
        not send the prompt twice; its context notes wait for the next turn. (A turn the
        model answered keeps what it did, as Codex keeps it.)"""
        del self.history[start:]
        self._held_notes = notes
        self._history_grew()

    def _emit_changes(self) -> None:
        """Say which files the turn changed, with their diffs (before the turn's end)."""
        for event in self.changes.finish(take_cell_edits(self.services)).events():
            self._emit(event)

    def _sync_shell_snapshot(self) -> None:
        start_shell_snapshot(self.services, self.config, self.shell, self.redact.text)

    def _check_sandbox(self, turn: TurnContext) -> None:
        """Say once per session what the sandbox cannot do here (:func:`sandbox_notices`)."""
        if not self._sandbox_checked:
            self._sandbox_checked = True
            for event in sandbox_notices(turn):
                self._emit(event)

    def _history_grew(self) -> None:
        if self.on_history is not None:
            self.on_history()

    # -- lifecycle ----------------------------------------------------------------------

    def reset(self) -> None:
        """Forget the conversation (tools, MCP servers and approvals for the session
        are kept)."""
        self.history.clear()
        self.usage = Usage()
        self.turns = 0
        self.context = ContextState(window=self.context.window)
        self.thread_id = str(uuid.uuid4())
        goal_state(self.services).forget()  # a goal belongs to its thread

    def kill_processes(self) -> None:
        """Kill at once every process the session's tools started (SIGKILL): for a stop
        button; safe to call from any thread."""
        self.agents.stop()
        kill_tool_processes(self.services)

    def stop_call(self, call_id: str) -> bool:
        """Stop one running tool call (a command's process group is killed); the model
        reads it as aborted by the user and the turn goes on. Safe from any thread; False
        when that call is not running."""
        return running_calls(self.services).stop(call_id)

    async def aclose(self) -> None:
        """End the session: stop every process its tools started and every MCP server,
        close the client. Its sub-agents are closed first."""
        await self.agents.aclose()
        await close_tool_processes(self.services)
        close_shell_snapshot(self.services)
        await close_live_notebooks(self.services)  # leaves the notebook rooms kept open
        if self.mcp is not None:
            await self.mcp.aclose()
        if self._client is not None:
            await self._client.aclose()
