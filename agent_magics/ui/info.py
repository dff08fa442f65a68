"""Texts of the ``%agent`` line commands (status, tools, history): pure functions."""

from __future__ import annotations

import json
from typing import Any

from agent_magics.config import SessionConfig
from agent_magics.events import Usage
from agent_magics.ui.render import one_line

HISTORY_CHARS = 160


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


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text") or f"[{part.get('type', '?')}]"))
        return " ".join(parts)
    return json.dumps(content)


def history_line(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind == "message":
        return f"{item.get('role')}: {one_line(_content_text(item.get('content')), HISTORY_CHARS)}"
    if kind == "function_call":
        args = one_line(str(item.get("arguments", "")), HISTORY_CHARS)
        return f"call {item.get('name')} {args}"
    if kind == "custom_tool_call":
        return f"call {item.get('name')} {one_line(str(item.get('input', '')), HISTORY_CHARS)}"
    if kind in ("function_call_output", "custom_tool_call_output"):
        text = one_line(_content_text(item.get("output")), HISTORY_CHARS)
        return f"output {item.get('call_id')}: {text}"
    if kind == "reasoning":
        summary = " ".join(str(s.get("text", "")) for s in item.get("summary") or [])
        return f"reasoning: {one_line(summary, HISTORY_CHARS)}"
    return str(kind)


def history_text(items: list[dict[str, Any]]) -> str:
    """What ``%agent history`` prints: one numbered line per item of the conversation."""
    if not items:
        return "(the conversation is empty)"
    width = len(str(len(items)))
    return "\n".join(f"{i:>{width}}. {history_line(item)}" for i, item in enumerate(items, 1))
