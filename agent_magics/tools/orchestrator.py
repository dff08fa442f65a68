"""The fixed sequence every guarded tool call goes through.

    requirement -> (ask a person, unless remembered) -> sandbox choice -> first attempt
                -> on a sandbox denial: ask to retry without the sandbox, when allowed

The requirement is computed by a pure function (see :mod:`agent_magics.tools.policy`);
this module only acts on it. A person's answer arrives through the session's
``Approver``, an async callback the front end provides.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from agent_magics.errors import RespondToModel, TurnAborted
from agent_magics.events import ApprovalDecided, ApprovalRequested
from agent_magics.tools.approval import (
    ApprovalPolicy,
    ApprovalRequest,
    ApprovalRequirement,
    Forbidden,
    NeedsApproval,
    ReviewDecision,
    SandboxMode,
    Skip,
)
from agent_magics.tools.sandbox import NO_SANDBOX, SandboxSpec

if TYPE_CHECKING:
    from agent_magics.tools.context import SessionServices, ToolInvocation

T = TypeVar("T")

NEVER_PROMPT = "approval required by policy, but AskForApproval is set to Never"
RETRY_REASON = "command failed; retry without sandbox?"


class Orchestrator:
    """Runs attempts of one tool call under the session's approvals and sandbox."""

    def __init__(self, services: SessionServices) -> None:
        self.services = services

    async def ask(self, request: ApprovalRequest, *, use_cache: bool = True) -> ReviewDecision:
        """Ask a person, unless every key of ``request`` was approved for the session
        (and ``use_cache`` allows skipping the question)."""
        store = self.services.approvals
        if use_cache and store.all_approved(request.keys):
            self.services.emit(
                ApprovalDecided(request.call_id, ReviewDecision.APPROVED_FOR_SESSION, True)
            )
            return ReviewDecision.APPROVED_FOR_SESSION
        self.services.emit(ApprovalRequested(request))
        decision = await self.services.approver(request)
        self.services.emit(ApprovalDecided(request.call_id, decision))
        if decision is ReviewDecision.APPROVED_FOR_SESSION:
            store.remember(request.keys)
        return decision

    async def run(
        self,
        inv: ToolInvocation,
        request: ApprovalRequest,
        requirement: ApprovalRequirement,
        attempt: Callable[[SandboxSpec], Awaitable[T]],
        *,
        rejection: str,
        is_sandbox_denial: Callable[[T], bool] = lambda _: False,
        can_retry_unsandboxed: bool = False,
        confinement: SandboxSpec | None = None,
    ) -> T:
        """Run ``attempt`` once (or twice, after a sandbox denial) as the policy says.

        ``rejection`` is what the model is told when the person says no.
        """
        policy = inv.turn.approval_policy
        if isinstance(requirement, Forbidden):
            raise RespondToModel(requirement.reason)
        sandbox = self.sandbox_for(inv, requirement, confinement)
        approved_by_person = False
        if isinstance(requirement, NeedsApproval) or sandbox is None:
            if policy is ApprovalPolicy.NEVER:
                raise RespondToModel(NEVER_PROMPT)
            reason = requirement.reason if isinstance(requirement, NeedsApproval) else None
            await self._decide(replace(request, reason=reason or request.reason), rejection)
            approved_by_person = True
        if sandbox is None:  # no working mechanism: the person's approval stands in for it
            sandbox = NO_SANDBOX
        result = await attempt(sandbox)
        if not (sandbox.confined and is_sandbox_denial(result)):
            return result
        if not can_retry_unsandboxed:
            return result
        if not approved_by_person:
            retry = replace(
                request,
                reason=RETRY_REASON,
                retry_without_sandbox=True,
            )
            # A patch's retry question always reaches the person, even for files
            # approved for the session; a command's is skipped when remembered.
            await self._decide(retry, rejection, use_cache=request.kind != "patch")
        return await attempt(NO_SANDBOX)

    async def _decide(
        self, request: ApprovalRequest, rejection: str, *, use_cache: bool = True
    ) -> None:
        decision = await self.ask(request, use_cache=use_cache)
        if decision is ReviewDecision.ABORT:
            raise TurnAborted(rejection)
        if decision is ReviewDecision.DENIED:
            raise RespondToModel(rejection)

    def sandbox_for(
        self,
        inv: ToolInvocation,
        requirement: ApprovalRequirement,
        confinement: SandboxSpec | None = None,
    ) -> SandboxSpec | None:
        """The first attempt's sandbox; ``None`` when one is needed but none works here.

        ``confinement`` is a tool's own way of staying inside the writable roots (the
        in-process path check of apply_patch); otherwise the platform's mechanism."""
        if inv.turn.sandbox_mode is SandboxMode.DANGER_FULL_ACCESS:
            return NO_SANDBOX
        if isinstance(requirement, (Skip, NeedsApproval)) and requirement.bypass_sandbox:
            return NO_SANDBOX
        if confinement is not None:
            return confinement
        from agent_magics.tools.sandbox.platform import platform_sandbox

        return platform_sandbox(inv.turn)
