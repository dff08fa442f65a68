"""The model's window over one turn: the decisions a turn takes about its context's size,
in the order it takes them (Codex's, and ours where a notebook needs more).

Before the turn, the window is found (once a session) and the conversation compacted
when the new prompt would pass the limit; each request is sent through :func:`sample`,
and one the server finds too long is compacted and sent again, once; each response is
counted (the server's count, else the session's own estimate) and the 80% line said;
between tool rounds and after the turn, the conversation is compacted when it is due.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent_magics.agent import compaction
from agent_magics.agent.compact_trigger import estimate_tokens, over_limit, post_turn_due
from agent_magics.agent.sampling import sample
from agent_magics.errors import ContextWindowFull, UserError
from agent_magics.events import Usage
from agent_magics.protocol.items import AnyItem

if TYPE_CHECKING:
    from agent_magics.agent.session_parts import TurnSession


class TurnWindow:
    """One turn's side of the window. ``compacted``: the conversation was compacted
    during the turn (its prompt is then kept even when the turn fails)."""

    def __init__(self, session: TurnSession) -> None:
        self.session = session
        self.compacted = False

    async def before(self, told: Sequence[str]) -> None:
        """Find the window and compact first if ``told`` (the prompt and the texts sent
        with it) would pass the limit: better than Codex, which counts only what was
        sent, since in a small window a prompt may not fit in the 10% left."""
        session = self.session
        context = session.context
        context.window = await session.windows.window(
            session.config, session.request, session.services.emit
        )
        coming = estimate_tokens("", [{"text": t} for t in told], context.bytes_per_token)
        if session.history and over_limit(context, session.config, coming):
            await compaction.compact(session, "auto", "pre_turn")

    async def respond(self) -> tuple[list[AnyItem], Usage]:
        """The model's response to the history as it is; a request the server finds too
        long is compacted and sent again once (Codex fails the turn)."""
        session = self.session
        while True:
            try:
                return await sample(
                    session.client,
                    session.request,
                    session.services.emit,
                    session.config.stream_max_retries,
                    fills_window=session.fills_window,
                )
            except ContextWindowFull:
                session.context.full = True  # the next turn compacts first if this fails
                if self.compacted:
                    raise
                self.compacted = True
                await compaction.compact(session, "auto", "overflow")

    def counted(self, usage: Usage) -> None:
        """After a response joined the history: how full the window is now."""
        context = self.session.context
        context.bytes_per_token = 4 if usage.total_tokens else 3
        context.record(usage.total_tokens or self._estimate())
        self.session.windows.check(context, self.session.services.emit)

    async def between_rounds(self) -> None:
        """After a round of tool calls, before the next request (Codex's mid-turn)."""
        if over_limit(self.session.context, self.session.config):
            self.compacted = True
            await compaction.compact(self.session, "auto", "mid_turn")

    async def after(self) -> tuple[int, int | None]:
        """At the turn's end: compact when the post-turn threshold says so (a failure is
        left to the next turn), and the window's fill for the turn's footer."""
        context = self.session.context
        if post_turn_due(context, self.session.config):
            with contextlib.suppress(UserError):
                await compaction.compact(self.session, "auto", "post_turn")
        return context.tokens, context.window

    def _estimate(self) -> int:
        """The context's size when the server counts no tokens (llama-cpp-python's
        server streams no usage): the history's and instructions' bytes / 3, more than
        Codex's four-byte guess, since a small model's tokenizer is not OpenAI's and a
        low guess compacts too late."""
        request = self.session.request_for(self.session.history, False, [])
        return estimate_tokens(request.instructions, request.input, bytes_per_token=3)
