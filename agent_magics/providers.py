"""The model client a session's settings ask for, built from plain values.

:mod:`agent_magics.models` sits below :mod:`agent_magics.config`: its clients take a
URL, a key and numbers, never a :class:`SessionConfig`. This is where one becomes the
other.
"""

from __future__ import annotations

from agent_magics.config import DEFAULT_BASE_URL, SessionConfig
from agent_magics.errors import ConfigError, ModelError
from agent_magics.models import ChatClient, ModelClient, ReplayClient, ResponsesClient
from agent_magics.models.http import RetryHook
from agent_magics.models.replay import Recorder

LIVE = {"responses": ResponsesClient, "chat": ChatClient}


def resolve_provider(config: SessionConfig) -> str:
    """``auto`` means a live model when a key or a server is set, else the recording."""
    if config.provider != "auto":
        return config.provider
    live = config.key() or config.base_url.rstrip("/") != DEFAULT_BASE_URL
    return "responses" if live else "replay"


def create_client(config: SessionConfig, on_retry: RetryHook | None = None) -> ModelClient:
    """The client for the configured provider; says in one sentence what is missing."""
    provider = resolve_provider(config)
    if provider == "replay":
        return ReplayClient(config.replay_path)
    client_class = LIVE.get(provider)
    if client_class is None:
        raise ConfigError(f"The provider {provider!r} is not available in this version.")
    key = config.key()
    if not key and config.base_url.rstrip("/") == DEFAULT_BASE_URL:
        raise ModelError(
            "No API key: set OPENAI_API_KEY, or point --base-url at a local model server."
        )
    recorder = Recorder(config.record_path, provider, key) if config.record_path else None
    return client_class(
        config.base_url,
        key,
        request_max_retries=config.request_max_retries,
        stream_idle_timeout_s=config.stream_idle_timeout_s,
        on_retry=on_retry,
        recorder=recorder,
    )


__all__ = ["create_client", "resolve_provider"]
