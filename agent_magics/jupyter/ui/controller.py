"""The agent behind the magics: one session, its turns, and stopping them.

A turn is one coroutine (:meth:`Controller.run_turn`) run as a task on the kernel's
loop; a cell that comes while a turn is busy queues behind it. The session is kept
across cells and adapted to each cell's settings (:meth:`Session.reconfigure`): new
per-turn settings (model, policy, folder) apply in place; a new model server or tool
set moves the conversation to a new session.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from IPython.display import display

from agent_magics.agent.session import Session
from agent_magics.config import SessionConfig
from agent_magics.errors import UserError, for_person
from agent_magics.jupyter.kernel.busy_status import busy_while_running
from agent_magics.jupyter.kernel.cell_numbers import numbered_after_its_cells
from agent_magics.jupyter.kernel.interrupt import IN_TURN, stop_arrives
from agent_magics.jupyter.ui.agents import stop_call as stop_agent_call
from agent_magics.jupyter.ui.approver import (
    HEADLESS_NOTES,
    HeadlessMode,
    WidgetApprover,
    headless_approver,
)
from agent_magics.jupyter.ui.headless import StaticTranscript
from agent_magics.jupyter.ui.runner import (
    AgentTurnFailed,
    SigintGuard,
    SignalWakeup,
    TurnView,
    turn_outcome,
)
from agent_magics.jupyter.ui.sessions import SessionFiles
from agent_magics.jupyter.ui.throttle import loop_scheduler
from agent_magics.jupyter.ui.turn_record import TurnRecord, TurnRecorder, usage_since
from agent_magics.jupyter.ui.widgets import TranscriptView
from agent_magics.protocol.approval import Approver
from agent_magics.tools.context import KeptFiles
from agent_magics.tools.handlers.toolset import ExtraTools, ToolFilter
from agent_magics.tools.sandbox.jupyter import runtime_secrets
from agent_magics.transcript.calls import one_line


class TextDisplay:
    """Plain text for ``display`` (a display id lets it be replaced later)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {"text/plain": self.text}


NEW_ENGINE = "The model server or the tools changed; the conversation goes on with them."
TurnContextSource = Callable[[Path, bool], str | None]
"""What a turn is told first, given its folder and whether the conversation is new
(the notebook and the cells that ran: :class:`agent_magics.jupyter.kernel.notebook_context`)."""
ConfigSource = SessionConfig | Callable[[], Awaitable[SessionConfig]]
"""A turn's settings, or how to get them when it starts (after a question is answered)."""


class Controller:
    """Sessions and turns of one ``AgentMagics`` instance."""

    def __init__(
        self,
        kernel: Any = None,
        tools: ExtraTools | None = None,
        context: TurnContextSource | None = None,
    ) -> None:
        self.kernel = kernel
        self.tools = tools  # the kernel's tools, added to every session
        self.context = context
        self.offers: ToolFilter | None = None  # which tools a teacher's policy lets through
        self.kept: KeptFiles | None = None  # the kernel's notebook: no command writes it
        self.session: Session | None = None
        self.files = SessionFiles()  # the session's file, %agent sessions and resume
        self.tasks: list[asyncio.Task[str | None]] = []
        self._guard: SigintGuard | None = None
        self._wakeup: SignalWakeup | None = None  # a stop reaches awaited cells at once
        self._own_loop: asyncio.AbstractEventLoop | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._mcp_tasks: set[asyncio.Task[str]] = set()
        shell = getattr(kernel, "shell", None) or getattr(tools, "shell", None)
        self.namespace: dict[str, Any] | None = getattr(shell, "user_ns", None)

    # -- sessions --------------------------------------------------------------------------

    def session_for(self, config: SessionConfig, view: TurnView) -> Session:
        old = self.session
        if old is not None and old.reconfigure(config):
            return old
        session = Session(
            config,
            extra_tools=self.tools,
            offers=self.offers,
            kept=self.kept,
            secrets=runtime_secrets,  # Jupyter's runtime folder: tokens, kernels' keys
        )
        self.files.attach(session, old, view)
        if old is not None:
            session.history, session.usage = old.history, old.usage
            session.context, session.turns = old.context, old.turns
            session.changes = old.changes  # the last turn stays undoable
            view.note(NEW_ENGINE)
            self._close(old)
        self.session = session
        return session

    def _close(self, session: Session) -> None:
        session.kill_processes()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            if self._own_loop is not None and not self._own_loop.is_closed():
                self._own_loop.run_until_complete(session.aclose())
            return
        task = loop.create_task(session.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def end_session(self) -> None:
        """Stop the turns, kill the tools' processes, forget the conversation."""
        self.cancel()
        if self.session is not None:
            self._close(self.session)
        self.session = None
        self.files.close()

    def new_conversation(self) -> None:
        """``%%agent --new`` and ``%agent reset``: end the session as :meth:`end_session`
        does and drop a resume that waits for the next cell, so that the next turn starts
        an empty conversation in a new session (a new thread and file, no "approve for
        session" answers: those were given to the session that ends). The settings are
        not the controller's: they stay as they are."""
        self.end_session()
        self.files.pending = None

    def kill_processes(self) -> None:
        """Kill every process the session's tools started (SIGKILL, at once)."""
        if self.session is not None:
            self.session.kill_processes()

    def stop_call(self, agents: tuple[str, ...], call_id: str) -> bool:
        """A card's Stop: end that one call of the agent at path ``agents`` (``()``: the
        main agent); its command's process group is killed."""
        return self.session is not None and stop_agent_call(self.session, agents, call_id)

    def cancel(self) -> bool:
        """Stop the running and queued turns and kill their tool processes."""
        busy = [t for t in self.tasks if not t.done()]
        for task in busy:
            task.cancel()
        self.kill_processes()
        return bool(busy)

    def interrupt(self) -> None:
        """The kernel's stop button reached the idle kernel."""
        self.cancel()

    @property
    def busy(self) -> int:
        return sum(not t.done() for t in self.tasks)

    # -- turns -----------------------------------------------------------------------------

    def make_view(
        self, loop: asyncio.AbstractEventLoop, headless: HeadlessMode | None, awaited: bool
    ) -> tuple[TurnView, Approver]:
        """Widgets and click approvals, or (headless) a static transcript and a policy.
        A cell that waits for its turn gets the turn's figures as outputs of their own
        (see :mod:`agent_magics.transcript.figures`); a turn in the background keeps them
        in its transcript."""
        show_after = display if awaited else None
        if headless is not None:
            view = StaticTranscript(
                lambda md: display(md, display_id=True),
                loop_scheduler(loop),
                policy_note=HEADLESS_NOTES[headless],
                show_after=show_after,
            )
            return view, headless_approver(headless)
        approver = WidgetApprover(loop)
        widgets = TranscriptView(loop_scheduler(loop), approver.decide, on_stop=self.stop_call)
        widgets.handle = display(widgets.root, display_id=True)
        widgets.show_after = show_after
        return widgets, approver

    async def run_turn(
        self,
        config: ConfigSource,
        prompt: str,
        view: TurnView,
        approver: Approver,
        after: asyncio.Future[Any] | None = None,
    ) -> str | None:
        """One turn, ended cleanly whatever happens (see :func:`.runner.turn_outcome`):
        wait for ``after`` (the turn before), take the settings, pick the session, listen
        to it and run. Only a cancellation is re-raised; a failure is returned, as the
        sentence the view shows, for the cell that waits (:meth:`wait`)."""
        IN_TURN.set(True)  # in this task's context: a stop may be raised in its code
        if after is not None and not after.done():
            try:
                await asyncio.wait([after])
            except asyncio.CancelledError:
                view.fail("Cancelled before it started.")
                raise
        with turn_outcome(view, self.kill_processes) as outcome:
            settings = config if isinstance(config, SessionConfig) else await config()
            session = self.session_for(settings, view)
            unsubscribe = session.subscribe(view)
            session.approver = approver
            record, before = TurnRecorder(prompt, view.state), session.usage
            try:
                told = self.context(settings.cwd, not session.history) if self.context else None
                await session.run_turn(prompt, context=[told] if told else ())
            except Exception as exc:
                record.fail(str(exc))
                self.files.failed(str(exc))
                raise
            finally:
                self.leave_record(record.result(usage_since(before, session.usage)))
                unsubscribe()
                if isinstance(approver, WidgetApprover):
                    approver.cancel_all()
        return outcome.failed

    def leave_record(self, record: TurnRecord) -> None:
        """The turn as data for the next cells: ``_agent`` in the namespace."""
        if self.namespace is not None:
            self.namespace["_agent"] = record

    def schedule(
        self,
        loop: asyncio.AbstractEventLoop,
        config: ConfigSource,
        prompt: str,
        view: TurnView,
        approver: Approver,
        background: bool,
    ) -> asyncio.Task[str | None]:
        """Start the turn as a task (after the busy ones); a background turn also takes
        the kernel's idle interrupts."""
        previous = next((t for t in reversed(self.tasks) if not t.done()), None)
        if previous is not None:
            view.mark_queued()
        task = loop.create_task(self.run_turn(config, prompt, view, approver, after=previous))
        if isinstance(view, TranscriptView):  # Abort on a sub-agent's card ends this turn
            view.on_abort = lambda: loop.call_soon_threadsafe(task.cancel)
        task.add_done_callback(lambda _task: view.finish())  # the static transcript stays
        self.tasks.append(task)
        task.add_done_callback(self._turn_done)
        if self._wakeup is None:
            self._wakeup = SignalWakeup(loop)
        self._wakeup.activate()
        if background:
            if self._guard is None:
                self._guard = SigintGuard(self.kernel, loop, self.interrupt)
            self._guard.activate()
        return task

    def _turn_done(self, task: asyncio.Task[str | None]) -> None:
        if task in self.tasks:
            self.tasks.remove(task)
        if not task.cancelled():
            task.exception()  # retrieved: run_turn already showed it
        if not self.tasks and self._guard is not None:
            self._guard.deactivate()
        if not self.tasks and self._wakeup is not None:
            self._wakeup.deactivate()

    async def wait(self, task: asyncio.Task[str | None] | None, shown: bool = False) -> None:
        """The awaited form: the cell stays busy until the turn ends (and the kernel says
        so: :mod:`..kernel.busy_status`); an interrupt of the cell stops the turn and
        ends the cell quietly (the transcript says so). A turn that failed fails its cell
        (:class:`.runner.AgentTurnFailed`), so papermill, nbconvert --execute and Run All
        stop there, as ``agent-magics exec`` exits 1 (``shown``: the card already says why
        to a person, so the error box does not repeat it)."""
        if task is None:
            return
        keeper = busy_while_running(self.kernel)
        shell = getattr(self.kernel, "shell", None)
        held = keeper.running() if keeper else nullcontext()
        try:
            with stop_arrives(task.get_loop()), held, numbered_after_its_cells(shell):
                failed = await task
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.wait([task])
            return
        if failed is not None:
            raise AgentTurnFailed(failed, shown)

    # -- work shown in a cell -------------------------------------------------------------

    def compact(self, session: Session, words: str) -> None:
        """``%agent compact [WORDS]``: the conversation compacted now, what was kept and
        the summary shown in the cell when it is done."""
        from agent_magics.transcript.model import compacted_line

        async def compact() -> str:
            event = await session.compact(words)
            kept = "\n".join(f"  - {one_line(text, 100)}" for text in event.kept)
            summary = event.summary or "(the model server keeps its own summary)"
            return f"{for_person(compacted_line(event))}\nKept:\n{kept}\nSummary:\n{summary}"

        self.in_cell(
            compact,
            for_person("compacting the conversation…"),
            for_person("stopped before the conversation was compacted."),
            for_person("the conversation could not be compacted: {}"),
        )

    def in_cell(
        self, work: Callable[[], Coroutine[Any, Any, Any]], waiting: str, stopped: str, failed: str
    ) -> None:
        """Run ``work`` on the kernel's loop, what it returns (text, or an object to
        display) replacing ``waiting`` in the cell when it is done (the cell returns at
        once, also headless); without a running loop (terminal IPython), run it to its
        end and show it."""

        def shown(result: Any) -> Any:
            return TextDisplay(result) if isinstance(result, str) else result

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            try:
                result = self.own_loop().run_until_complete(work())
                if isinstance(result, str):
                    print(result)
                else:
                    display(result)
            except UserError as exc:
                print(failed.format(exc), file=sys.stderr)
            return
        handle = display(TextDisplay(waiting), display_id=True)

        def finished(task: asyncio.Task[Any]) -> None:
            if task.cancelled():
                result: Any = stopped
            elif task.exception() is not None:
                result = failed.format(task.exception())
            else:
                result = task.result()
            if handle is not None:
                handle.update(shown(result))

        task = loop.create_task(work())
        self._mcp_tasks.add(task)
        task.add_done_callback(self._mcp_tasks.discard)
        task.add_done_callback(finished)

    # -- lifecycle -------------------------------------------------------------------------

    def own_loop(self) -> asyncio.AbstractEventLoop:
        """The loop of terminal IPython (no kernel loop): one for the whole session."""
        if self._own_loop is None or self._own_loop.is_closed():
            self._own_loop = asyncio.new_event_loop()
        return self._own_loop

    def shutdown(self) -> None:
        self.end_session()
        if self._guard is not None:
            self._guard.deactivate()
        if self._wakeup is not None:
            self._wakeup.deactivate()
        loop = self._own_loop
        if loop is not None and not loop.is_running() and not loop.is_closed():
            # finalizes the loop's async generators, which closes its shared HTTP clients
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
