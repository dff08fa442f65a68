"""The Codex goldens of update_plan, view_image and request_user_input, run through our handlers.

Each case's workspace is built with the conformance harness, its scripted calls are sent
through a :class:`ToolRouter` holding our three handlers (calls of one turn concurrently),
and ``compare.compare_case`` must report no difference.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import SessionServices, TurnContext
from agent_magics.tools.handlers.plan import UpdatePlanHandler
from agent_magics.tools.handlers.request_user_input import RequestUserInputHandler
from agent_magics.tools.handlers.view_image import ViewImageHandler
from agent_magics.tools.registry import ToolHandler, ToolRegistry
from agent_magics.tools.router import ToolRouter, tool_call_from_item
from tests.helpers.conformance import (
    assert_schema_in_own_words,
    build_case,
    case_params,
    golden_problems,
    harness,
)

HANDLERS: list[ToolHandler] = [UpdatePlanHandler(), RequestUserInputHandler(), ViewImageHandler()]

# (case, call ids whose outputs we produce; None = all of them, workspace compared too)
PARTIAL = {"parallel/mixed_tools.json": ["c2", "c3", "c4"]}


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    for handler in HANDLERS:
        registry.register(handler.name, handler, handler.spec(ToolsConfig()))
    return registry


async def _run(case: dict[str, Any], ws: Path, only: list[str] | None) -> dict[str, Any]:
    router = ToolRouter(_registry(), SessionServices())
    turn = TurnContext(cwd=ws)
    outputs: dict[str, Any] = {}
    for items in harness.build_turns(case, str(ws), harness.DEFAULT_CONFIG):
        calls = [c for c in map(tool_call_from_item, items) if c is not None]
        calls = [c for c in calls if only is None or c.call_id in only]
        results = await asyncio.gather(*(router.dispatch(c, turn) for c in calls))
        outputs.update(
            {c.call_id: {"output": r.content} for c, r in zip(calls, results, strict=True)}
        )
    return outputs


@pytest.mark.parametrize(
    "rel",
    case_params(
        ("update_plan", "view_image"),
        extra=["errors/request_user_input_default_mode.json", *PARTIAL],
    ),
)
async def test_golden(tmp_path: Path, rel: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    case, golden = build_case(rel, ws)
    only = PARTIAL.get(rel)
    outputs = await _run(case, ws, only)
    assert golden_problems(golden, ws, outputs, only=only, workspace=only is None) == []


@pytest.mark.parametrize("handler", [pytest.param(h, id=h.name) for h in HANDLERS])
def test_spec_matches_codex_schema_in_our_own_words(handler: ToolHandler) -> None:
    assert_schema_in_own_words(handler, "codex_tool_specs.json")
