"""Why a call needs a person: pure decisions on the policy, the sandbox mode and the call.

One rule per kind of guarded call -- a command (judged by its sub-commands), a patch, an
MCP tool, code run in the kernel's own process -- and, for each, whether a person may be
asked to retry it outside the sandbox after a denial. They look only at their arguments,
so they are tested as tables; the orchestrator acts on what they return.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode, SandboxPermissions
from agent_magics.tools.command_safety.rules import (
    all_known_safe,
    exec_policy_commands,
    is_dangerous_command,
    untrusted_by_place,
)

if TYPE_CHECKING:
    from agent_magics.mcp.config import ApprovalMode


@dataclass(frozen=True)
class Skip:
    """Run without asking."""

    bypass_sandbox: bool = False


@dataclass(frozen=True)
class NeedsApproval:
    """Ask a person first; ``reason`` is shown with the question, ``rule`` says which
    rule of the policy asks, in the person's words (words only: not part of what the
    requirement decides, so two requirements that decide alike compare equal)."""

    reason: str | None = None
    bypass_sandbox: bool = False
    rule: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Forbidden:
    """Do not run; ``reason`` goes back to the model."""

    reason: str


ApprovalRequirement = Skip | NeedsApproval | Forbidden


LIMIT_ESCALATION = "{limit}, so no command or patch runs outside the sandbox here: not this one."
LIMIT_RETRY = (
    "{limit}, so no command or patch runs outside the sandbox here: the sandbox blocked "
    "this one, and it cannot run again without it."
)
LIMIT_NO_SANDBOX = (
    "{limit}, and no sandbox works on this machine, so no command or patch can run here."
)
"""What the model reads when a teacher's ``max_sandbox`` (``limit``, the policy's own
words) refuses a call more access than the sandbox gives."""


def files_scope(paths: Sequence[Path]) -> str:
    """What "approve for session" covers for a write keyed by the files it touches: a
    later write passes when every file it touches was approved
    (:class:`~agent_magics.protocol.approval.ApprovalStore`)."""
    names = ", ".join(p.name for p in paths) or "these files"
    return (
        f"later edits that touch only {names} go in without asking; an edit of any other "
        "file asks again, and so does writing outside the sandbox after it blocked one"
    )


RULE_DANGEROUS = (
    "The command force-deletes files (rm -f or rm -rf), which asks under every approval "
    "policy but never."
)
RULE_UNTRUSTED = (
    "The approval policy is untrusted: only commands known to be safe (reading, listing, "
    "searching) run without asking, and this one is not among them."
)
RULE_UNTRUSTED_PLACE = (
    "The approval policy is untrusted: only commands known to be safe run without asking. "
    "This one would count, but {place}, so what it runs may have been written by the "
    "model or shipped with the repository."
)
RULE_UNTRUSTED_HEREDOC = (
    "The approval policy is untrusted: only commands known to be safe run without asking, "
    "and a command fed by a here-document never counts as known to be safe."
)
RULE_ESCALATED = (
    "The command asks to run outside the sandbox, and the approval policy on-request "
    "asks you first."
)
RULE_MORE_PERMISSIONS = (
    "The command asks for more access than the sandbox gives, and the approval policy "
    "on-request asks you first."
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
    escalate = permissions is not SandboxPermissions.USE_DEFAULT
    bypass = permissions is SandboxPermissions.REQUIRE_ESCALATED
    whole = argv if argv is not None else [w for c in commands for w in c]
    if (
        commands
        and not complex_parsed
        and all_known_safe(commands, argv=whole, cwd=cwd, writable_roots=writable_roots)
    ):
        return Skip(bypass_sandbox=bypass)
    # the whole command too: a script's words as bash runs them (``r\\m -f x``)
    if any(is_dangerous_command(c) for c in [*commands, *([argv] if argv else [])]):
        if policy is ApprovalPolicy.NEVER:
            return Forbidden(f"`{shlex.join(whole)}` rejected: blocked by policy")
        return NeedsApproval(justification, bypass_sandbox=bypass, rule=RULE_DANGEROUS)
    if policy in (ApprovalPolicy.NEVER, ApprovalPolicy.ON_FAILURE):
        return Skip(bypass_sandbox=bypass)
    if policy is ApprovalPolicy.UNTRUSTED:
        rule = RULE_UNTRUSTED_HEREDOC if complex_parsed else RULE_UNTRUSTED
        place = untrusted_by_place(commands, cwd=cwd, writable_roots=writable_roots)
        if place is not None and not complex_parsed:
            rule = RULE_UNTRUSTED_PLACE.format(place=place)
        return NeedsApproval(justification, bypass_sandbox=bypass, rule=rule)
    if sandbox is SandboxMode.DANGER_FULL_ACCESS:
        return Skip()
    if escalate:
        rule = RULE_ESCALATED if bypass else RULE_MORE_PERMISSIONS
        return NeedsApproval(justification, bypass_sandbox=bypass, rule=rule)
    return Skip()


def command_approval_requirement(
    policy: ApprovalPolicy,
    sandbox: SandboxMode,
    argv: Sequence[str],
    permissions: SandboxPermissions,
    justification: str | None,
    *,
    cwd: Path | None = None,
    roots: Sequence[Path] = (),
) -> ApprovalRequirement:
    """The requirement of running ``argv`` in ``cwd``: :func:`exec_approval_requirement`
    of its sub-commands (``roots`` are where the model may have written)."""
    commands, complex_parsed = exec_policy_commands(argv)
    return exec_approval_requirement(
        policy,
        sandbox,
        commands,
        permissions,
        justification,
        complex_parsed=complex_parsed,
        argv=argv,
        cwd=cwd,
        writable_roots=roots,
    )


def can_retry_unsandboxed(policy: ApprovalPolicy) -> bool:
    """Whether a person may be asked to re-run a command outside the sandbox."""
    return policy in (ApprovalPolicy.UNTRUSTED, ApprovalPolicy.ON_FAILURE)


PATCH_OUTSIDE = "writing outside of the project; rejected by user approval settings"
RULE_PATCH_UNTRUSTED = "The approval policy is untrusted: every edit of a file asks."
RULE_PATCH_SHADOWS = (
    "The edit writes a file that Python would import in place of a module of the same name."
)
RULE_PATCH_OUTSIDE = (
    "The edit writes outside the folders this session may write to (the sandbox's writable roots)."
)


def patch_approval_requirement(
    policy: ApprovalPolicy,
    sandbox: SandboxMode,
    all_writable: bool,
    shadows: str | None = None,
    limit: str | None = None,
) -> ApprovalRequirement:
    """Codex's patch safety: ask under ``untrusted``; run when every touched path is
    writable (or under ``on-failure``); otherwise refuse under ``never``, else ask.

    ``limit``: a teacher's limit on the sandbox (its words). A patch that would write
    outside the writable roots could run only without its confinement, so it is refused
    before anyone is asked.

    ``shadows``: why the patch would write a file that shadows a module Python imports
    (see :mod:`agent_magics.tools.approval.shadowing`). Such a write is one outside the writable
    roots under every policy but ``on-failure`` too: refused under ``never`` with that
    sentence, asked about with it shown otherwise (``on-failure`` included, since a
    retry question would not say why).

    Patches are applied in-process after a path check against the writable roots, so
    that check is the patch's sandbox on every platform.
    """
    if limit is not None and (not all_writable or shadows is not None):
        return Forbidden(LIMIT_ESCALATION.format(limit=limit))
    if policy is ApprovalPolicy.UNTRUSTED:
        return NeedsApproval(shadows, rule=RULE_PATCH_UNTRUSTED)
    if sandbox is SandboxMode.DANGER_FULL_ACCESS:
        return Skip(bypass_sandbox=True)
    if shadows is not None:
        if policy is ApprovalPolicy.NEVER:
            return Forbidden(f"patch rejected: {shadows}; give the file another name")
        return NeedsApproval(shadows, rule=RULE_PATCH_SHADOWS)
    if all_writable or policy is ApprovalPolicy.ON_FAILURE:
        return Skip()
    if policy is ApprovalPolicy.NEVER:
        return Forbidden(f"patch rejected: {PATCH_OUTSIDE}")
    return NeedsApproval(rule=RULE_PATCH_OUTSIDE)


def patch_can_retry_unsandboxed(policy: ApprovalPolicy) -> bool:
    """Whether a person may be asked to apply a patch the path check refused without it."""
    return policy is not ApprovalPolicy.NEVER


MCP_DESTRUCTIVE = "The tool says it may change or delete data."
MCP_UNKNOWN_EFFECTS = "The tool does not say that it only reads and stays on this machine."
MCP_NOT_READ_ONLY = "The tool does not say that it only reads."
MCP_ALWAYS_ASK = "This server's tools always ask before they run."
RULE_MCP = "An MCP tool runs on its own server, which the sandbox does not confine."


def _hint(annotations: Mapping[str, Any] | None, name: str) -> bool | None:
    value = (annotations or {}).get(name)
    return value if isinstance(value, bool) else None


def mcp_approval_requirement(
    annotations: Mapping[str, Any] | None,
    mode: ApprovalMode,
    approval_policy: ApprovalPolicy,
    sandbox_mode: SandboxMode,
) -> Skip | NeedsApproval:
    """Whether one call of an MCP tool with these ``annotations`` (camelCase wire keys,
    e.g. ``readOnlyHint``) needs a person; the server's ``default_tools_approval_mode``
    picks the rule:

    * ``auto`` (Codex's rule): a tool that says it is destructive asks; one that says it
      is read-only runs; any other asks unless it says it is neither destructive nor
      open-world. A hint the tool leaves out counts as ``true``.
    * ``prompt``: every call asks (and "approve for session" is not offered).
    * ``writes``: every call asks unless the tool says it is read-only.
    * ``approve``: no call asks.

    With the approval policy ``never`` nobody can be asked, so every call runs. MCP
    servers run outside the sandbox whatever ``sandbox_mode`` is, so the result always
    bypasses it and the person's answer (or the rule above) is the only guard."""
    run = Skip(bypass_sandbox=True)
    if approval_policy is ApprovalPolicy.NEVER or mode == "approve":
        return run
    if mode == "prompt":
        return _mcp_asks(MCP_ALWAYS_ASK)
    read_only = _hint(annotations, "readOnlyHint") is True
    if mode == "writes":
        return run if read_only else _mcp_asks(MCP_NOT_READ_ONLY)
    destructive = _hint(annotations, "destructiveHint")
    if destructive is True:
        return _mcp_asks(MCP_DESTRUCTIVE)
    if read_only:
        return run
    open_world = _hint(annotations, "openWorldHint")
    if destructive is False and open_world is False:
        return run
    return _mcp_asks(MCP_UNKNOWN_EFFECTS)


def _mcp_asks(why: str) -> NeedsApproval:
    """An MCP call that asks: the sandbox has no say over the server, so the rule is
    what the tool says of itself (``why``)."""
    return NeedsApproval(why, bypass_sandbox=True, rule=f"{RULE_MCP} {why}")


PYTHON_IN_KERNEL = "Runs in your kernel, outside the sandbox: it can change your variables."
FUNCTION_ASKS = "This runs your Python function in the kernel, outside the sandbox."
KERNEL_READ_ONLY = (
    "Not run: the sandbox is read-only, so code in the user's kernel runs only once the "
    "user approves it, and the approval policy is never, so nobody could be asked."
)


def kernel_rule(policy: ApprovalPolicy, function: bool) -> str:
    """Why a kernel call asks, in the person's words. Where the code runs (outside the
    sandbox) is said once, under the code on the card, not here again."""
    if function:
        return (
            f"The approval policy is {policy.value}, and your function was offered to "
            "the agent to ask before each call (offer it with --auto to let it run "
            "without asking)."
        )
    return (
        f"The approval policy is {policy.value}: code the model writes runs in your "
        "kernel only once you approve it, as it can change your variables and files."
    )


def kernel_approval_requirement(
    policy: ApprovalPolicy,
    sandbox: SandboxMode,
    reason: str,
    *,
    auto: bool = False,
    function: bool = False,
) -> Skip | NeedsApproval | Forbidden:
    """Whether code that runs in the kernel's own process needs a person: run_python's
    code, or a person's function offered as a tool (``auto``: registered with
    ``approval="auto"``). No sandbox confines that process, so a run always bypasses the
    sandbox and the person's yes is the only guard:

    1. an ``auto`` function runs: registering it so was the person's yes to every call;
    2. under ``read-only`` nothing else runs without a person's yes: ``never`` is
       forbidden (:data:`KERNEL_READ_ONLY` goes to the model), every other policy asks;
    3. otherwise ``never`` runs and every other policy asks (``on-failure`` has no
       sandbox failure to wait for). ``reason`` is shown with the question.
    """
    if auto:
        return Skip(bypass_sandbox=True)
    if sandbox is SandboxMode.READ_ONLY and policy is ApprovalPolicy.NEVER:
        return Forbidden(KERNEL_READ_ONLY)
    if policy is ApprovalPolicy.NEVER:
        return Skip(bypass_sandbox=True)
    return NeedsApproval(reason, bypass_sandbox=True, rule=kernel_rule(policy, function))


def kernel_session_scope(sandbox: SandboxMode, what: str) -> str:
    """What :func:`kernel_session_key` makes "approve for session" cover, in words;
    ``what`` names the calls (``run_python``, a function's name)."""
    if sandbox is SandboxMode.READ_ONLY:
        return (
            f"this very {what} call (the same code or arguments) runs again without "
            "asking; any other asks, as the sandbox is read-only"
        )
    return f"every later {what} call of this session runs without asking, whatever it runs"


def kernel_session_key(sandbox: SandboxMode, tool: Sequence[str], exact: str) -> list[Any]:
    """What "approve for session" remembers for a kernel call: ``tool`` (run_python's
    key, or a function's) as a whole, except under ``read-only``, where only this very
    call -- ``exact``, the same code or the same arguments -- may run again unasked, as
    Codex remembers one command; code differs from call to call, so a yes to one piece
    of it is no yes to the next. The read-only keys never match the others, so a yes
    given under another sandbox does not carry over into ``read-only``."""
    if sandbox is SandboxMode.READ_ONLY:
        return [[*tool, sandbox.value, exact]]
    return [list(tool)]
