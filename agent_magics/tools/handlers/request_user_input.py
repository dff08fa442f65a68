"""``request_user_input``: multiple-choice questions for the person, Plan mode only.

Codex offers this tool in every session but answers it only in its Plan collaboration
mode; in any other mode the call is refused before the arguments are even read. Our
sessions always run in the default mode, so the tool answers with that refusal, worded as
Codex words it.
"""

from __future__ import annotations

from typing import Literal

from agent_magics.errors import RespondToModel
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.spec import FunctionSpec, JsonSchema, ToolSpec, array, obj, string

REQUEST_USER_INPUT_DESCRIPTION = (
    "Ask the person one to three short multiple-choice questions and wait for their "
    "answers. Works only while the session is in Plan mode."
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


def request_user_input_spec(config: ToolsConfig) -> ToolSpec:
    return FunctionSpec(
        "request_user_input", REQUEST_USER_INPUT_DESCRIPTION, _questions_parameters()
    )


DEFAULT_MODE = "Default"


def unavailable_message(mode: str) -> str:
    """The refusal for a collaboration mode that does not allow questions."""
    return f"request_user_input is unavailable in {mode} mode"


class RequestUserInputHandler:
    """Refuses outside Plan mode, which is the only mode our sessions run in."""

    name = "request_user_input"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return request_user_input_spec(config)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        raise RespondToModel(unavailable_message(DEFAULT_MODE))
