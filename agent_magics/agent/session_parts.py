"""The parts of a session a turn's helpers work with (:mod:`.compaction`,
:mod:`.turn_window`, :mod:`.tool_round`): its settings, history, services and tools, its
window's fill and the requests it builds. :class:`~agent_magics.agent.session.Session` is
the one implementation; the helpers sit below it and name only this.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agent_magics.agent.compact_trigger import ContextState
    from agent_magics.agent.redaction import SessionRedactor
    from agent_magics.agent.window_watch import WindowWatch
    from agent_magics.config import SessionConfig
    from agent_magics.models.base import ModelClient, ModelRequest
    from agent_magics.protocol.items import AnyItem
    from agent_magics.store.changes import ChangeTracker
    from agent_magics.tools.context import SessionServices, TurnContext
    from agent_magics.tools.router import ToolRouter


class TurnSession(Protocol):
    """A session as one of its turns uses it."""

    config: SessionConfig
    history: list[AnyItem]
    on_history: Callable[[], None] | None
    """Called after items join the history (a session file writes them at once)."""
    services: SessionServices
    router: ToolRouter
    changes: ChangeTracker
    redact: SessionRedactor
    context: ContextState
    windows: WindowWatch

    @property
    def client(self) -> ModelClient: ...
    def turn_context(self) -> TurnContext: ...
    def request(self) -> ModelRequest: ...
    def request_for(
        self, history: Sequence[AnyItem], tools: bool, tail: list[dict[str, Any]]
    ) -> ModelRequest: ...
    def fills_window(self, request: ModelRequest) -> bool: ...
