"""Sub-agents: child sessions a session starts with ``spawn_agent`` and that run beside it.

A child is a :class:`~agent_magics.agent.session.Session` of its own (its own history and
tool processes) with the parent's settings: model server, approval policy, sandbox and
working folder. It runs as an asyncio task on the parent's loop while the parent's turn
goes on. Everything it emits reaches the parent's front end wrapped in
:class:`~agent_magics.events.AgentEvent`; its approval questions go to the parent's
approver, marked with the asking agent's path (``ApprovalRequest.agents``), so a notebook
card, the terminal or a headless approver answers them as it answers the parent's; each
question has its own ticket, so no call id a model picks can reach another's question.

One :class:`AgentControl` is shared by a whole tree of agents and holds Codex's limits:
children of children only down to ``max_depth`` (1: the main agent's children cannot
spawn) and at most ``max_threads`` (6) open at once, counting finished children until
they are closed. A child's failure (the model server, an exception) becomes its
``errored`` status, which the parent reads; it is never raised into the parent's turn.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from agent_magics.agent.agent_ids import FINAL, Nicknames, dumps, new_agent_id, status_json
from agent_magics.errors import RespondToModel, UserError
from agent_magics.events import (
    AgentEvent,
    AgentSpawned,
    AgentStatusChanged,
    ApprovalDecided,
    Event,
)
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision
from agent_magics.protocol.items import AnyItem, Message

if TYPE_CHECKING:
    from agent_magics.agent.redaction import SecretSource
    from agent_magics.config import SessionConfig
    from agent_magics.events import EventSink
    from agent_magics.protocol.approval import Approver
    from agent_magics.store.saved_children import SavedChild
    from agent_magics.tools.context import KeptFiles, SessionServices
    from agent_magics.tools.handlers.toolset import ExtraTools, ToolFilter

log = logging.getLogger(__name__)

MAX_DEPTH = 1
MAX_THREADS = 6
DEPTH_LIMIT = "Agent depth limit reached. Solve the task yourself."
THREAD_LIMIT = "collab spawn failed: agent thread limit reached"


def not_found(agent_id: str) -> RespondToModel:
    return RespondToModel(f"agent with id {agent_id} not found")


class TurnAnswer(Protocol):
    @property
    def final_text(self) -> str: ...


class AgentSession(Protocol):
    """A session as the tree of agents sees it, the parent's and each child's:
    :class:`~agent_magics.agent.session.Session` (which holds its :class:`AgentNode`) is
    the one implementation. A child's session is made as its parent's was, with the
    parent's settings, tools and kept files."""

    config: SessionConfig
    extra_tools: ExtraTools | None
    offers: ToolFilter | None
    kept: KeptFiles | None
    secrets: SecretSource
    services: SessionServices
    history: list[AnyItem]
    on_history: Callable[[], None] | None
    agents: AgentNode

    def __init__(
        self,
        config: SessionConfig,
        *,
        approver: Approver,
        extra_tools: ExtraTools | None,
        offers: ToolFilter | None,
        node: Callable[[AgentSession], AgentNode] | None,
        kept: KeptFiles | None,
        secrets: SecretSource,
    ) -> None: ...
    def subscribe(self, sink: EventSink) -> Callable[[], None]: ...
    async def run_turn(self, prompt: str) -> TurnAnswer: ...
    def stop_call(self, call_id: str) -> bool: ...
    def kill_processes(self) -> None: ...
    async def aclose(self) -> None: ...


@dataclass
class AgentControl:
    """What a tree of agents shares: every child by id, the open count and the names."""

    max_depth: int = MAX_DEPTH
    max_threads: int = MAX_THREADS
    open: dict[str, Child] = field(default_factory=dict)
    closed: dict[str, Child] = field(default_factory=dict)  # resume_agent can reopen these
    nicknames: Nicknames = field(default_factory=Nicknames)

    def reserve(self) -> None:
        if len(self.open) >= self.max_threads:
            raise RespondToModel(THREAD_LIMIT)


class AgentNode:
    """One session's place in the tree: its depth and the children it spawned."""

    def __init__(self, session: AgentSession, control: AgentControl | None = None, depth: int = 0):
        self.session = session
        self.control = control or AgentControl()
        self.depth = depth
        self.children: list[Child] = []

    @property
    def can_spawn(self) -> bool:
        return self.depth < self.control.max_depth

    def child(self, agent_id: str) -> Child:
        """An open agent of the tree (Codex looks ids up tree-wide), else not found."""
        found = self.control.open.get(agent_id)
        if found is None:
            raise not_found(agent_id)
        return found

    async def spawn(self, call_id: str, prompt: str, *, fork: bool, model: str | None) -> Child:
        if not self.can_spawn:
            raise RespondToModel(DEPTH_LIMIT)
        self.control.reserve()
        history = [i for i in self.session.history if isinstance(i, Message)] if fork else []
        child = Child(self, new_agent_id(), self.control.nicknames.take(), prompt)
        child.call_id = call_id
        child.open(history, model, announce=False)
        emit = self.session.services.emit
        emit(AgentSpawned(call_id, child.agent_id, child.nickname, self.depth + 1, prompt))
        emit(AgentStatusChanged(child.agent_id, child.status))
        child.submit(prompt)
        return child

    def restore(self, saved: Iterable[SavedChild]) -> None:
        """The children of a resumed session, as closed agents with their names:
        ``resume_agent`` reopens one with the history its file holds (Codex keeps each
        sub-agent's thread and brings a closed one back the same way). Until then
        wait_agent, send_input and close_agent answer them as closed agents."""
        for found in saved:
            child = Child(self, found.agent_id, found.nickname, found.prompt)
            child.call_id, child.saved = found.call_id, list(found.history)
            child.recorded = len(found.history)  # already in the file: not written again
            child.status, child.final_text = found.status, found.final_text
            child.shown_text = found.final_text  # (the file has what people read)
            self.control.closed[child.agent_id] = child
            self.control.nicknames.keep(child.nickname)

    def reopen(self, call_id: str, child: Child) -> None:
        """Open the closed ``child`` again with its history (``call_id``: the
        resume_agent call). One a resume gave back has no card in this session yet: it
        is told as spawned by this call, so its work shows under it, with its name."""
        self.control.reserve()
        if child.session is not None:
            child.open(list(child.session.history))
            return
        child.reopened = call_id, child.status, child.shown_text  # its past, for history
        child.open(list(child.saved), announce=False)
        parent = child.parent
        emit = parent.session.services.emit
        emit(AgentSpawned(call_id, child.agent_id, child.nickname, parent.depth + 1, child.prompt))
        emit(AgentStatusChanged(child.agent_id, child.status))

    def kept(self) -> list[Child]:
        """Its children: those it spawned, then those a resume gave back still closed."""
        restored = [c for c in self.control.closed.values() if c.parent is self]
        return [*self.children, *(c for c in restored if c not in self.children)]

    async def settle(self) -> None:
        """Wait until none of its children is still working. A turn ends with the agents
        it started: in a notebook the cell stays the place where a child's questions
        are answered and its work is seen, the next cell starts with every result, and
        Run All or a headless run never leaves a child working unseen. (``codex exec``
        ends them instead; its interactive TUI lets them run on between turns.)"""
        while busy := [t for t in (c.working() for c in self.children) if t is not None]:
            await asyncio.wait(busy)

    def stop(self) -> None:
        """End every child (and theirs) now: kill their processes and cancel their turns.
        Safe from any thread (a stop button)."""
        for child in list(self.children):
            child.stop()

    async def aclose(self) -> None:
        for child in list(self.children):
            await child.close()


class Child:
    """A sub-agent: its session, the inputs it has still to run, and its status."""

    def __init__(self, parent: AgentNode, agent_id: str, nickname: str, prompt: str) -> None:
        self.parent = parent
        self.agent_id = agent_id
        self.nickname = nickname
        self.prompt = prompt
        self.call_id = ""  # the spawn_agent call that started it
        self.saved: list[AnyItem] = []  # its history, for a child a resume gave back
        self.recorded = 0  # how many items of its history the session file has already
        self.decided: dict[str, ApprovalDecided] = {}  # its approval answers, by call id
        self.status = "pending_init"
        self.final_text: str | None = None  # the parent's model reads it (Codex's words)
        self.shown_text: str | None = None  # people read it (an error in our words)
        # A saved child resume_agent reopened: that call, and the status it had before.
        self.reopened: tuple[str, str, str | None] | None = None
        self.session: AgentSession | None = None
        self.node: AgentNode | None = None
        self._inbox: list[str] = []
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed = asyncio.Event()

    # -- life ---------------------------------------------------------------------------

    def open(
        self, history: Sequence[AnyItem], model: str | None = None, *, announce: bool = True
    ) -> None:
        """Start (or, after a close, start again) its session with ``history``; its
        ``pending_init`` status is told unless ``announce`` is false (a spawn tells it
        after :class:`AgentSpawned`)."""
        parent = self.parent.session
        new_session = type(parent)  # made as its parent's was
        config = parent.config
        if model is not None:
            config = config.model_copy(update={"model": model})
        session = new_session(
            config,
            approver=self._ask_parent,
            extra_tools=parent.extra_tools,
            offers=parent.offers,
            node=lambda s: AgentNode(s, self.parent.control, self.parent.depth + 1),
            kept=parent.kept,
            secrets=parent.secrets,
        )
        session.history.extend(history)
        session.subscribe(self._forward)
        self.session, self.node = session, session.agents
        self.parent.control.open[self.agent_id] = self
        self.parent.control.closed.pop(self.agent_id, None)
        if self not in self.parent.children:
            self.parent.children.append(self)
        if announce:
            self._set("pending_init")
        else:
            self.status, self.final_text = "pending_init", None

    def submit(self, text: str, *, interrupt: bool = False) -> None:
        """Queue ``text`` as its next user turn (``interrupt``: end the current one
        first, which reads as an interrupted turn, as in Codex)."""
        self._inbox.append(text)
        running = self._task is not None and not self._task.done()
        if interrupt and running and self.status == "running" and self._task is not None:
            self._task.cancel()  # (a task not yet started would be cancelled unrun)
            return
        if self._task is None or self._task.done():
            self._loop = asyncio.get_running_loop()
            self._task = self._loop.create_task(self._run())

    async def _run(self) -> None:
        session = self.session
        assert session is not None
        while self._inbox:
            text = self._inbox.pop(0)
            self._set("running")
            try:
                result = await session.run_turn(text)
            except asyncio.CancelledError:
                if self.status == "shutdown":
                    raise
                self._set("errored", "Interrupted")  # Codex: the Debug of the abort reason
                if not self._inbox:
                    return
                continue
            except Exception as exc:  # a child's failure is its status, not the parent's
                log.info("sub-agent %s failed", self.agent_id, exc_info=True)
                self._set("errored", _codex_text(exc), shown=str(exc) or type(exc).__name__)
                continue
            self._set("completed", result.final_text or None)

    def working(self) -> asyncio.Task[None] | None:
        """The task running its turns, while it runs."""
        task = self._task
        return task if task is not None and not task.done() else None

    def stop(self) -> None:
        """End it now from any thread: processes killed, the turn cancelled."""
        if self.session is None:
            return
        if self.node is not None:
            self.node.stop()
        self.session.kill_processes()
        task, loop = self._task, self._loop
        if task is not None and loop is not None and not task.done():
            self._inbox.clear()
            if self.status != "shutdown":
                self.status = "shutdown"
                loop.call_soon_threadsafe(self._stopped)
            loop.call_soon_threadsafe(task.cancel)

    def _stopped(self) -> None:
        self._set("shutdown")

    async def close(self) -> object:
        """Shut it and its descendants down; the status it had before."""
        before = status_json(self.status, self.final_text)
        session = self.session
        if self.node is not None:
            await self.node.aclose()
        task = self._task
        self._inbox.clear()
        self._set("shutdown")
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if session is not None:
            await session.aclose()
        self.parent.control.open.pop(self.agent_id, None)
        self.parent.control.closed[self.agent_id] = self
        return before

    # -- status -------------------------------------------------------------------------

    @property
    def final(self) -> bool:
        return self.status in FINAL

    def status_value(self) -> object:
        return status_json(self.status, self.final_text)

    @property
    def changed(self) -> asyncio.Event:
        """Set at its next status change. Bind it before yielding to the loop: a status
        change sets this event and puts a new one in its place, so a waiter that looked
        it up only once running could wait on the new one, after the change it awaited."""
        return self._changed

    def _set(self, status: str, text: str | None = None, *, shown: str | None = None) -> None:
        """``text`` is what the parent's model reads; ``shown``, if given, what people
        read instead (an error in our words where the model gets Codex's)."""
        self.status, self.final_text = status, text
        told = self.shown_text = text if shown is None else shown
        self.parent.session.services.emit(AgentStatusChanged(self.agent_id, status, told))
        self._changed.set()
        self._changed = asyncio.Event()
        if status in ("completed", "errored"):  # Codex tells the parent in its next request
            note = dumps({"agent_path": self.agent_id, "status": status_json(status, text)})
            pending = self.parent.session.services.pending_user_messages
            pending.append(f"<subagent_notification>\n{note}\n</subagent_notification>")

    # -- the parent's side --------------------------------------------------------------

    def _forward(self, event: Event) -> None:
        if isinstance(event, ApprovalDecided):  # (``%agent history`` reads them)
            self.decided[event.call_id] = event
        self.parent.session.services.emit(AgentEvent(self.agent_id, event))

    async def _ask_parent(self, request: ApprovalRequest) -> ReviewDecision:
        asked = dataclasses.replace(request, agents=(self.agent_id, *request.agents))
        return await self.parent.session.services.approver(asked)


def _codex_text(exc: Exception) -> str:
    """A failed turn's error as Codex words it for a model (the request's failure as
    :mod:`agent_magics.models.codex_text` writes it), else its own message."""
    codex = exc.codex_text if isinstance(exc, UserError) else None
    return codex or str(exc) or type(exc).__name__
