"""A session's settings held within a teacher's policy, and the sentences that say so.

Settings a person chose (a cell's ``-a``/``-s``, ``%config``, ``AGENT_MAGICS_*``, a config
file, ``-c``) that are looser than the policy allows are refused, naming the policy's
source and limits: loosening silently would hide from the student why the agent asks;
tightening is always fine. Settings nobody chose (the defaults) are brought down to the
policy's limits without a word.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_magics.errors import UserError
from agent_magics.protocol.approval import SandboxMode
from agent_magics.teaching.policy import APPROVAL_ORDER, SANDBOX_ORDER, CoursePolicy

if TYPE_CHECKING:
    from agent_magics.config import SessionConfig


class PolicyRefused(UserError):
    """The teacher's policy does not let this turn start; the message says why."""


def _looser(value: object, limit: object, order: tuple[object, ...]) -> bool:
    return limit is not None and order.index(value) > order.index(limit)


def off_reason(policy: CoursePolicy) -> str | None:
    """Why the agent is off under ``policy``, in one sentence, or None when it is on."""
    if policy.enabled:
        return None
    if policy.problems:
        first = policy.problems[0]
        return f"{first[0].upper()}{first[1:]}, so the agent is off until it is fixed."
    return f"The teacher's policy ({policy.where('enabled')}) turns the agent off here."


def bind(
    policy: CoursePolicy,
    config: SessionConfig,
    asks: str = "these settings ask",
    cell: frozenset[str] = frozenset(),
) -> SessionConfig:
    """``config`` within ``policy``: raises :class:`PolicyRefused` when the agent is off or
    when a setting someone chose is looser than the policy allows (``asks`` names who
    chose it in the sentence), or "this cell asks" when the cell's own options (the fields
    in ``cell``) chose every one; defaults are lowered to the limits."""
    if (reason := off_reason(policy)) is not None:
        raise PolicyRefused(reason)
    chosen = config.model_fields_set
    approval, sandbox = policy.max_approval_policy, policy.max_sandbox
    loose_a = _looser(config.approval_policy, approval, APPROVAL_ORDER)
    loose_s = _looser(config.sandbox_mode, sandbox, SANDBOX_ORDER)
    asked = {}
    if loose_a and "approval_policy" in chosen:
        asked["approval_policy"] = f"-a {config.approval_policy.value}"
    if loose_s and "sandbox_mode" in chosen:
        asked["sandbox_mode"] = f"-s {config.sandbox_mode.value}"
    if asked:
        if cell.issuperset(asked):
            asks = "this cell asks"
        raise PolicyRefused(
            f"The teacher's policy ({policy.where('max_approval_policy', 'max_sandbox')}) "
            f"allows {limits_text(policy)}; {asks} for {' '.join(asked.values())}."
        )
    lowered: dict[str, object] = {}
    if loose_a:
        lowered["approval_policy"] = approval
    if loose_s:
        lowered["sandbox_mode"] = sandbox
    if (limit := sandbox_limit(policy)) is not None:
        lowered["sandbox_limit"] = limit
    return config.model_copy(update=lowered) if lowered else config


def sandbox_limit(policy: CoursePolicy) -> str | None:
    """The words that refuse a call more access than the policy's sandbox gives (an
    escalation, a retry without the sandbox), or None when the policy allows full access.
    The session hands them to every command and patch, its helpers' included."""
    if policy.max_sandbox in (None, SandboxMode.DANGER_FULL_ACCESS):
        return None
    where = policy.where("max_sandbox")
    return f"The teacher's policy ({where}) allows sandbox up to {policy.max_sandbox.value}"


def limits_text(policy: CoursePolicy) -> str:
    """ "approval up to on-request and sandbox up to workspace-write" (the limits set)."""
    parts = []
    if policy.max_approval_policy is not None:
        parts.append(f"approval up to {policy.max_approval_policy.value}")
    if policy.max_sandbox is not None:
        parts.append(f"sandbox up to {policy.max_sandbox.value}")
    return " and ".join(parts) or "any approval policy and sandbox"


def summary(policy: CoursePolicy) -> str | None:
    """The policy in one short line for ``%agent status`` and a transcript's header, or
    None when no policy takes anything away."""
    if not policy.in_force:
        return None
    if (reason := off_reason(policy)) is not None:
        return reason
    parts = []
    if policy.max_approval_policy is not None or policy.max_sandbox is not None:
        parts.append(limits_text(policy))
    if not policy.run_python:
        parts.append("no run_python")
    if policy.allowed_tools is not None:
        parts.append(f"only {', '.join(policy.allowed_tools) or 'no tools'}")
    if policy.denied_tools:
        parts.append(f"no {', '.join(policy.denied_tools)}")
    if policy.solution_cells != "edit":
        parts.append(f"solution cells {policy.solution_cells}")
    sources = dict.fromkeys(policy.origins.values())
    return f"Teacher's policy ({' and '.join(sources)}): {'; '.join(parts)}."
