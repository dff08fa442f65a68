"""``%agent tool NAME`` and the person's functions in ``%agent tools``."""

from __future__ import annotations

import shlex
from typing import Any

from agent_magics.errors import for_person
from agent_magics.tools.functions.registered import FunctionTools, registered_tools
from agent_magics.tools.functions.schema import ToolDefinitionError, describe_function

USAGE = (
    "usage: %agent tool NAME [--auto]  (offer the function NAME to the agent; --auto: "
    "it never asks before a call) | %agent tool --remove NAME"
)
SIGNATURE_CHARS = 100
"""How much of a function's signature ``%agent tools`` prints."""


def tool_command(namespace: dict[str, Any], rest: str, tools: FunctionTools | None = None) -> str:
    """What ``%agent tool ...`` does, as the line it prints."""
    tools = registered_tools if tools is None else tools
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        return for_person(f"{exc}. {USAGE}")
    remove = "--remove" in words
    auto = "--auto" in words
    names = [w for w in words if w not in ("--remove", "--auto")]
    if len(names) != 1 or (remove and auto) or any(w.startswith("-") for w in names):
        return USAGE
    name = names[0]
    if remove:
        if tools.remove(name):
            return for_person(f"{name} is no longer offered.")
        return for_person(f"no function named {name!r} is offered.")
    if name not in namespace:
        return for_person(f"there is no {name!r} in the namespace.")
    try:
        tool = tools.add(describe_function(namespace[name], approval="auto" if auto else "ask"))
    except ToolDefinitionError as exc:
        return for_person(exc)
    when = "runs without asking" if tool.approval == "auto" else "asks before each call"
    return for_person(f"{tool.name} is offered to the agent from the next turn ({when}).")


def functions_text(tools: FunctionTools | None = None) -> str:
    """The section of ``%agent tools`` that lists the person's functions ("" if none)."""
    tools = registered_tools if tools is None else tools
    if not len(tools):
        return ""
    lines = ["your Python functions (ask: a person approves each call; auto: never asks):"]
    for tool in tools:
        signature = tool.signature
        if len(signature) > SIGNATURE_CHARS:
            signature = signature[: SIGNATURE_CHARS - 1] + "…"
        lines.append(f"  {tool.name:<18} {tool.approval:<5} {signature}")
    return "\n".join(lines)
