"""The Codex goldens of read_file, list_dir and grep_files, replayed through our handlers.

Each case's workspace is built with the conformance harness's own helper, the scripted
calls are made turn by turn (calls of one turn concurrently), and the outputs, after the
history truncation every tool output goes through, must equal what Codex answered.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
import warnings
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

CONF = Path(__file__).resolve().parents[2] / "shared" / "conformance"
GROUPS = ("read_file", "list_dir", "grep_files")
HANDLERS: dict[str, ToolHandler] = {
    h.name: h for h in (ReadFileHandler(), ListDirHandler(), GrepFilesHandler())
}
# The harness's model uses a 10000-token policy; history keeps 1.2 times that.
HISTORY_POLICY = TruncationPolicy.tokens(10_000).scaled(HISTORY_BUDGET_FACTOR)


def _cases() -> list[Any]:
    if not CONF.is_dir():
        return [pytest.param(None, id="no-conformance", marks=pytest.mark.skip("no shared dir"))]
    params = []
    for group in GROUPS:
        for path in sorted((CONF / "cases" / group).glob("*.json")):
            case = json.loads(path.read_text())
            if case.get("binary") != "legacy":
                continue
            params.append(pytest.param(f"{group}/{path.name}", id=f"{group}/{path.stem}"))
    return params


def _harness() -> tuple[Any, Any]:
    if str(CONF) not in sys.path:
        sys.path.insert(0, str(CONF))
    return importlib.import_module("harness"), importlib.import_module("compare")


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


@pytest.mark.parametrize("rel", _cases())
async def test_golden(rel: str, tmp_path: Path) -> None:
    harness, compare = _harness()
    case = json.loads((CONF / "cases" / rel).read_text())
    golden = json.loads((CONF / "goldens" / rel).read_text())
    ws = tmp_path.resolve() / "ws"
    ws.mkdir()
    harness.materialize_files(str(ws), case.get("files") or {})
    for cmd in case.get("setup") or []:
        subprocess.run(cmd, shell=True, cwd=ws, check=True, capture_output=True)
    turn = TurnContext(cwd=ws)
    services = SessionServices()
    outputs: dict[str, dict[str, str]] = {}
    for calls in harness._subst(case["turns"], str(ws)):
        texts = await asyncio.gather(*(_call(c, turn, services) for c in calls))
        for call, text in zip(calls, texts, strict=True):
            outputs[call["call_id"]] = {"output": text}
    with warnings.catch_warnings():
        # The harness reads files without closing them; that is its business, not ours.
        warnings.simplefilter("ignore", ResourceWarning)
        workspace = harness.snapshot_tree(str(ws))
    candidate = {"outputs": outputs, "workspace": workspace}
    problems = compare.compare_case(golden, candidate, ws=str(ws))
    assert problems == []
