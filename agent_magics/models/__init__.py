"""Model clients: the Responses API, Chat Completions, and offline recordings.

They take plain values (a URL, a key, numbers); :mod:`agent_magics.providers` builds
the one a session's settings ask for.
"""

from __future__ import annotations

from agent_magics.models.base import ModelClient, ModelRequest, StreamFailed
from agent_magics.models.chat import ChatClient
from agent_magics.models.replay import ReplayClient
from agent_magics.models.responses import ResponsesClient

__all__ = [
    "ChatClient",
    "ModelClient",
    "ModelRequest",
    "ReplayClient",
    "ResponsesClient",
    "StreamFailed",
]
