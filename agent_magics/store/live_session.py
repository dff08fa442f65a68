"""A running session as its file sees it: what the recorder writes down and what a resume
puts back. :class:`~agent_magics.agent.session.Session` is the one implementation; the
store sits below it and names only this.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from agent_magics.store.agent_records import AgentTree

if TYPE_CHECKING:
    from agent_magics.config import SessionConfig
    from agent_magics.events import EventSink, Usage
    from agent_magics.protocol.items import AnyItem
    from agent_magics.store.saved_children import SavedChild
    from agent_magics.tools.context import SessionServices


class Redacts(Protocol):
    def text(self, text: str) -> str: ...


class WindowFill(Protocol):
    """How full the model's window is: the last count of tokens, and whether the server
    found the last request too long."""

    tokens: int
    full: bool


class ResumableTree(AgentTree, Protocol):
    def restore(self, saved: Iterable[SavedChild]) -> None:
        """Take back the sub-agents a saved session left, as closed agents."""


class RecordedSession(Protocol):
    """Its settings, id, history (and who is told when items join it), its counts of
    tokens and turns, the tools' shared state, its scrubber of secrets, its window's fill,
    its sub-agents and its events."""

    config: SessionConfig
    thread_id: str
    history: list[AnyItem]
    on_history: Callable[[], None] | None
    usage: Usage
    turns: int
    services: SessionServices

    @property
    def redact(self) -> Redacts: ...
    @property
    def context(self) -> WindowFill: ...
    @property
    def agents(self) -> ResumableTree: ...
    def subscribe(self, sink: EventSink) -> Callable[[], None]: ...
