"""How a model server says a request is longer than the model's context window.

OpenAI's APIs give the code ``context_length_exceeded`` (an HTTP 400 body or a
``response.failed`` event); the local servers answer HTTP 400 in their own words:
llama.cpp's server the error type ``exceed_context_size_error`` ("the request exceeds
the available context size"), vLLM "This model's maximum context length is N tokens",
LM Studio and others a sentence naming the context length. A request that overflows
is compacted and sent again (:mod:`agent_magics.agent.compaction`), not retried as is.
"""

from __future__ import annotations

import json
import re

from agent_magics.errors import ContextWindowFull

OVERFLOW_CODE = "context_length_exceeded"
_CODES = {OVERFLOW_CODE, "exceed_context_size_error", "context_window_exceeded"}
_WORDS = re.compile(
    r"context (length|window|size)|maximum context|context_length_exceeded|"
    r"prompt is too long|too many tokens|exceeds? the (available )?context",
    re.IGNORECASE,
)
_STATUSES = {400, 413, 422}

FULL_TEXT = (
    "The conversation no longer fits the model's context window, even compacted: "
    "start a new one (`%agent reset` in a notebook, `agent-magics exec` without "
    "--resume), or choose a model with a larger window."
)
CODEX_FULL_TEXT = (
    "Codex ran out of room in the model's context window. Start a new thread or clear "
    "earlier history before retrying."
)
"""Codex's words for it, where a model reads them (a helper's ``errored`` status)."""


def window_full(detail: str = "") -> ContextWindowFull:
    text = FULL_TEXT if not detail else f"{FULL_TEXT} (The server said: {detail})"
    return ContextWindowFull(text, codex_text=CODEX_FULL_TEXT)


def says_too_long(status: int, body: bytes) -> bool:
    """Whether an HTTP error answer says the request overflowed the window."""
    if status not in _STATUSES:
        return False
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return bool(_WORDS.search(text[:2000]))
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        if err.get("code") in _CODES or err.get("type") in _CODES:
            return True
        return bool(_WORDS.search(str(err.get("message", ""))[:2000]))
    return bool(_WORDS.search(text[:2000]))
