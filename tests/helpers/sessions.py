"""Sessions the tests drive against a loopback model server: one place for the settings
every such test starts from (model ``m``, an API key the test can look for, no shell
tool unless asked), and for the session that changes files without asking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_magics import Session, SessionConfig
from agent_magics.protocol.approval import Approver
from agent_magics.tools.handlers.toolset import ExtraTools

KEY = "sk-test-secret-24680135"
WRITES = {
    "shell_type": "unified_exec",
    "approval_policy": "never",
    "sandbox_mode": "workspace-write",
}
"""A session that runs commands and patches in its folder without a question."""


def config_for(cwd: Path, base_url: str, *, api_key: Any = KEY, **settings: Any) -> SessionConfig:
    """The settings of model ``m`` at ``base_url`` working in ``cwd``; ``settings``
    override the defaults (``shell_type="disabled"``)."""
    config: dict[str, Any] = {
        "model": "m",
        "base_url": base_url,
        "cwd": cwd,
        "api_key": api_key,
        "shell_type": "disabled",
    } | settings
    return SessionConfig(**config)


def session_for(
    cwd: Path,
    base_url: str,
    *,
    api_key: Any = KEY,
    extra_tools: ExtraTools | None = None,
    approver: Approver | None = None,
    **settings: Any,
) -> Session:
    """A session of :func:`config_for`'s settings; ``approver`` answers its questions
    (none: every question is denied)."""
    config = config_for(cwd, base_url, api_key=api_key, **settings)
    if approver is None:
        return Session(config, extra_tools=extra_tools)
    return Session(config, extra_tools=extra_tools, approver=approver)


def writing_session(cwd: Path, base_url: str, **settings: Any) -> Session:
    """A session that changes files in ``cwd`` unasked (:data:`WRITES`)."""
    return session_for(cwd, base_url, **(WRITES | settings))
