"""One ACP session: our session, its recorder, its updates, and the turn that runs.

Updates leave in the order events came: the session's events are folded at once
(:mod:`.updates`) and queued, and one task sends them. A permission question waits
until what was queued before it has left, so the client knows the call it asks about.

A cancel (``session/cancel``) stops the turn as Stop does in a cell: the turn's task is
cancelled, which kills its commands and records it as aborted, and a question still open
is answered ``cancelled`` by the client (the call is aborted). The prompt then answers
``cancelled``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import (
    DeniedOutcome,
    PermissionOption,
    PromptResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
)
from acp.schema import Usage as AcpUsage

from agent_magics.acp import permissions
from agent_magics.acp.updates import AcpUpdates, Update
from agent_magics.errors import TurnAborted, UserError
from agent_magics.events import Event, Usage
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision

if TYPE_CHECKING:
    from acp.interfaces import Client

    from agent_magics.acp.chat_notebook import ChatNotebook
    from agent_magics.agent.session import Session
    from agent_magics.store.recorder import SessionRecorder
    from agent_magics.teaching.policy import CoursePolicy

_log = logging.getLogger(__name__)
INVALID_REQUEST = -32600


class ChatSession:
    """What one ``session/new`` (or ``session/load``) made, until ``session/close``."""

    def __init__(
        self,
        client: Client,
        session_id: str,
        session: Session,
        recorder: SessionRecorder | None,
        policy: CoursePolicy,
        notebook: ChatNotebook | None = None,
    ) -> None:
        self.client, self.id, self.session = client, session_id, session
        self.recorder, self.policy, self.notebook = recorder, policy, notebook
        self.fold = AcpUpdates(session.config.cwd, session.redact.text)
        self.attached: str | None = None  # the notebook the kernel tools act on
        self.notes: list[str] = []  # said at the first prompt (an ignored project config)
        self.pending_mcp: list[Any] = []  # the client's MCP servers, asked at the first prompt
        self._queue: asyncio.Queue[Update | None] = asyncio.Queue()
        self._sender = asyncio.ensure_future(self._send())
        self._turn: asyncio.Task[Any] | None = None
        session.subscribe(self.on_event)
        session.approver = self.approve

    # -- updates ------------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        self.say_updates(self.fold.fold(event))

    def say_updates(self, updates: list[Update]) -> None:
        for update in updates:
            self._queue.put_nowait(update)

    def say(self, text: str) -> None:
        """A message of ours in the chat (a command's answer, a note)."""
        from acp.helpers import update_agent_message_text

        self.say_updates([update_agent_message_text(text)])

    async def flushed(self) -> None:
        """Once every update queued so far has left."""
        await self._queue.join()

    async def _send(self) -> None:
        while (update := await self._queue.get()) is not None:
            try:
                await self.client.session_update(session_id=self.id, update=update)
            except Exception:  # a client that went away: the turn goes on, unseen
                _log.debug("an update could not be sent", exc_info=True)
            finally:
                self._queue.task_done()
        self._queue.task_done()

    # -- approvals ----------------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ReviewDecision:
        """Ask the client's person (:mod:`.permissions`); what was queued goes first."""
        call_id = "/".join([*request.agents, request.call_id])
        diffs = self.fold.diffs_of(call_id) if request.kind == "patch" else []
        question = permissions.question(request, call_id, diffs)
        options = permissions.options(request)
        return permissions.decision(await self.ask(question, options), options)

    async def ask(
        self, call: ToolCallUpdate, options: list[PermissionOption], new: bool = False
    ) -> Any:
        """The client's answer to a question about ``call``, once ``call`` as the
        question shows it (its whole text, its diffs) has been sent as an update (``new``:
        as a call of its own, one no tool made): some clients show a pending call as its
        updates left it, not the question's own fields. A client that cannot answer
        cancels."""
        from acp.helpers import start_tool_call, update_tool_call

        shown: Update
        if new:
            shown = start_tool_call(
                call.tool_call_id, call.title or "", kind=call.kind, status="pending",
                content=call.content, raw_input=call.raw_input,
            )  # fmt: skip
        else:
            shown = update_tool_call(  # its title stays the one the call started with
                call.tool_call_id, content=call.content, raw_input=call.raw_input
            )
        self.say_updates([shown])
        await self.flushed()
        try:
            return await self.client.request_permission(
                session_id=self.id, tool_call=call, options=options
            )
        except RequestError as exc:
            _log.info("the client did not answer a permission request: %s", exc)
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    # -- turns --------------------------------------------------------------------------

    async def run(self, work: Callable[[], Any]) -> PromptResponse:
        """Run ``work`` (a turn, or a command) as this session's one running task: a
        cancel stops it. Errors a person must fix become the chat's message."""
        if self._turn is not None and not self._turn.done():
            raise RequestError(INVALID_REQUEST, "A prompt is already running in this session.")
        before = self.session.usage
        self._turn = asyncio.ensure_future(work())
        try:
            await self._turn
        except (asyncio.CancelledError, TurnAborted):
            self.session.kill_processes()
            await self.flushed()
            return PromptResponse(stop_reason="cancelled", usage=_usage(self.session.usage, before))
        except UserError as exc:
            if self.recorder is not None:
                self.recorder.fail(str(exc))
            self.say(f"\n\n**agent-magics:** {self.session.redact.text(str(exc))}\n")
        finally:
            self._turn = None
        await self.flushed()
        return PromptResponse(stop_reason="end_turn", usage=_usage(self.session.usage, before))

    async def cancel(self) -> None:
        turn = self._turn
        if turn is not None and not turn.done():
            turn.cancel()
            if self.notebook is not None:
                with contextlib.suppress(Exception):
                    await self.notebook.interrupt()

    async def aclose(self) -> None:
        await self.cancel()
        with contextlib.suppress(Exception):
            await self.session.aclose()
        if self.recorder is not None:
            self.recorder.close()
        if self.notebook is not None:
            with contextlib.suppress(Exception):
                await self.notebook.aclose()
        self._queue.put_nowait(None)
        with contextlib.suppress(Exception):
            await self._sender


def _usage(now: Usage, before: Usage) -> AcpUsage:
    """This prompt's tokens (the session's count now, less what it was before)."""

    def spent(field: str) -> int:
        return max(int(getattr(now, field)) - int(getattr(before, field)), 0)

    return AcpUsage(
        input_tokens=spent("input_tokens"),
        output_tokens=spent("output_tokens"),
        total_tokens=spent("total_tokens"),
        thought_tokens=spent("reasoning_output_tokens") or None,
        cached_read_tokens=spent("cached_input_tokens") or None,
    )
