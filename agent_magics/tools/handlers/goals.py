"""``get_goal``, ``create_goal``, ``update_goal``: a goal the model pursues across turns.

Codex 0.171.0 offers these by default, after the sub-agent tools. Answers are Codex's:
the goal as JSON (see :mod:`agent_magics.tools.goal_state`), its refusals word for word,
and argument errors in serde's words without the ``failed to parse function arguments``
prefix other tools carry. Unknown argument keys are ignored, as Codex ignores them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agent_magics.errors import ArgumentError, Fatal, RespondToModel
from agent_magics.tools.args import PREFIX, decode_args
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import FunctionPayload, ToolInvocation, ToolOutput
from agent_magics.tools.goal_state import (
    COMPLETION_BUDGET_REPORT,
    MAX_OBJECTIVE_CHARS,
    Goal,
    GoalState,
    goal_state,
    shown_goal,
)
from agent_magics.tools.spec import FunctionSpec, JsonSchema, ToolSpec

GET_DESCRIPTION = (
    "Read this thread's goal: its objective, status, token budget, the tokens and "
    "seconds spent on it so far, and how many budgeted tokens are left."
)
CREATE_DESCRIPTION = (
    "Start a goal, but only when the person (or the system or developer instructions) "
    "asks for one in so many words; an ordinary task is not a goal.\n"
    "Give token_budget only when a budget was asked for. Refused while an unfinished "
    "goal exists; change a goal's status with update_goal instead."
)
UPDATE_DESCRIPTION = (
    "Change the status of the current goal.\n"
    "`complete`: the objective is really achieved and nothing required is left; not "
    "because the budget is nearly spent or because you are stopping. When a budgeted "
    "goal is complete, tell the person the final token usage from the answer.\n"
    "`paused`: only when the person explicitly asks to pause it, never on your own; ask "
    "when in doubt. A later resume cancels that request. Report the new status and stop "
    "working on the goal. A budget limit outranks a pause.\n"
    "`blocked`: only after the same obstacle has stopped you for at least three goal "
    "turns in a row (the first turn and any automatic continuations count), and you "
    "cannot go on without the person or a change outside. Hard, slow or uncertain work "
    "is not blocked. Once that holds, set the status instead of saying you are still "
    "blocked. A goal resumed after being blocked starts a new count of three.\n"
    "Resuming a goal and the budget and usage limits are set by the person or the "
    "system, never with this tool."
)
OBJECTIVE_PARAM = (
    "Required. What to achieve. Starts a new active goal when there is none, or takes "
    "the place of a goal that is complete."
)
BUDGET_PARAM = "A token budget above zero for this goal; leave it out unless one was asked for."
STATUS_PARAM = (
    "Required. `complete` once the objective is achieved with nothing required left; "
    "`paused` only at the person's explicit request; `blocked` only after the same "
    "obstacle has held for three goal turns in a row and you are stuck (after a resume, "
    "the count starts again)."
)

NO_GOAL = "cannot update goal because this thread has no goal"
UNFINISHED = (
    "cannot create a new goal because this thread has an unfinished goal; "
    "complete the existing goal first"
)
EMPTY_OBJECTIVE = "goal objective must not be empty"
LONG_OBJECTIVE = f"goal objective must be at most {MAX_OBJECTIVE_CHARS} characters"
BAD_BUDGET = "goal budgets must be positive when provided"
MODEL_SETTABLE = ("complete", "blocked", "paused")
NOT_SETTABLE = (
    "update_goal can only mark the existing goal complete, blocked, or paused at the "
    "user's explicit request; resume, budget-limited, and usage-limited status changes "
    "are controlled by the user or system"
)


def _parameters(properties: dict[str, JsonSchema], required: list[str]) -> JsonSchema:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _status_schema() -> JsonSchema:
    return {"type": "string", "description": STATUS_PARAM, "enum": list(MODEL_SETTABLE)}


class CreateGoalArgs(BaseModel):
    model_config = ConfigDict(extra="ignore")

    objective: str
    token_budget: int | None = None


class UpdateGoalArgs(BaseModel):
    model_config = ConfigDict(extra="ignore")

    status: Literal["active", "paused", "blocked", "usageLimited", "budgetLimited", "complete"]


def _decode(model: type[Any], inv: ToolInvocation) -> Any:
    if not isinstance(inv.payload, FunctionPayload):
        raise Fatal(f"tool {inv.tool_name} invoked with incompatible payload")
    try:
        return decode_args(model, inv.payload.arguments)
    except ArgumentError as exc:  # Codex words these without the usual prefix;
        # its token_budget is a signed integer
        text = exc.message.removeprefix(PREFIX)
        raise RespondToModel(text.replace("expected u64", "expected i64")) from None


def _shown(inv: ToolInvocation, state: GoalState) -> None:
    """The call's card shows the goal as it is now (a get_goal card too)."""
    if state.goal is not None:
        inv.emit(shown_goal(state.goal, inv.call_id))


class GetGoalHandler:
    name = "get_goal"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return FunctionSpec(self.name, GET_DESCRIPTION, _parameters({}, []))

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        if not isinstance(inv.payload, FunctionPayload):
            raise Fatal(f"tool {self.name} invoked with incompatible payload")
        state = goal_state(inv.services)
        _shown(inv, state)
        return ToolOutput(state.answer())


class CreateGoalHandler:
    name = "create_goal"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def spec(self, config: ToolsConfig) -> ToolSpec:
        properties: dict[str, JsonSchema] = {
            "objective": {"type": "string", "description": OBJECTIVE_PARAM},
            "token_budget": {"type": "integer", "description": BUDGET_PARAM},
        }
        return FunctionSpec(self.name, CREATE_DESCRIPTION, _parameters(properties, ["objective"]))

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args: CreateGoalArgs = _decode(CreateGoalArgs, inv)
        objective = args.objective.strip()
        if not objective:
            raise RespondToModel(EMPTY_OBJECTIVE)
        if len(objective) > MAX_OBJECTIVE_CHARS:
            raise RespondToModel(LONG_OBJECTIVE)
        if args.token_budget is not None and args.token_budget <= 0:
            raise RespondToModel(BAD_BUDGET)
        state = goal_state(inv.services)
        if state.goal is not None and state.goal.status != "complete":
            raise RespondToModel(UNFINISHED)
        state.start(
            Goal(inv.turn.thread_id, objective, token_budget=args.token_budget), inv.call_id
        )
        _shown(inv, state)
        return ToolOutput(state.answer())


class UpdateGoalHandler:
    name = "update_goal"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def spec(self, config: ToolsConfig) -> ToolSpec:
        properties = {"status": _status_schema()}
        return FunctionSpec(self.name, UPDATE_DESCRIPTION, _parameters(properties, ["status"]))

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args: UpdateGoalArgs = _decode(UpdateGoalArgs, inv)
        if args.status not in MODEL_SETTABLE:
            raise RespondToModel(NOT_SETTABLE)
        state = goal_state(inv.services)
        if state.goal is None:
            raise RespondToModel(NO_GOAL)
        state.set_status(args.status)
        budgeted = args.status == "complete" and state.goal.token_budget is not None
        _shown(inv, state)
        return ToolOutput(state.answer(COMPLETION_BUDGET_REPORT if budgeted else None))


GOAL_HANDLERS = (GetGoalHandler, CreateGoalHandler, UpdateGoalHandler)
"""In the order Codex offers them."""
