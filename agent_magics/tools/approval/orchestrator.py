"""The fixed sequence every guarded tool call goes through.

    requirement -> (ask a person, unless remembered) -> sandbox choice -> first attempt
                -> on a sandbox denial: ask to retry without the sandbox, when allowed

A tool hands :func:`run_guarded` its call as a :class:`Guarded`: a runtime of its own
(the shell commands' and patches' in :mod:`agent_magics.tools.runtimes`) or, for a tool
with little to say, a :class:`GuardedCall` value. It answers what ran, under which
sandbox, and whether the sandbox denied it (:class:`Ran`). The requirement is computed
by a pure function (see :mod:`agent_magics.tools.approval.requirement`); this module
only acts on it.
A person's answer arrives through the session's ``Approver``, an async callback the
front end provides.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Generic, Protocol, TypeVar

from agent_magics.errors import RespondToModel, TurnAborted
from agent_magics.events import ApprovalDecided, ApprovalRequested
from agent_magics.protocol.approval import (
    ApprovalPolicy,
    ApprovalRequest,
    ReviewDecision,
    SandboxMode,
    new_ticket,
)
from agent_magics.tools.approval.requirement import (
    LIMIT_ESCALATION,
    LIMIT_NO_SANDBOX,
    LIMIT_RETRY,
    ApprovalRequirement,
    Forbidden,
    NeedsApproval,
    Skip,
)
from agent_magics.tools.context import SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.sandbox import NO_SANDBOX, SandboxSpec
from agent_magics.tools.sandbox.platform import platform_sandbox

T = TypeVar("T")

NEVER_PROMPT = "approval required by policy, but AskForApproval is set to Never"
RETRY_REASON = "command failed; retry without sandbox?"
NO_SANDBOX_RULE = (
    "No sandbox works on this machine, so nothing confines this call: every such call "
    "asks before it runs."
)


def retry_rule(policy: ApprovalPolicy) -> str:
    """Why the second question of a call is asked: the sandbox blocked the first try."""
    return (
        "The sandbox blocked the first attempt; under the approval policy "
        f"{policy.value} you may let it run again without the sandbox."
    )


def _never_denied(_result: object) -> bool:
    return False


def _keep(_result: object) -> None:
    pass


class Guarded(Protocol[T]):
    """What the orchestrator needs of a call: what a person would be shown
    (``request``), what the policy says of it (``requirement``), the answer when the
    person says no (``rejection``), whether a sandbox denial may be retried without the
    sandbox, a tool's own ``confinement`` (or ``None`` for the platform's mechanism),
    and the three steps: ``attempt`` under a sandbox, ``is_sandbox_denial`` of its
    result (asked once per attempt), ``release`` of a result dropped for a retry."""

    @property
    def request(self) -> ApprovalRequest: ...

    @property
    def requirement(self) -> ApprovalRequirement: ...

    @property
    def rejection(self) -> str: ...

    @property
    def can_retry_unsandboxed(self) -> bool: ...

    @property
    def confinement(self) -> SandboxSpec | None: ...

    @property
    def runs_outside_sandbox(self) -> bool: ...

    def attempt(self, sandbox: SandboxSpec, /) -> Awaitable[T]: ...

    def is_sandbox_denial(self, result: T, /) -> bool: ...

    def release(self, result: T, /) -> None: ...


@dataclass(frozen=True)
class GuardedCall(Generic[T]):
    """One tool call as the orchestrator runs it.

    ``request`` is what a person would be shown, ``requirement`` what the policy says
    of it, ``attempt`` the work, run under the sandbox it is given. ``rejection`` is what
    the model is told when the person says no. After an attempt that
    ``is_sandbox_denial`` judges denied by the sandbox, the call is retried without it
    only when ``can_retry_unsandboxed``; the dropped result is handed to ``release``.
    ``confinement`` is a tool's own way of staying inside the writable roots (the
    in-process path check of apply_patch), used instead of the platform's mechanism.
    ``runs_outside_sandbox``: see :class:`Guarded`.
    """

    request: ApprovalRequest
    requirement: ApprovalRequirement
    attempt: Callable[[SandboxSpec], Awaitable[T]]
    rejection: str
    is_sandbox_denial: Callable[[T], bool] = _never_denied
    can_retry_unsandboxed: bool = False
    confinement: SandboxSpec | None = None
    release: Callable[[T], None] = _keep
    runs_outside_sandbox: bool = False


@dataclass(frozen=True)
class Ran(Generic[T]):
    """What the last attempt returned, the sandbox it ran under, and whether that
    sandbox denied it (a denial that could not be retried without the sandbox)."""

    value: T
    sandbox: SandboxSpec
    denied: bool = False


async def run_guarded(inv: ToolInvocation, call: Guarded[T]) -> Ran[T]:
    """Run ``call.attempt`` once (or twice, after a sandbox denial) as the policy says."""
    requirement, request = call.requirement, call.request
    if isinstance(requirement, Forbidden):
        raise RespondToModel(requirement.reason)
    sandbox = sandbox_for(inv.turn, requirement, call.confinement)
    limit = None if call.runs_outside_sandbox else inv.turn.sandbox_limit
    if limit is not None and (sandbox is None or not sandbox.confined):
        template = LIMIT_NO_SANDBOX if sandbox is None else LIMIT_ESCALATION
        raise RespondToModel(template.format(limit=limit))  # before anyone is asked
    approved_by_person = False
    if isinstance(requirement, NeedsApproval) or sandbox is None:
        if inv.turn.approval_policy is ApprovalPolicy.NEVER:
            raise RespondToModel(NEVER_PROMPT)
        unconfined = NO_SANDBOX_RULE if sandbox is None else None  # the person stands in
        reason, rule = None, unconfined
        if isinstance(requirement, NeedsApproval):
            reason, rule = requirement.reason, requirement.rule or unconfined
        asked = replace(request, reason=reason or request.reason, rule=rule)
        await _decide(inv.services, asked, call)
        approved_by_person = True
    if sandbox is None:  # no working mechanism: the person's approval stands in for it
        sandbox = NO_SANDBOX
    result = await call.attempt(sandbox)
    if not (sandbox.confined and call.is_sandbox_denial(result)):
        return Ran(result, sandbox)
    if not call.can_retry_unsandboxed:
        return Ran(result, sandbox, denied=True)
    if limit is not None:
        call.release(result)
        raise RespondToModel(LIMIT_RETRY.format(limit=limit))
    try:
        if not approved_by_person:
            rule = retry_rule(inv.turn.approval_policy)
            retry = replace(request, reason=RETRY_REASON, rule=rule, retry_without_sandbox=True)
            # A patch's retry question always reaches the person, even for files
            # approved for the session; a command's is skipped when remembered.
            await _decide(inv.services, retry, call, use_cache=request.kind != "patch")
    finally:
        call.release(result)
    return Ran(await call.attempt(NO_SANDBOX), NO_SANDBOX)


async def ask(
    services: SessionServices, request: ApprovalRequest, *, use_cache: bool = True
) -> ReviewDecision:
    """Ask a person, unless every key of ``request`` was approved for the session (and
    ``use_cache`` allows skipping the question)."""
    store = services.approvals
    if use_cache and store.all_approved(request.keys):
        services.emit(ApprovalDecided(request.call_id, ReviewDecision.APPROVED_FOR_SESSION, True))
        return ReviewDecision.APPROVED_FOR_SESSION
    request = replace(request, ticket=new_ticket())  # each question its own key
    services.emit(ApprovalRequested(request))
    asked = time.monotonic()
    decision = await services.approver(request)
    waited = time.monotonic() - asked
    services.emit(ApprovalDecided(request.call_id, decision, waited_s=waited))
    if decision is ReviewDecision.APPROVED_FOR_SESSION:
        store.remember(request.keys)
    return decision


async def _decide(
    services: SessionServices,
    request: ApprovalRequest,
    call: Guarded[T],
    *,
    use_cache: bool = True,
) -> None:
    decision = await ask(services, request, use_cache=use_cache)
    if decision is ReviewDecision.ABORT:
        raise TurnAborted(call.rejection)
    if decision is ReviewDecision.DENIED:
        raise RespondToModel(call.rejection)


def sandbox_for(
    turn: TurnContext, requirement: ApprovalRequirement, confinement: SandboxSpec | None = None
) -> SandboxSpec | None:
    """The first attempt's sandbox; ``None`` when one is needed but none works here."""
    if turn.sandbox_mode is SandboxMode.DANGER_FULL_ACCESS:
        return NO_SANDBOX
    if isinstance(requirement, (Skip, NeedsApproval)) and requirement.bypass_sandbox:
        return NO_SANDBOX
    if confinement is not None:
        return confinement
    kept = turn.read_only_paths  # the turn's own read-only files (its notebook)
    return platform_sandbox(turn.cwd, turn.sandbox_mode, turn.network_access, kept)
