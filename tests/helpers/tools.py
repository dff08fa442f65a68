"""What the handler tests share: calling a handler as the router would, Codex's unit
vectors, the spec check of the file tools, and watching the processes a command starts.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from agent_magics.errors import RespondToModel
from agent_magics.protocol.approval import SandboxMode
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import (
    FunctionPayload,
    SessionServices,
    ShellInfo,
    ToolInvocation,
    TurnContext,
)
from agent_magics.tools.registry import ToolHandler
from tests.helpers.conformance import CONF, codex_spec, without_descriptions

CALL_ID = "call-1"


async def call_tool(
    handler: ToolHandler, cwd: Path, arguments: str | dict[str, Any]
) -> tuple[str, bool]:
    """The text the model would see and the success flag."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    inv = ToolInvocation(
        CALL_ID, handler.name, FunctionPayload(raw), TurnContext(cwd=cwd), SessionServices()
    )
    try:
        out = await handler.handle(inv)
    except RespondToModel as exc:
        return exc.message, False
    return out.text, out.success


def vectors(name: str, section: str) -> list[Any]:
    """The cases of ``section`` in Codex's unit vectors ``vectors/<name>.json``."""
    path = CONF / "vectors" / f"{name}.json"
    data = json.loads(path.read_text())
    return [
        pytest.param(case, id=case.get("id") or f"{section}-{i}")
        for i, case in enumerate(data[section])
    ]


def assert_codex_parameters(handler: ToolHandler, name: str) -> None:
    """A file tool is named ``name``, takes Codex's parameters, describes itself in its own
    words and runs in parallel with other calls."""
    ours = handler.spec(ToolsConfig()).to_wire()
    codex = codex_spec(name, "codex_tool_specs_legacy.json")
    assert without_descriptions(ours["parameters"]) == without_descriptions(codex["parameters"])
    assert ours["description"] != codex["description"]
    assert (handler.name, handler.supports_parallel, handler.payload_kind) == (
        name,
        True,
        "function",
    )


def shell_invocation(
    handler: ToolHandler, args: dict[str, Any], services: SessionServices, cwd: Path, **turn: Any
) -> ToolInvocation:
    """A call of a shell tool with ``args``, in a bash turn in ``cwd``; unconfined unless
    ``turn`` names a sandbox mode (these tests are about the tools, not the sandbox)."""
    turn.setdefault("sandbox_mode", SandboxMode.DANGER_FULL_ACCESS)
    context = TurnContext(cwd=cwd, shell=ShellInfo("/bin/bash", "bash"), **turn)
    return ToolInvocation(
        CALL_ID, handler.name, FunctionPayload(json.dumps(args)), context, services
    )


async def run_shell_tool(
    handler: ToolHandler, args: dict[str, Any], services: SessionServices, cwd: Path, **turn: Any
) -> str:
    """What the model reads of a shell tool's call (see :func:`shell_invocation`); a
    refusal as ``ERROR <its text>``."""
    try:
        out = await handler.handle(shell_invocation(handler, args, services, cwd, **turn))
        return str(out.content)
    except RespondToModel as exc:
        return f"ERROR {exc.message}"


def session_of(text: str) -> int:
    """The session id of a command still running, from exec_command's answer."""
    found = re.search(r"Process running with session ID (\d+)", text)
    assert found, text
    return int(found.group(1))


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone since the kill
        return False
    except OSError:  # no /proc here: the kill said it runs
        return True
    return stat[stat.rfind(")") + 2] != "Z"


async def gone(pid: int, within: float = 5.0) -> bool:
    """Whether process ``pid`` ends within ``within`` seconds."""
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True
