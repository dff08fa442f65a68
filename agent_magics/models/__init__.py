"""Model clients: the Responses API, Chat Completions, and offline recordings.

They take plain values (a URL, a key, numbers); :mod:`agent_magics.providers` builds
the one a session's settings ask for. Each client's module is imported when its name
is first asked for, so a Responses session never loads the Chat Completions or replay
code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_magics.lazy_names import lazy_names
from agent_magics.models.base import ModelClient, ModelRequest, StreamFailed

if TYPE_CHECKING:
    from agent_magics.models.chat import ChatClient
    from agent_magics.models.replay import ReplayClient
    from agent_magics.models.responses import ResponsesClient

__getattr__ = lazy_names(
    __name__,
    globals(),
    {"chat": ["ChatClient"], "replay": ["ReplayClient"], "responses": ["ResponsesClient"]},
)

__all__ = [
    "ChatClient",
    "ModelClient",
    "ModelRequest",
    "ReplayClient",
    "ResponsesClient",
    "StreamFailed",
]
