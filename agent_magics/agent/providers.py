"""The model client a session's settings ask for, built from plain values.

:mod:`agent_magics.models` sits below :mod:`agent_magics.config`: its clients take a
URL, a key and numbers, never a :class:`SessionConfig`. This is where one becomes the
other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_magics.config import DEFAULT_BASE_URL, SessionConfig
from agent_magics.errors import ConfigError
from agent_magics.models.base import ModelClient
from agent_magics.models.http import RetryHook
from agent_magics.models.responses import ResponsesClient

if TYPE_CHECKING:
    from agent_magics.models.chat import ChatClient
NO_MODEL = (
    "No model is configured: set OPENAI_API_KEY, point --base-url at a local "
    "OpenAI-compatible server, or use --provider replay for the offline demo."
)

OFFLINE_HINT = "set OPENAI_API_KEY or OPENAI_BASE_URL and restart the kernel to use a live model."


def no_model(config: SessionConfig) -> bool:
    """Neither an API key nor a model server of one's own."""
    return not config.key() and config.base_url.rstrip("/") == DEFAULT_BASE_URL


def resolve_provider(config: SessionConfig) -> str:
    """The protocol to speak: ``auto`` is the Responses API. A live protocol needs a key
    or a server of one's own; without either there is no model, and the one sentence
    says the three ways to get one. The offline recording plays only when asked for."""
    if config.provider == "replay":
        return "replay"
    if no_model(config):
        if config.offline_recording is not None and config.provider == "auto":
            return "replay"
        raise ConfigError(NO_MODEL)
    return "responses" if config.provider == "auto" else config.provider


def named_for_its_recording(config: SessionConfig) -> SessionConfig:
    """``config`` with the model named after the recording it plays, when no model is
    configured and a notebook's recording plays: sessions, exports and status then say
    a recording answered, not the default model."""
    if config.offline_recording is None or config.provider != "auto" or not no_model(config):
        return config
    return config.model_copy(update={"model": f"recording {config.offline_recording.name}"})


def create_client(config: SessionConfig, on_retry: RetryHook | None = None) -> ModelClient:
    """The client for the configured provider; says in one sentence what is missing."""
    provider = resolve_provider(config)
    if provider == "replay":
        from agent_magics.models.replay import ReplayClient

        if config.provider == "auto":  # no model configured: the notebook's recording
            return ReplayClient(config.offline_recording, OFFLINE_HINT)
        return ReplayClient(config.replay_path)
    client_class = _live_client_class(provider)
    if client_class is None:
        raise ConfigError(f"The provider {provider!r} is not available in this version.")
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


def _live_client_class(provider: str) -> type[ResponsesClient | ChatClient] | None:
    """Each live protocol's client class."""
    if provider == "responses":
        return ResponsesClient
    if provider == "chat":
        from agent_magics.models.chat import ChatClient

        return ChatClient
    return None


__all__ = [
    "NO_MODEL",
    "OFFLINE_HINT",
    "create_client",
    "named_for_its_recording",
    "resolve_provider",
]
