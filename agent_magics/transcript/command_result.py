"""What a shell tool's answer says about the run it made, read back from its text (the
transcript model heads a command that exited badly as failed; the terminal and chat front
ends show the command's own output apart)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

COMMAND_TOOLS = ("exec_command", "shell", "shell_command", "local_shell")
OUTPUT_TOOLS = (*COMMAND_TOOLS, "write_stdin")

_EXIT_CODE = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)$", re.MULTILINE)
_SESSION = re.compile(r"^Process running with session ID (\d+)$", re.MULTILINE)


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed as a JSON object (``None``: not JSON, or not an object)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class CommandResult:
    """What a shell tool's answer says about the run: the command's own output, its exit
    code, or the session it still runs in."""

    output: str
    exit_code: int | None = None
    session_id: str | None = None


def command_result(tool_name: str, output: Any) -> CommandResult | None:
    """The run described by a shell tool's output (``None``: not a command's output).

    The answer to the model starts with lines about the run (wall time, exit code) before
    ``Output:``; the ``shell`` tool answers JSON with ``output`` and ``metadata``."""
    if tool_name not in OUTPUT_TOOLS or not isinstance(output, str):
        return None
    parsed = json_object(output) if output.startswith("{") else None
    if parsed is not None and isinstance(parsed.get("output"), str):
        meta = parsed.get("metadata")
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        return CommandResult(parsed["output"], code if isinstance(code, int) else None)
    head, sep, body = output.partition("\nOutput:\n")
    if not sep:
        return None
    code_match, session = _EXIT_CODE.search(head), _SESSION.search(head)
    return CommandResult(
        body,
        int(code_match.group(1)) if code_match else None,
        session.group(1) if session else None,
    )
