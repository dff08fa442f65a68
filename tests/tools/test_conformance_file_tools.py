"""The Codex goldens of read_file, list_dir and grep_files, replayed through our handlers.

Each case's workspace is built with the conformance harness's own helper, the scripted
calls are made turn by turn (calls of one turn concurrently), and the outputs, after the
history truncation every tool output goes through, must equal what Codex answered.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agent_magics.errors import RespondToModel
from agent_magics.tools.context import (
    FunctionPayload,
    SessionServices,
    ToolInvocation,
    TurnContext,
)
from agent_magics.tools.handlers.grep_files import GrepFilesHandler
from agent_magics.tools.handlers.list_dir import ListDirHandler
from agent_magics.tools.handlers.read_file import ReadFileHandler
from agent_magics.tools.registry import ToolHandler
from agent_magics.tools.truncate import HISTORY_BUDGET_FACTOR, TruncationPolicy, truncate_text
from tests.helpers.conformance import build_case, case_params, golden_problems, harness

GROUPS = ("read_file", "list_dir", "grep_files")
HANDLERS: dict[str, ToolHandler] = {
    h.name: h for h in (ReadFileHandler(), ListDirHandler(), GrepFilesHandler())
}
# The harness's model uses a 10000-token policy; history keeps 1.2 times that.
HISTORY_POLICY = TruncationPolicy.tokens(10_000).scaled(HISTORY_BUDGET_FACTOR)


async def _call(call: dict[str, Any], turn: TurnContext, services: SessionServices) -> str:
    args = call.get("arguments", {})
    raw = args if isinstance(args, str) else json.dumps(args)
    handler = HANDLERS.get(call["name"])
    if handler is None:
        return f"unsupported call: {call['name']}"
    inv = ToolInvocation(call["call_id"], call["name"], FunctionPayload(raw), turn, services)
    try:
        text = (await handler.handle(inv)).text
    except RespondToModel as exc:
        text = exc.message
    return truncate_text(text, HISTORY_POLICY)


@pytest.mark.parametrize("rel", case_params(GROUPS, lambda case: case.get("binary") == "legacy"))
async def test_golden(rel: str, tmp_path: Path) -> None:
    ws = tmp_path.resolve() / "ws"
    ws.mkdir()
    case, golden = build_case(rel, ws)
    turn = TurnContext(cwd=ws)
    services = SessionServices()
    outputs: dict[str, dict[str, str]] = {}
    for calls in harness._subst(case["turns"], str(ws)):
        texts = await asyncio.gather(*(_call(c, turn, services) for c in calls))
        for call, text in zip(calls, texts, strict=True):
            outputs[call["call_id"]] = {"output": text}
    assert golden_problems(golden, ws, outputs) == []
