"""Model clients: the Responses API (and, through the same interface, other protocols)."""

from __future__ import annotations

from agent_magics.config import DEFAULT_BASE_URL, SessionConfig
from agent_magics.errors import ConfigError, ModelError
from agent_magics.models.base import ModelClient, ModelRequest, StreamFailed
from agent_magics.models.responses import ResponsesClient, RetryHook


def create_client(config: SessionConfig, on_retry: RetryHook | None = None) -> ModelClient:
    """The client for ``config.provider``; says in one sentence what is missing."""
    key = config.key()
    if config.provider == "responses":
        if not key and config.base_url.rstrip("/") == DEFAULT_BASE_URL:
            raise ModelError(
                "No API key: set OPENAI_API_KEY, or point --base-url at a local model server."
            )
        return ResponsesClient(
            config.base_url,
            key,
            request_max_retries=config.request_max_retries,
            stream_idle_timeout_s=config.stream_idle_timeout_s,
            on_retry=on_retry,
        )
    raise ConfigError(f"The provider {config.provider!r} is not available in this version.")


__all__ = ["ModelClient", "ModelRequest", "ResponsesClient", "StreamFailed", "create_client"]
