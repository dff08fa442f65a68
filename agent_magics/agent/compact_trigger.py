"""When a conversation is compacted, by Codex 0.171's rules.

The count is the ``total_tokens`` of the last response (not a sum over the turn). The
limit is the smaller of ``model_auto_compact_token_limit`` and 90% of the window; at
or over it the conversation is compacted before the next request: mid-turn when the
response asked for tools, before the next turn's first request when it answered. A
server that said a request did not fit marks the window full, which compacts the next
turn first even with no limit known. ``model_post_turn_compact_threshold_percent``
also compacts right after a turn that used that share of the window.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_magics.config import SessionConfig
from agent_magics.tools.truncate import tokens_for_bytes


@dataclass
class ContextState:
    """How full the model's window is, as the last response said."""

    tokens: int = 0
    """The last response's ``total_tokens``, or an estimate of what a compaction kept."""
    full: bool = False
    """The model server said the last request was longer than the window."""
    window: int | None = None
    """The window in tokens, when known."""
    bytes_per_token: int = 4
    """How the session guesses tokens from bytes: Codex's four, three when the server
    counts none (a small model's tokenizer packs less into a token)."""

    def record(self, total_tokens: int) -> None:
        self.tokens, self.full = total_tokens, False

    def share(self) -> float | None:
        """How much of the window the context takes (0..1), when the window is known."""
        return self.tokens / self.window if self.window else None

    def near(self, instructions: str, items: Sequence[dict[str, Any]]) -> bool:
        """Whether a request of these instructions and input items may not fit the known
        window: it takes half of it or more at three bytes a token (a tokenizer may pack
        fewer bytes into a token than that)."""
        if not self.window:
            return False
        return estimate_tokens(instructions, items, bytes_per_token=3) * 2 >= self.window


def token_limit(config: SessionConfig, window: int | None) -> int | None:
    limits = [config.model_auto_compact_token_limit]
    if window:
        limits.append(window * 9 // 10)
    known = [n for n in limits if n is not None]
    return min(known) if known else None


def over_limit(state: ContextState, config: SessionConfig, coming: int = 0) -> bool:
    """Whether the conversation must be compacted before its next request: Codex's rule,
    or (ours) when the ``coming`` tokens of a new turn's prompt would take it past 90% of
    a known window (in a small one the prompt may not fit in the 10% left)."""
    limit = token_limit(config, state.window)
    if state.full or (limit is not None and state.tokens >= limit):
        return True
    return bool(state.window) and state.tokens + coming >= (state.window or 0) * 9 // 10


def post_turn_due(state: ContextState, config: SessionConfig) -> bool:
    percent = config.model_post_turn_compact_threshold_percent
    if percent is None or not state.window:
        return False
    return state.tokens * 100 >= state.window * percent


def estimate_tokens(
    instructions: str, items: Sequence[dict[str, Any]], bytes_per_token: int = 4
) -> int:
    """Tokens of a request's instructions and input, at four bytes each (Codex's guess
    of the size of a history it has not sent yet) unless told otherwise."""
    size = len(instructions.encode()) + len(json.dumps(list(items)).encode())
    return tokens_for_bytes(size) if bytes_per_token == 4 else -(-size // bytes_per_token)
