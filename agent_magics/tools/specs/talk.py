"""The specs of the tools that talk to the person: ``update_plan``, ``request_user_input``."""

from __future__ import annotations

from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.spec import FunctionSpec, JsonSchema, ToolSpec, array, obj, string

STATUSES = ("pending", "in_progress", "completed")

PLAN_DESCRIPTION = """\
Record or revise your working plan for the task.
Send the whole list of steps each time, every step with its status, plus an optional note \
on what changed. Keep no more than one step in_progress at any moment.
"""

REQUEST_USER_INPUT_DESCRIPTION = (
    "Ask the person one to three short multiple-choice questions and wait for their "
    "answers. Works only while the session is in Plan mode."
)


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


def _questions_parameters() -> JsonSchema:
    option = obj(
        {
            "label": string("The choice as the person sees it, a few words."),
            "description": string("One sentence on what picking this choice implies."),
        },
        ["label", "description"],
    )
    question = obj(
        {
            "id": string("A stable snake_case key the answer is reported under."),
            "header": string("A very short title for the question (at most 12 characters)."),
            "question": string("The question itself, in one sentence."),
            "options": array(
                option,
                "Two or three choices that exclude each other, the one you recommend first "
                'with "(Recommended)" after its label. Leave out any "Other" choice: one is '
                "added for free-form answers.",
            ),
        },
        ["id", "header", "question", "options"],
    )
    return obj(
        {"questions": array(question, "The questions, ideally one and never more than three.")},
        ["questions"],
    )


def update_plan_spec(config: ToolsConfig) -> ToolSpec:
    return FunctionSpec("update_plan", PLAN_DESCRIPTION, _plan_parameters())


def request_user_input_spec(config: ToolsConfig) -> ToolSpec:
    return FunctionSpec(
        "request_user_input", REQUEST_USER_INPUT_DESCRIPTION, _questions_parameters()
    )
