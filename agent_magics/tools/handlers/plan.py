"""``update_plan``: the model records its checklist; we show it and answer ``Plan updated``.

Arguments are decoded strictly (unknown keys are refused at both levels and the status
must be one of three words), exactly as Codex does. The "only one step in progress" rule
is advice in the description, not something we check.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent_magics.errors import Fatal
from agent_magics.events import PlanStep, PlanUpdated
from agent_magics.tools.args import decode_args
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import FunctionPayload, ToolInvocation, ToolOutput
from agent_magics.tools.spec import FunctionSpec, JsonSchema, ToolSpec, array, obj, string

STATUSES = ("pending", "in_progress", "completed")


PLAN_DESCRIPTION = """\
Record or revise your working plan for the task.
Send the whole list of steps each time, every step with its status, plus an optional note \
on what changed. Keep no more than one step in_progress at any moment.
"""


def _plan_parameters() -> JsonSchema:
    status = string("pending, in_progress or completed.")
    status["enum"] = list(STATUSES)
    item = obj({"step": string("What this step does."), "status": status}, ["step", "status"])
    return obj(
        {
            "explanation": string("Why the plan changed (optional)."),
            "plan": array(item, "Every step of the plan, in order."),
        },
        ["plan"],
    )


def update_plan_spec(config: ToolsConfig) -> ToolSpec:
    return FunctionSpec("update_plan", PLAN_DESCRIPTION, _plan_parameters())


PLAN_UPDATED = "Plan updated"


class PlanItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: str
    status: Literal["pending", "in_progress", "completed"]


class UpdatePlanArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    explanation: str | None = None
    plan: list[PlanItem]


class UpdatePlanHandler:
    """Takes the model's plan, reports it as a :class:`PlanUpdated` event."""

    name = "update_plan"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return update_plan_spec(config)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        if not isinstance(inv.payload, FunctionPayload):
            raise Fatal(f"tool {self.name} invoked with incompatible payload")
        args = decode_args(UpdatePlanArgs, inv.payload.arguments)
        steps = [PlanStep(item.step, item.status) for item in args.plan]
        inv.emit(PlanUpdated(inv.call_id, args.explanation, steps))
        return ToolOutput(PLAN_UPDATED)
