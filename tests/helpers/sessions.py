"""Sessions the tests drive against a loopback model server: one place for the settings
every such test starts from (model ``m``, an API key the test can look for, no shell
tool unless asked)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_magics import Session, SessionConfig
from agent_magics.tools.handlers.toolset import ExtraTools

KEY = "sk-test-secret-24680135"


def session_for(
    cwd: Path,
    base_url: str,
    *,
    api_key: Any = KEY,
    extra_tools: ExtraTools | None = None,
    **settings: Any,
) -> Session:
    """A session of model ``m`` at ``base_url`` working in ``cwd``; ``settings`` override
    the defaults (``shell_type="disabled"``)."""
    config: dict[str, Any] = {
        "model": "m",
        "base_url": base_url,
        "cwd": cwd,
        "api_key": api_key,
        "shell_type": "disabled",
    } | settings
    return Session(SessionConfig(**config), extra_tools=extra_tools)
