"""Our Responses-style history and tools, rewritten for Chat Completions.

History items become messages: consecutive calls of one response share one assistant
message; each output becomes a ``tool`` message (images in outputs follow as one user
message, since tool messages carry text only); a user message keeps its images where they
are among its text parts. An assistant message with calls and no text has
``content: ""``, not null: llama-cpp-python's server rejects null there.
Reasoning and unknown items have no Chat Completions form and are left out. A freeform
(custom) tool is offered as a function with one string parameter, ``input``.
"""

from __future__ import annotations

import json
from typing import Any

FREEFORM_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The whole raw input text."}},
    "required": ["input"],
    "additionalProperties": False,
}
CALLS = ("function_call", "custom_tool_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")


def freeform_description(tool: dict[str, Any]) -> str:
    text = str(tool.get("description") or "")
    fmt = tool.get("format") or {}
    note = "Here the raw text travels as the string parameter `input` of a JSON object."
    if fmt.get("type") == "grammar" and fmt.get("definition"):
        note += f" It must follow this {fmt.get('syntax', '')} grammar:\n{fmt['definition']}"
    return f"{text}\n\n{note}" if text else note


def chat_tools(tools: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], frozenset[str]]:
    """The tools in Chat Completions form, and the names of the freeform ones."""
    out: list[dict[str, Any]] = []
    freeform: set[str] = set()
    for tool in tools:
        kind, name = tool.get("type"), str(tool.get("name", ""))
        if kind == "function":
            params = tool.get("parameters") or {"type": "object", "properties": {}}
            desc = str(tool.get("description") or "")
        elif kind == "custom":
            freeform.add(name)
            params, desc = FREEFORM_PARAMETERS, freeform_description(tool)
        else:
            continue  # provider-specific built-ins have no Chat Completions form
        out.append(
            {
                "type": "function",
                "function": {"name": name, "description": desc, "parameters": params},
            }
        )
    return out, frozenset(freeform)


def chat_tool_choice(choice: str | dict[str, Any]) -> str | dict[str, Any]:
    if isinstance(choice, str) or "function" in choice:
        return choice
    name = choice.get("name")
    if choice.get("type") in ("function", "custom") and name:
        return {"type": "function", "function": {"name": name}}
    return "auto"


def _texts(parts: list[dict[str, Any]]) -> str:
    return "\n".join(
        str(p.get("text", "")) for p in parts if p.get("type") in ("input_text", "output_text")
    )


def _images(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"type": "image_url", "image_url": {"url": p.get("image_url", "")}}
        for p in parts
        if p.get("type") == "input_image"
    ]


def _user_content(content: Any) -> str | list[dict[str, Any]]:
    """A message's content: its text, or with images its parts in their order (an
    image attached to a prompt sits between the text parts that name it)."""
    if isinstance(content, str):
        return content
    if not _images(content):
        return _texts(content)
    parts: list[dict[str, Any]] = []
    for part in content:
        if part.get("type") == "input_image":
            parts += _images([part])
        elif "text" in part:
            parts.append({"type": "text", "text": str(part.get("text", ""))})
    return parts


def _tool_call(item: dict[str, Any]) -> dict[str, Any]:
    if item.get("type") == "custom_tool_call":
        arguments = json.dumps({"input": item.get("input", "")})
    else:
        arguments = str(item.get("arguments") or "{}")
    return {
        "id": item.get("call_id", ""),
        "type": "function",
        "function": {"name": item.get("name", ""), "arguments": arguments},
    }


def chat_messages(instructions: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` (Responses input items, in order) as Chat Completions messages."""
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    open_assistant: dict[str, Any] | None = None
    images: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type") or ("message" if "role" in item else "")
        if kind in OUTPUTS:
            output = item.get("output", "")
            text = output if isinstance(output, str) else _texts(output)
            images += [] if isinstance(output, str) else _images(output)
            messages.append(
                {"role": "tool", "tool_call_id": item.get("call_id", ""), "content": text}
            )
            open_assistant = None
            continue
        if images:
            messages.append({"role": "user", "content": images})
            images = []
        if kind in CALLS:
            if open_assistant is None:
                open_assistant = {"role": "assistant", "content": ""}
                messages.append(open_assistant)
            open_assistant.setdefault("tool_calls", []).append(_tool_call(item))
        elif kind == "message":
            role, content = item.get("role"), item.get("content", "")
            if role == "assistant":
                text = content if isinstance(content, str) else _texts(content)
                open_assistant = {"role": "assistant", "content": text}
                messages.append(open_assistant)
                continue
            role = "system" if role in ("developer", "system") else "user"
            messages.append({"role": role, "content": _user_content(content)})
            open_assistant = None
        # reasoning and unknown items: nothing to send
    if images:
        messages.append({"role": "user", "content": images})
    return messages
