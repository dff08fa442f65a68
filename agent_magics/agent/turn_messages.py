"""The context messages a turn puts before its prompt: the project's instructions and the
environment at a conversation's start, and what changed in the environment since the
model was last told, read back from the conversation itself (so it stays right after a
rollback or a resume)."""

from __future__ import annotations

from collections.abc import Sequence

from agent_magics.agent.instructions import (
    environment_fields,
    environment_update,
    environment_xml,
    project_docs,
    told_environment,
)
from agent_magics.protocol.items import AnyItem, Message
from agent_magics.tools.context import TurnContext
from agent_magics.tools.sandbox import python_env


def _fields(turn: TurnContext) -> dict[str, str]:
    return environment_fields(
        turn.cwd,
        str(turn.approval_policy),  # StrEnum: its value (also for an unvalidated copy)
        str(turn.sandbox_mode),
        turn.network_access,
        turn.shell.kind,
        python_env.describe(),
    )


def opening_messages(turn: TurnContext) -> list[AnyItem]:
    """The project's instructions (AGENTS.md), if any, then the environment."""
    docs = project_docs(turn.cwd)
    items: list[AnyItem] = [Message.user(docs)] if docs else []
    items.append(Message.user(environment_xml(_fields(turn))))
    return items


def environment_changes(history: Sequence[AnyItem], turn: TurnContext) -> list[AnyItem]:
    """What changed in the environment since the model was last told (Codex sends it
    before the prompt of a turn whose policy, sandbox or folder differ)."""
    told = told_environment(i.text for i in history if isinstance(i, Message) and i.role == "user")
    update = environment_update(told, _fields(turn))
    return [Message.user(update)] if update else []
