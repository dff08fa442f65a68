"""A session's eye on its model's window: found once per model and server (with the
notices :mod:`.context_window` writes), and a line when the context passes 80% of it
(it is compacted at 90%, or at ``model_auto_compact_token_limit``). That the window is
unknown is said once the conversation has grown past :data:`UNKNOWN_SAID_AT` tokens:
before that it changes nothing, and a one-off ``exec`` run stays quiet."""

from __future__ import annotations

import logging
from collections.abc import Callable

from agent_magics.agent.compact_trigger import ContextState
from agent_magics.agent.context_window import (
    fixed_part_text,
    session_window,
    unknown_window_text,
)
from agent_magics.config import SessionConfig
from agent_magics.events import ContextWindowNoted, EventSink
from agent_magics.models.base import ModelRequest
from agent_magics.models.context_window import WindowCache

NEARLY_FULL = 0.8
UNKNOWN_SAID_AT = 8192


def nearly_full_text(tokens: int, window: int) -> str:
    return (
        f"The conversation fills {round(100 * tokens / window)}% of the model's "
        f"{window:,}-token window; it is compacted before it overflows (`%agent compact` "
        "does it now)."
    )


class WindowWatch:
    """The window of the model a session talks to, and the 80% line."""

    def __init__(self) -> None:
        self.cache = WindowCache()
        self._for: tuple[str, str, int | None] | None = None
        self._warned = False
        self._tokens: int | None = None
        self._unknown: str | None = None  # said when the conversation grows

    async def window(
        self, config: SessionConfig, request: Callable[[], ModelRequest], emit: EventSink
    ) -> int | None:
        """The window for ``config``'s model and server, its notices said the first time."""
        key = (config.model, config.base_url, config.model_context_window)
        if key != self._for:
            info = await session_window(config, self.cache)
            self._for, self._tokens = key, info.tokens
            self._unknown = unknown_window_text(config, info)
            if (fixed := fixed_part_text(config, info, request())) is not None:
                _say(fixed, emit)
        return self._tokens

    def check(self, state: ContextState, emit: EventSink) -> None:
        """Say once when the context passes 80% of the window (again after it shrank)."""
        share = state.share()
        if share is None:
            if self._unknown is not None and state.tokens >= UNKNOWN_SAID_AT:
                _say(self._unknown, emit)
                self._unknown = None
            return
        if share >= NEARLY_FULL and not self._warned and state.window:
            emit(ContextWindowNoted(nearly_full_text(state.tokens, state.window)))
        self._warned = share >= NEARLY_FULL


def _say(text: str, emit: EventSink) -> None:
    """A notice about the window, also logged (as the sandbox's are)."""
    logging.getLogger("agent_magics").warning(text)
    emit(ContextWindowNoted(text))
