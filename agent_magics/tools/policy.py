"""Pure decisions: does this call need a person, may it run at all?

These functions look only at the policy, the sandbox mode and the call, so they are
tested as tables. The orchestrator acts on what they return.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from agent_magics.tools.approval import (
    ApprovalPolicy,
    ApprovalRequirement,
    Forbidden,
    NeedsApproval,
    SandboxMode,
    SandboxPermissions,
    Skip,
)


def exec_approval_requirement(
    policy: ApprovalPolicy,
    sandbox: SandboxMode,
    commands: Sequence[Sequence[str]],
    permissions: SandboxPermissions = SandboxPermissions.USE_DEFAULT,
    justification: str | None = None,
    *,
    complex_parsed: bool = False,
    argv: Sequence[str] | None = None,
    cwd: Path | None = None,
    writable_roots: Sequence[Path] = (),
) -> ApprovalRequirement:
    """Codex's fallback rules for a command split into its sub-commands.

    1. every sub-command known-safe -> run (never for commands split off a
    here-document, ``complex_parsed``); 2. a dangerous one -> forbidden under ``never``,
    else ask; 3. ``never`` / ``on-failure`` -> run (the sandbox protects);
    4. ``untrusted`` -> ask; 5. ``on-request`` -> run under full access, else ask only
    when the model asked for escalated permissions. A ``require_escalated`` request runs
    its first attempt outside the sandbox whatever the decision. ``argv`` is the whole
    command, named in a refusal. Known-safe is judged where the command runs (``cwd``):
    a program, repository or shell startup file inside ``writable_roots`` (where the
    model may have written it) is not known-safe.
    """
    from agent_magics.tools.safety import all_known_safe, is_dangerous_command

    escalate = permissions is not SandboxPermissions.USE_DEFAULT
    bypass = permissions is SandboxPermissions.REQUIRE_ESCALATED
    whole = argv if argv is not None else [w for c in commands for w in c]
    if (
        commands
        and not complex_parsed
        and all_known_safe(commands, argv=whole, cwd=cwd, writable_roots=writable_roots)
    ):
        return Skip(bypass_sandbox=bypass)
    if any(is_dangerous_command(c) for c in commands):
        if policy is ApprovalPolicy.NEVER:
            return Forbidden(f"`{shlex.join(whole)}` rejected: blocked by policy")
        return NeedsApproval(justification, bypass_sandbox=bypass)
    if policy in (ApprovalPolicy.NEVER, ApprovalPolicy.ON_FAILURE):
        return Skip(bypass_sandbox=bypass)
    if policy is ApprovalPolicy.UNTRUSTED:
        return NeedsApproval(justification, bypass_sandbox=bypass)
    if sandbox is SandboxMode.DANGER_FULL_ACCESS:
        return Skip()
    if escalate:
        return NeedsApproval(justification, bypass_sandbox=bypass)
    return Skip()


PATCH_OUTSIDE = "writing outside of the project; rejected by user approval settings"


def patch_approval_requirement(
    policy: ApprovalPolicy, sandbox: SandboxMode, all_writable: bool
) -> ApprovalRequirement:
    """Codex's patch safety: ask under ``untrusted``; run when every touched path is
    writable (or under ``on-failure``); otherwise refuse under ``never``, else ask.

    Patches are applied in-process after a path check against the writable roots, so
    that check is the patch's sandbox on every platform.
    """
    if policy is ApprovalPolicy.UNTRUSTED:
        return NeedsApproval()
    if sandbox is SandboxMode.DANGER_FULL_ACCESS:
        return Skip(bypass_sandbox=True)
    if all_writable or policy is ApprovalPolicy.ON_FAILURE:
        return Skip()
    if policy is ApprovalPolicy.NEVER:
        return Forbidden(f"patch rejected: {PATCH_OUTSIDE}")
    return NeedsApproval()
