"""The model client a session's settings ask for, built from plain values.

:mod:`agent_magics.models` sits below :mod:`agent_magics.config`: its clients take a
URL, a key and numbers, never a :class:`SessionConfig`. This is where one becomes the
other.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from agent_magics.config import DEFAULT_BASE_URL, SessionConfig
from agent_magics.errors import ConfigError

if TYPE_CHECKING:
    from agent_magics.models import ChatClient, ModelClient, ResponsesClient
    from agent_magics.models.http import RetryHook

LIVE = {"responses": "ResponsesClient", "chat": "ChatClient"}
"""Each live protocol's client class, in :mod:`agent_magics.models` (imported when used)."""
NO_MODEL = (
    "No model is configured: set OPENAI_API_KEY, point --base-url at a local "
    "OpenAI-compatible server, or use --provider replay for the offline demo."
)

OFFLINE_HINT = (
    "set OPENAI_API_KEY or OPENAI_BASE_URL and restart the kernel to use a live model."
)


def resolve_provider(config: SessionConfig) -> str:
    """The protocol to speak: ``auto`` is the Responses API. A live protocol needs a key
    or a server of one's own; without either there is no model, and the one sentence
    says the three ways to get one. The offline recording plays only when asked for."""
    if config.provider == "replay":
        return "replay"
    if not config.key() and config.base_url.rstrip("/") == DEFAULT_BASE_URL:
        if config.offline_recording is not None and config.provider == "auto":
            return "replay"
        raise ConfigError(NO_MODEL)
    return "responses" if config.provider == "auto" else config.provider


def create_client(config: SessionConfig, on_retry: RetryHook | None = None) -> ModelClient:
    """The client for the configured provider; says in one sentence what is missing."""
    provider = resolve_provider(config)
    if provider == "replay":
        from agent_magics.models.replay import ReplayClient

        if config.provider == "auto":  # no model configured: the notebook's recording
            return ReplayClient(config.offline_recording, OFFLINE_HINT)
        return ReplayClient(config.replay_path)
    class_name = LIVE.get(provider)
    if class_name is None:
        raise ConfigError(f"The provider {provider!r} is not available in this version.")
    client_class: type[ResponsesClient | ChatClient]
    client_class = getattr(import_module("agent_magics.models"), class_name)
    key = config.key()
    recorder = None
    if config.record_path:
        from agent_magics.models.replay import Recorder

        recorder = Recorder(config.record_path, provider, key)
    return client_class(
        config.base_url,
        key,
        request_max_retries=config.request_max_retries,
        stream_idle_timeout_s=config.stream_idle_timeout_s,
        on_retry=on_retry,
        recorder=recorder,
    )


__all__ = ["NO_MODEL", "OFFLINE_HINT", "create_client", "resolve_provider"]
