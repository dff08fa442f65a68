"""The payloads of ``exec --json`` items, read back from what a call asked and answered.

Pure helpers for :mod:`.jsonl`: the command a shell tool ran, as the argv Codex shows
(``/bin/bash -lc 'echo hello'``, quoted by ``shlex.join``); the files a patch touches,
with Codex's change kinds; an MCP call's result or error, turned back from the text the
model read into MCP content; the sub-agent tools under Codex's collab names; and which
item a call makes (:func:`classify`) with the fields it starts with.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from agent_magics.events import ToolCallProposed
from agent_magics.tools.runtimes.intercept import APPLY_PATCH_NAMES, heredoc_patch, shell_script
from agent_magics.transcript.terminal import call_patch

SHELL_TOOLS = ("exec_command", "shell", "shell_command", "local_shell")
GOAL_TOOLS = ("create_goal", "update_goal", "get_goal")
SILENT_TOOLS = ("update_plan", "write_stdin", *GOAL_TOOLS)  # told by other events or none
COLLAB_TOOLS = {
    "spawn_agent": "spawn_agent",
    "send_input": "send_input",
    "wait_agent": "wait",
    "close_agent": "close_agent",
    "resume_agent": "resume_agent",  # ours: Codex's exec events have no such tool
}
"""Our sub-agent tools by the ``tool`` name a ``collab_tool_call`` item gives them."""
COLLAB_FAILURES = ("errored", "not_found")
CHANGE_KINDS = {"Add": "add", "Delete": "delete", "Update": "update"}
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.MULTILINE)
NO_ANSWER = "err: "  # how an MCP call that got no result starts (see mcp.results)


@dataclass(frozen=True)
class Shell:
    """What a shell tool's script runs in: the person's shell, and whether scripts run
    in a login shell unless the call says otherwise."""

    path: str = "/bin/bash"
    login: bool = True


def arguments_of(raw: str) -> Any:
    """A call's JSON arguments (``None`` when blank or not JSON)."""
    try:
        return json.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):
        return None


def command_argv(tool: str, raw: str, shell: Shell) -> list[str] | None:
    """The argv a shell tool call runs (``None``: its arguments hold no command)."""
    args = arguments_of(raw)
    if not isinstance(args, dict):
        return None
    command = args.get("cmd" if tool == "exec_command" else "command")
    if isinstance(command, list) and all(isinstance(c, str) for c in command) and command:
        return list(command)
    if not isinstance(command, str) or tool not in ("exec_command", "shell_command"):
        return None
    path = args.get("shell") if isinstance(args.get("shell"), str) else shell.path
    login = args.get("login")
    flag = "-lc" if (shell.login if login is None else bool(login)) else "-c"
    return [str(path), flag, command]


def command_text(argv: list[str]) -> str:
    return shlex.join(argv)


def shell_patch(argv: list[str] | None) -> tuple[str, str | None] | None:
    """``(patch, folder)`` when a shell call's argv is an apply_patch (``folder``: the
    ``cd`` before it, if any), which Codex reports as a file change, not a command."""
    if argv is None:
        return None
    if len(argv) == 2 and argv[0] in APPLY_PATCH_NAMES:
        return argv[1], None
    script = shell_script(argv)
    return heredoc_patch(script) if script is not None else None


def patch_changes(patch: str, cwd: str) -> list[dict[str, str]]:
    """The files a patch adds, deletes or updates, each path made absolute against
    ``cwd`` as Codex reports them."""
    return [
        {"path": os.path.join(cwd, path.strip()), "kind": CHANGE_KINDS[verb]}
        for verb, path in _PATCH_FILE.findall(patch)
    ]


def mcp_outcome(output: Any, success: bool) -> tuple[dict[str, Any] | None, dict[str, str] | None]:
    """``(result, error)`` of an MCP call from the output the model read: a call that got
    no answer reads ``err: "..."`` (its message becomes ``error``); structured content
    was sent as its JSON; plain content as the JSON of its list, or as content items
    when it held images."""
    if isinstance(output, list):
        return {"content": [_mcp_content(p) for p in output], "structured_content": None}, None
    text = str(output)
    if not success and text.startswith(NO_ANSWER):
        quoted = text[len(NO_ANSWER) :]
        try:
            message = json.loads(quoted)
        except ValueError:
            message = quoted
        return None, {"message": str(message)}
    value = arguments_of(text)
    if isinstance(value, list):
        return {"content": value, "structured_content": None}, None
    if value is not None:
        return {"content": [], "structured_content": value}, None
    return {"content": [{"type": "text", "text": text}], "structured_content": None}, None


def _mcp_content(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    if part.get("type") == "input_text":
        return {"type": "text", "text": part.get("text", "")}
    url = str(part.get("image_url", ""))
    if part.get("type") == "input_image" and url.startswith("data:") and ";base64," in url:
        mime, data = url[len("data:") :].split(";base64,", 1)
        return {"type": "image", "data": data, "mimeType": mime}
    return part


def collab_targets(tool: str, raw: str) -> tuple[list[str], str | None]:
    """The agents a sub-agent call is about (its ``receiver_thread_ids``) and the
    message it sends, from its arguments."""
    args = arguments_of(raw)
    args = args if isinstance(args, dict) else {}
    key = {"wait_agent": "targets", "resume_agent": "id"}.get(tool, "target")
    targets = args.get(key)
    targets = targets if isinstance(targets, list) else [targets] if targets else []
    message = args.get("message") if tool in ("spawn_agent", "send_input") else None
    return [str(t) for t in targets], message if isinstance(message, str) else None


@dataclass
class Call:
    """A tool call as far as it went: the kind of item it makes, that item once it has
    one, and whether a person (or the policy) said no."""

    call_id: str
    tool: str
    arguments: str
    kind: str  # "command", "patch", "mcp", "collab", "tool", "silent"
    server: str | None = None
    mcp_tool: str | None = None
    item: dict[str, Any] = field(default_factory=dict)
    patch: tuple[str, str | None] | None = None
    denied: bool = False


def classify(event: ToolCallProposed, shell: Shell) -> Call:
    """Which item a proposed call makes: a shell command that only applies a patch is a
    file change, as Codex has it; update_plan, write_stdin and the goal tools make none
    of their own (their events or the command they continue do)."""
    call_id, tool, raw = event.call_id, event.tool_name, event.arguments
    if event.server is not None:
        return Call(call_id, tool, raw, "mcp", event.server, event.mcp_tool)
    if tool in SILENT_TOOLS or tool in COLLAB_TOOLS:
        return Call(call_id, tool, raw, "silent" if tool in SILENT_TOOLS else "collab")
    if tool == "apply_patch":
        patch = call_patch(tool, raw, event.kind)
        return Call(call_id, tool, raw, "patch", patch=(patch, None) if patch else None)
    if tool in SHELL_TOOLS:
        argv = command_argv(tool, raw, shell)
        found = shell_patch(argv)
        if found is not None:
            return Call(call_id, tool, raw, "patch", patch=found)
        if argv is not None:
            return Call(call_id, tool, raw, "command", item={"command": command_text(argv)})
    return Call(call_id, tool, raw, "tool")


def started_fields(call: Call, thread_id: str) -> tuple[str, dict[str, Any]] | None:
    """The type and fields of the item a call starts (``None``: it starts none; a file
    change is only ever completed)."""
    if call.kind == "command":
        return "command_execution", {
            **call.item,
            "aggregated_output": "",
            "exit_code": None,
            "status": "in_progress",
        }
    arguments = arguments_of(call.arguments)
    if call.kind == "mcp":
        return "mcp_tool_call", {
            "server": call.server,
            "tool": call.mcp_tool,
            "arguments": arguments,
            "result": None,
            "error": None,
            "status": "in_progress",
        }
    if call.kind == "collab":
        receivers, prompt = collab_targets(call.tool, call.arguments)
        return "collab_tool_call", {
            "tool": COLLAB_TOOLS[call.tool],
            "sender_thread_id": thread_id,
            "receiver_thread_ids": receivers if call.tool != "spawn_agent" else [],
            "prompt": prompt,
            "agents_states": {},
            "status": "in_progress",
        }
    if call.kind == "tool":
        fields = {"arguments": arguments, "output": None, "status": "in_progress"}
        return "tool_call", {"tool": call.tool, **fields}
    return None
