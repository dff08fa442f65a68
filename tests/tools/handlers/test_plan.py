"""update_plan: strict argument decoding, the fixed answer, and the PlanUpdated event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_magics.errors import ArgumentError
from agent_magics.events import Event, PlanStep, PlanUpdated
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import (
    FunctionPayload,
    SessionServices,
    ToolInvocation,
    TurnContext,
)
from agent_magics.tools.handlers.plan import UpdatePlanHandler
from agent_magics.tools.registry import ToolHandler

PREFIX = "failed to parse function arguments: "
THREE = [
    {"step": "a", "status": "completed"},
    {"step": "b", "status": "in_progress"},
    {"step": "c", "status": "pending"},
]


def _invocation(tmp_path: Path, raw: str, events: list[Event]) -> ToolInvocation:
    return ToolInvocation(
        "call-1",
        "update_plan",
        FunctionPayload(raw),
        TurnContext(cwd=tmp_path),
        SessionServices(emit=events.append),
    )


def _at_end(raw: str) -> str:
    return f" at line 1 column {len(raw)}"


@pytest.mark.parametrize(
    ("args", "explanation", "steps"),
    [
        pytest.param({"plan": THREE}, None, THREE, id="three-steps"),
        pytest.param({"plan": []}, None, [], id="empty-plan"),
        pytest.param({"explanation": None, "plan": THREE}, None, THREE, id="null-explanation"),
        pytest.param({"explanation": "because", "plan": THREE}, "because", THREE, id="explained"),
        pytest.param(
            {
                "plan": [
                    {"step": "x", "status": "in_progress"},
                    {"step": "y", "status": "in_progress"},
                ]
            },
            None,
            [{"step": "x", "status": "in_progress"}, {"step": "y", "status": "in_progress"}],
            id="two-in-progress-not-enforced",
        ),
        pytest.param(
            {"plan": [{"status": "pending", "step": "unicode ✓ step"}]},
            None,
            [{"step": "unicode ✓ step", "status": "pending"}],
            id="keys-in-any-order",
        ),
    ],
)
async def test_accepted_plans(
    tmp_path: Path, args: dict[str, Any], explanation: str | None, steps: list[dict[str, str]]
) -> None:
    events: list[Event] = []
    out = await UpdatePlanHandler().handle(_invocation(tmp_path, json.dumps(args), events))
    assert out.content == "Plan updated"
    assert out.success is True
    expected = [PlanStep(s["step"], s["status"]) for s in steps]
    assert events == [PlanUpdated("call-1", explanation, expected)]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            json.dumps({"plan": THREE, "foo": 1}),
            "unknown field `foo`, expected `explanation` or `plan`",
            id="unknown-top-level-field",
        ),
        pytest.param(
            json.dumps({"plan": [{"step": "a", "status": "pending", "note": "x"}]}),
            "unknown field `note`, expected `step` or `status`",
            id="unknown-item-field",
        ),
        pytest.param(
            json.dumps({"plan": [{"step": "a", "status": "done"}]}),
            "unknown variant `done`, expected one of `pending`, `in_progress`, `completed`",
            id="unknown-status",
        ),
        pytest.param(
            json.dumps({"plan": "do things"}),
            'invalid type: string "do things", expected a sequence',
            id="plan-is-a-string",
        ),
        pytest.param(
            json.dumps({"plan": [{"status": "pending"}]}),
            "missing field `step`",
            id="step-missing",
        ),
        pytest.param(
            json.dumps({"plan": [{"step": "a"}]}),
            "missing field `status`",
            id="status-missing",
        ),
        pytest.param(json.dumps({}), "missing field `plan`", id="plan-missing"),
        pytest.param(
            json.dumps({"explanation": 3, "plan": []}),
            "invalid type: integer `3`, expected a string",
            id="explanation-not-a-string",
        ),
        pytest.param(
            json.dumps({"plan": [{"step": 1, "status": "pending"}]}),
            "invalid type: integer `1`, expected a string",
            id="step-not-a-string",
        ),
    ],
)
async def test_rejected_arguments(tmp_path: Path, raw: str, message: str) -> None:
    events: list[Event] = []
    with pytest.raises(ArgumentError) as info:
        await UpdatePlanHandler().handle(_invocation(tmp_path, raw, events))
    assert info.value.message == PREFIX + message + _at_end(raw)
    assert events == []


async def test_malformed_json_is_an_argument_error(tmp_path: Path) -> None:
    with pytest.raises(ArgumentError) as info:
        await UpdatePlanHandler().handle(_invocation(tmp_path, '{"plan": [', []))
    assert info.value.message.startswith(PREFIX)


def test_handler_shape(tmp_path: Path) -> None:
    handler = UpdatePlanHandler()
    assert isinstance(handler, ToolHandler)
    assert handler.name == "update_plan"
    assert handler.payload_kind == "function"
    assert handler.supports_parallel is False
    wire = handler.spec(ToolsConfig()).to_wire()
    assert wire["name"] == "update_plan"
    params = wire["parameters"]
    assert params["required"] == ["plan"]
    item = params["properties"]["plan"]["items"]
    assert item["required"] == ["step", "status"]
    assert item["additionalProperties"] is False
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
