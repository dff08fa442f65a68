"""Which sandbox mechanism works on this machine, probed once per process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_magics.tools.sandbox import SandboxSpec

if TYPE_CHECKING:
    from agent_magics.tools.context import TurnContext


def platform_sandbox(turn: TurnContext) -> SandboxSpec | None:
    """The sandbox for a confined first attempt, or ``None`` when no mechanism works.

    ``None`` makes the orchestrator fail closed: the command runs only after a person
    approves it (and never under the ``never`` policy).
    """
    return None
