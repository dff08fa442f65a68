"""Tool outputs as they are kept in history and as they are sent back to the model.

Recording: every output is truncated again with the model's policy times 1.2 (text as
head + tail; content items item by item). Sending: when the freeform apply_patch tool
is offered, JSON outputs of ``shell`` and ``apply_patch`` calls are rewritten into the
plain-text exec format the model knows; history itself keeps the JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent_magics.protocol.items import AnyItem, CustomToolCallOutput, FunctionCallOutput
from agent_magics.protocol.web_search import WEB_SEARCH_CALL, sent_form
from agent_magics.tools.context import ContentItem, SessionServices, ToolOutput
from agent_magics.tools.goal_state import objective_item
from agent_magics.tools.router import ToolCall
from agent_magics.tools.truncate import (
    APPROX_BYTES_PER_TOKEN,
    HISTORY_BUDGET_FACTOR,
    TruncationPolicy,
    truncate_text,
)
from agent_magics.tools.unified_exec.format import reserialize_shell_output

RESERIALIZED_TOOLS = frozenset({"shell", "container.exec", "local_shell", "apply_patch"})


def truncate_items(items: list[ContentItem], policy: TruncationPolicy) -> list[ContentItem]:
    """Text items that fit are kept, the first that does not is cut, later ones dropped
    (and counted in a note); images are always kept."""
    budget = policy.byte_budget
    out: list[ContentItem] = []
    dropped = 0
    for item in items:
        if item.get("type") != "input_text":
            out.append(item)
            continue
        text = str(item.get("text", ""))
        size = len(text.encode("utf-8"))
        if budget <= 0:
            dropped += 1
            continue
        if size <= budget:
            out.append(item)
            budget -= size
            continue
        limit = budget if policy.mode == "bytes" else budget // APPROX_BYTES_PER_TOKEN
        out.append({**item, "text": truncate_text(text, TruncationPolicy(policy.mode, limit))})
        budget = 0
    if dropped:
        out.append({"type": "input_text", "text": f"[omitted {dropped} text items ...]"})
    return out


def history_output(output: ToolOutput, policy: TruncationPolicy) -> ToolOutput:
    """``output`` as recorded in history."""
    scaled = policy.scaled(HISTORY_BUDGET_FACTOR)
    if isinstance(output.content, str):
        return ToolOutput(truncate_text(output.content, scaled), output.success)
    return ToolOutput(truncate_items(output.content, scaled), output.success)


def output_items(
    calls: Sequence[ToolCall],
    outputs: Sequence[ToolOutput],
    redact: Callable[[ToolOutput], ToolOutput],
    policy: TruncationPolicy,
    services: SessionServices,
) -> list[AnyItem]:
    """The history items of one response's calls: each output scrubbed and truncated as
    history keeps it, and Codex's ``goal_objective`` output after a create_goal's."""
    items: list[AnyItem] = []
    for call, output in zip(calls, outputs, strict=True):
        content = history_output(redact(output), policy).content
        kind = CustomToolCallOutput if call.kind == "custom" else FunctionCallOutput
        items.append(kind(call_id=call.call_id, output=content))
        if (objective := objective_item(services, call.call_id)) is not None:
            items.append(objective)
    return items


def _has_freeform_apply_patch(tools: list[dict[str, Any]]) -> bool:
    return any(t.get("type") == "custom" and t.get("name") == "apply_patch" for t in tools)


def reserialized_input(history: list[Any], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request's ``input``: history items, with shell/apply_patch JSON outputs in
    text form when the freeform apply_patch tool is offered."""
    wire = [item.wire() for item in history]
    items = [sent_form(w) if w.get("type") == WEB_SEARCH_CALL else w for w in wire]
    if not _has_freeform_apply_patch(tools):
        return items
    names: dict[str, str] = {}
    for item in items:
        if item.get("type") in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = item.get("call_id") or item.get("id")  # a local_shell_call may lack one
            names[str(call_id)] = str(item.get("name") or "local_shell")
    for item in items:
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            name = names.get(str(item.get("call_id")))
            if name in RESERIALIZED_TOOLS and isinstance(item.get("output"), str):
                item["output"] = reserialize_shell_output(item["output"])
    return items
