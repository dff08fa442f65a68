"""The Codex goldens of update_plan, view_image and request_user_input, run through our handlers.

Each case's workspace is built with the conformance harness, its scripted calls are sent
through a :class:`ToolRouter` holding our three handlers (calls of one turn concurrently),
and ``compare.compare_case`` must report no difference.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import warnings
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

CONF = Path(__file__).resolve().parents[2] / "shared" / "conformance"

pytestmark = pytest.mark.skipif(not CONF.is_dir(), reason=f"no conformance folder at {CONF}")

if CONF.is_dir():
    sys.path.insert(0, str(CONF))
    import compare  # type: ignore[import-not-found]
    import harness  # type: ignore[import-not-found]

HANDLERS: list[ToolHandler] = [UpdatePlanHandler(), RequestUserInputHandler(), ViewImageHandler()]

# (case, call ids whose outputs we produce; None = all of them, workspace compared too)
PARTIAL = {"parallel/mixed_tools.json": ["c2", "c3", "c4"]}


def _case_ids() -> list[Any]:
    if not CONF.is_dir():
        return []
    rels = [
        f"{g}/{p.name}"
        for g in ("update_plan", "view_image")
        for p in sorted((CONF / "cases" / g).glob("*.json"))
    ]
    rels += ["errors/request_user_input_default_mode.json", *PARTIAL]
    return [pytest.param(rel, id=rel.removesuffix(".json")) for rel in rels]


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


@pytest.mark.parametrize("rel", _case_ids())
async def test_golden(tmp_path: Path, rel: str) -> None:
    case = json.loads((CONF / "cases" / rel).read_text())
    golden = json.loads((CONF / "goldens" / rel).read_text())
    ws = tmp_path / "ws"
    ws.mkdir()
    harness.materialize_files(str(ws), case.get("files") or {})
    for command in case.get("setup") or []:
        subprocess.run(command, shell=True, cwd=ws, check=True)
    only = PARTIAL.get(rel)
    outputs = await _run(case, ws, only)
    candidate: dict[str, Any] = {"outputs": outputs}
    if only is None:
        with warnings.catch_warnings():  # the harness reads files without closing them
            warnings.simplefilter("ignore", ResourceWarning)
            candidate["workspace"] = harness.snapshot_tree(str(ws))
    else:
        golden = {**golden, "outputs": {k: golden["outputs"][k] for k in only}}
    assert compare.compare_case(golden, candidate, ws=str(ws)) == []


def _without_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [_without_descriptions(v) for v in schema]
    return schema


def _descriptions(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        own = [schema["description"]] if isinstance(schema.get("description"), str) else []
        return own + [d for v in schema.values() for d in _descriptions(v)]
    if isinstance(schema, list):
        return [d for v in schema for d in _descriptions(v)]
    return []


@pytest.mark.parametrize("handler", [pytest.param(h, id=h.name) for h in HANDLERS])
def test_spec_matches_codex_schema_in_our_own_words(handler: ToolHandler) -> None:
    codex = json.loads((CONF / "codex_tool_specs.json").read_text())
    [theirs] = [t for t in codex["tools"] if t.get("name") == handler.name]
    ours = handler.spec(ToolsConfig()).to_wire()
    assert _without_descriptions(ours) == _without_descriptions(theirs)
    assert len(_descriptions(ours)) == len(_descriptions(theirs))
    shared = set(_descriptions(ours)) & set(_descriptions(theirs))
    assert not shared, f"descriptions copied from Codex: {shared}"
