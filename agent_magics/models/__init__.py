"""Model clients: the Responses API, Chat Completions, and offline recordings.

They take plain values (a URL, a key, numbers); :mod:`agent_magics.providers` builds
the one a session's settings ask for. Each client's module is imported when its name
is first asked for, so a Responses session never loads the Chat Completions or replay
code.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from agent_magics.models.base import ModelClient, ModelRequest, StreamFailed

if TYPE_CHECKING:
    from agent_magics.models.chat import ChatClient
    from agent_magics.models.replay import ReplayClient
    from agent_magics.models.responses import ResponsesClient

_CLIENTS = {
    "ChatClient": "agent_magics.models.chat",
    "ReplayClient": "agent_magics.models.replay",
    "ResponsesClient": "agent_magics.models.responses",
}


def __getattr__(name: str) -> object:
    """A client class, imported from its module the first time it is asked for."""
    module = _CLIENTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ChatClient",
    "ModelClient",
    "ModelRequest",
    "ReplayClient",
    "ResponsesClient",
    "StreamFailed",
]
