"""Texts of the ``%agent`` line commands (status, tools): pure functions."""

from __future__ import annotations

from typing import Any

from agent_magics.config import SessionConfig
from agent_magics.events import Usage
from agent_magics.ui.render import one_line


def status_text(config: SessionConfig, usage: Usage, turn: str, mode: str) -> str:
    """What ``%agent status`` prints."""
    return "\n".join(
        [
            f"model:           {config.model} ({config.provider} at {config.base_url})",
            f"approval policy: {config.approval_policy.value}",
            f"sandbox:         {config.sandbox_mode.value}",
            f"cwd:             {config.cwd}",
            f"tokens used:     {usage.total_tokens:,} ({usage.input_tokens:,} in, "
            f"{usage.output_tokens:,} out)",
            f"turn:            {turn}",
            f"mode:            {mode}",
        ]
    )


def tools_text(specs: list[dict[str, Any]]) -> str:
    """One line per tool the model is offered: name and the first line of its description."""
    lines = []
    for spec in specs:
        name = str(spec.get("name") or spec.get("type") or "?")
        about = one_line(str(spec.get("description") or ""), 100)
        lines.append(f"{name:<20} {about}".rstrip())
    return "\n".join(lines) or "(no tools)"
