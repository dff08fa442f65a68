"""A loaded session told again: ``session/load`` streams the conversation to the client
before it answers, so the chat shows what was said and done.

The history is read as ``%agent history`` and the exports read it
(:func:`agent_magics.transcript.saved.fold`): each turn's prompt as the person's message,
the model's answers as its messages, each tool call as a finished tool call with its
summary and output (what was sent beside a prompt, the environment and the project's
instructions, is not repeated).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from acp.helpers import (
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_user_message_text,
)

from agent_magics.acp.updates import KINDS, MAX_OUTPUT_CHARS, Update
from agent_magics.protocol.items import AnyItem
from agent_magics.transcript.calls import call_summary
from agent_magics.transcript.model import TextBlock, ToolBlock
from agent_magics.transcript.saved import fold, history_records


def replayed(history: Sequence[AnyItem], redact: Callable[[str], str]) -> list[Update]:
    items: list[Any] = [item.wire() for item in history]
    doc = fold(None, history_records(items), redact=redact)
    updates: list[Update] = []
    for turn in doc.turns:
        if turn.prompt:
            updates.append(update_user_message_text(turn.prompt))
        for block in turn.blocks:
            if isinstance(block, TextBlock) and block.text:
                updates.append(update_agent_message_text(block.text))
            elif isinstance(block, ToolBlock):
                updates.append(_call(block))
    return updates


def _call(block: ToolBlock) -> Update:
    summary = call_summary(block.tool_name, block.arguments, block.kind)
    first = summary.splitlines()[0] if summary else ""
    output = block.output or block.raw_output or ""
    return start_tool_call(
        f"{block.call_id}-replayed",
        f"{block.tool_name}: {first}" if first else block.tool_name,
        kind=KINDS.get(block.tool_name, "other"),
        status="failed" if block.success is False else "completed",
        content=[tool_content(text_block(output[-MAX_OUTPUT_CHARS:]))] if output else None,
    )
