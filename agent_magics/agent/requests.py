"""What a session's turn is run with: the turn's settings, and each request to the model
(its instructions, history, tools and options)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_magics.agent.instructions import base_instructions
from agent_magics.agent.tool_outputs import reserialized_input
from agent_magics.config import SessionConfig
from agent_magics.import_guard import distrust
from agent_magics.models.base import ModelRequest
from agent_magics.protocol.items import AnyItem
from agent_magics.tools.context import ShellInfo, TurnContext


def turn_context(
    c: SessionConfig, shell: ShellInfo, thread_id: str, read_only: tuple[Path, ...]
) -> TurnContext:
    """The settings of a turn under ``c``; from then on the package imports nothing from
    the folder it works in."""
    distrust(c.cwd)
    return TurnContext(
        cwd=c.cwd,
        approval_policy=c.approval_policy,
        sandbox_mode=c.sandbox_mode,
        truncation=c.truncation(),
        shell=shell,
        allow_login_shell=c.allow_login_shell,
        supports_images=c.supports_images,
        thread_id=thread_id,
        sandbox_limit=c.sandbox_limit,
        read_only_paths=read_only,
    )


def request_for(
    c: SessionConfig,
    specs: list[dict[str, Any]],
    thread_id: str,
    history: Sequence[AnyItem],
    tools: bool,
    tail: list[dict[str, Any]],
) -> ModelRequest:
    """The request for ``history`` (then the raw ``tail`` items) under the settings
    ``c``, offering the tools of ``specs`` or none (a summarising request), cached
    under the session's ``thread_id``."""
    return ModelRequest(
        model=c.model,
        instructions=c.instructions
        if c.instructions is not None
        else base_instructions(c.approver, c.approval_policy, c.sandbox_mode),
        input=[*reserialized_input(list(history), specs), *tail],
        tools=specs if tools else [],
        parallel_tool_calls=c.parallel_tool_calls and tools,
        reasoning={"effort": c.reasoning_effort, "summary": "auto"} if c.reasoning_effort else None,
        prompt_cache_key=thread_id,
    )
