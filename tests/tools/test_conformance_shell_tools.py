"""The Codex goldens of exec_command, write_stdin, shell_command (and the parallel and
error cases that call them), run through the real tool registry and router.

Each case's workspace is built with the conformance harness; the scripted calls of one
turn run together under the runtime's reader/writer lock, ``{{sid:CALL_ID}}`` tokens are
resolved from earlier outputs, and ``compare.compare_case`` must report no difference
for the calls of our shell tools (and for the workspace).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import SessionServices, ShellInfo, TurnContext
from agent_magics.tools.handlers.shell import ShellCommandHandler
from agent_magics.tools.handlers.toolset import build_registry
from agent_magics.tools.handlers.unified_exec import ExecCommandHandler, WriteStdinHandler
from agent_magics.tools.registry import ToolHandler
from agent_magics.tools.router import ToolCall, ToolRouter, tool_call_from_item
from agent_magics.tools.runtime import run_calls
from agent_magics.tools.truncate import TruncationPolicy
from agent_magics.tools.unified_exec import manager_for
from tests.helpers.conformance import (
    assert_schema_in_own_words,
    build_case,
    case_params,
    golden_problems,
    harness,
)
from tests.helpers.sandbox import outside_base

pytestmark = pytest.mark.slow  # real commands per recorded case

OURS = {"exec_command", "write_stdin", "shell_command", "shell"}
GROUPS = ("exec_command", "write_stdin", "shell_command", "parallel", "errors")


def _calls_ours(case: dict[str, Any]) -> bool:
    return any(call["name"] in OURS for turn in case["turns"] for call in turn)


@pytest.fixture
def codex_like_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The environment the harness gives the agent: empty HOME, UTF-8 locale, UTC. The
    home lies outside /tmp: one inside a root the model's commands may write has its
    start-up files skipped, and commands run in no login shell."""
    for key in list(os.environ):
        if key.startswith(("CODEX_", "OPENAI_")) or key in ("TERM", "NO_COLOR", "COLORTERM"):
            monkeypatch.delenv(key)
    base = outside_base()
    if base is None:
        pytest.skip("no writable folder outside /tmp and $TMPDIR for the home")
    home = Path(tempfile.mkdtemp(prefix="codexpeer-home-", dir=base))
    for key, value in {
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
    }.items():
        monkeypatch.setenv(key, value)
    try:
        yield
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _config(case: dict[str, Any]) -> tuple[ToolsConfig, dict[str, Any]]:
    cfg = dict(harness.DEFAULT_CONFIG)
    cfg.update(case.get("config") or {})
    legacy = case.get("binary") == "legacy"
    tools = ToolsConfig(
        shell_type="shell_command" if legacy else "unified_exec",
        apply_patch_tool_type=cfg.get("apply_patch_tool_type"),
        experimental_supported_tools=frozenset(cfg.get("experimental_supported_tools") or ()),
    )
    return tools, cfg


def _with_sids(call: ToolCall, outputs: dict[str, Any]) -> ToolCall:
    if "{{sid:" not in call.raw_input:
        return call
    from agent_magics.tools.context import FunctionPayload

    text = harness.resolve_sid_tokens(call.raw_input, outputs)
    return ToolCall(call.call_id, call.name, FunctionPayload(text))


async def _run(case: dict[str, Any], ws: Path) -> dict[str, Any]:
    tools, cfg = _config(case)
    services = SessionServices()
    router = ToolRouter(build_registry(tools), services)
    turn = TurnContext(
        cwd=ws,
        approval_policy=ApprovalPolicy.NEVER,
        sandbox_mode=SandboxMode.DANGER_FULL_ACCESS,
        truncation=TruncationPolicy.tokens(10_000),
        shell=ShellInfo("/bin/bash", "bash"),
        thread_id=str(uuid.uuid4()),
    )
    outputs: dict[str, Any] = {}
    try:
        for items in harness.build_turns(case, str(ws), cfg):
            seen = {cid: out["output"] for cid, out in outputs.items()}
            calls = [_with_sids(c, seen) for c in map(tool_call_from_item, items) if c]
            jobs = [
                (c.name, router.is_parallel(c), (lambda c=c: router.dispatch(c, turn)))
                for c in calls
            ]
            results = await run_calls(jobs)
            outputs.update(
                {c.call_id: {"output": r.content} for c, r in zip(calls, results, strict=True)}
            )
    finally:
        await manager_for(services).close()
    return outputs


@pytest.fixture
def ws() -> Iterator[Path]:
    """A workspace made as the harness makes it (``<tmp>/codexpeer-XXXXXXXX/ws``): paths
    in outputs have the recorded length, so token counts match."""
    root = Path(os.path.realpath(tempfile.mkdtemp(prefix="codexpeer-")))
    (root / "ws").mkdir()
    yield root / "ws"
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.usefixtures("codex_like_env")
@pytest.mark.parametrize("rel", case_params(GROUPS, _calls_ours))
async def test_golden(ws: Path, rel: str) -> None:
    case, golden = build_case(rel, ws)
    outputs = await _run(case, ws)
    ours = {c["call_id"] for t in case["turns"] for c in t if c["name"] in OURS}
    assert golden_problems(golden, ws, outputs, only=ours) == []


@pytest.mark.parametrize(
    ("handler", "specs"),
    [
        pytest.param(ExecCommandHandler(), "codex_tool_specs.json", id="exec_command"),
        pytest.param(WriteStdinHandler(), "codex_tool_specs.json", id="write_stdin"),
        pytest.param(ShellCommandHandler(), "codex_tool_specs_legacy.json", id="shell_command"),
    ],
)
def test_spec_matches_codex_schema_in_our_own_words(handler: ToolHandler, specs: str) -> None:
    assert_schema_in_own_words(handler, specs)
