"""What a ``%%agent`` cell gives its turn: the settings its options name, which of them
a teacher's policy must know the cell chose, and its prompt (``-f``: with the notebook's
variables filled in). A cell that waits for its turn fails with the sentence
(:func:`failed`); one that does not says it in the cell."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.errors import UserError, for_person

if TYPE_CHECKING:
    from agent_magics.config import SessionConfig
    from agent_magics.jupyter.ui.controller import ConfigSource
    from agent_magics.jupyter.ui.runner import TurnView
    from agent_magics.teaching.guard import PolicyGuard

EMPTY = "the cell is empty; write the prompt below the %%agent line."
SETTINGS_ASK = "the settings (%config, AGENT_MAGICS_*, a config file, -c or a resume) ask"


def failed(message: str) -> Exception:
    """What a cell that waits for its turn raises when the turn cannot start, as when it
    fails (see :meth:`.controller.Controller.wait`)."""
    from agent_magics.jupyter.ui.runner import AgentTurnFailed

    return AgentTurnFailed(message)


def cell_options(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the cell's options name (None: not given)."""
    return {
        "model": args.model,
        "base_url": args.base_url,
        "provider": args.provider,
        "approval_policy": args.approval_policy,
        "sandbox_mode": args.sandbox,
        "web_search": args.web_search,
        "cwd": str(Path(args.cd).expanduser().resolve()) if args.cd else None,
    }


def cell_keys(args: argparse.Namespace) -> frozenset[str]:
    """The approval and sandbox fields the cell's own options set: a refusal under a
    teacher's policy then says that the cell asked."""
    keys = {"approval_policy": args.approval_policy, "sandbox_mode": args.sandbox}
    return frozenset(k for k, v in keys.items() if v)


def cell_prompt(args: argparse.Namespace, cell: str, namespace: dict[str, Any]) -> str | None:
    """The cell's prompt (``-f``: filled from ``namespace``, the notebook's variables), or
    None when there is none (said in the cell, or raised when the cell waits)."""
    from agent_magics.jupyter.kernel.prompt_fields import fill_prompt

    prompt = cell.strip()
    if not prompt:
        if args._awaited:
            raise failed(EMPTY[0].upper() + EMPTY[1:])
        print(for_person(EMPTY))
        return None
    if not args.format:
        return prompt
    try:
        return fill_prompt(prompt, namespace)
    except UserError as exc:
        if args._awaited:
            raise failed(str(exc)) from None
        print(for_person(exc), file=sys.stderr)
        return None


def bound_settings(
    policy: PolicyGuard, source: ConfigSource, cell: frozenset[str], view: TurnView, answers: str
) -> Callable[[], Awaitable[SessionConfig]]:
    """``source`` held to the teacher's ``policy`` as it reads when the turn starts (a
    turn before it may have rewritten the notebook), its header saying the policy, and
    who ``answers`` its approval questions (``SessionConfig.approver``)."""
    from agent_magics.config import SessionConfig
    from agent_magics.teaching.bounds import summary

    async def settings() -> SessionConfig:
        config = source if isinstance(source, SessionConfig) else await source()
        bound = policy.bind(config, SETTINGS_ASK, cell)
        if (line := summary(policy.seen)) is not None:
            view.note(line)
        return bound.model_copy(update={"approver": answers})

    return settings
