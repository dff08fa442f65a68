"""What the model is told of approvals in a run nobody watches (``exec`` without a
terminal, a notebook run by nbclient or papermill): nobody answers the questions, so the
run's standing answer does (deny every one, or approve every one), and which calls come
to a question at all follows the approval policy and the sandbox, as
:mod:`agent_magics.tools.approval.requirement` decides it. Said in rules the model can
act on: what runs without asking, what is denied (or approved without anyone seeing it).
"""

from __future__ import annotations

from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode

ASK_FOR_ACCESS = (
    "- If a command needs more access than the sandbox gives, ask for it through the\n"
    "  command's approval parameters and say why in one sentence.\n"
)
"""The line of the instructions that tells the model to ask for more access; where the
run denies what it would ask (``untrusted``, ``on-request``), :data:`NO_ASKING` instead."""
NO_ASKING = (
    "- If a command needs more access than the sandbox gives, do not ask for it (it would\n"
    "  be denied): do what you can without it and say in your answer what was left.\n"
)
SANDBOX = {
    SandboxMode.READ_ONLY: "which lets them read files but write none, and cuts the network",
    SandboxMode.WORKSPACE_WRITE: (
        "which lets them write only in the working folder and the temporary folders (never "
        "in .git or .agent_magics), and cuts the network"
    ),
}
FORCE_DELETE = "a command that force-deletes files (rm -f, rm -rf)"
NOTHING_ASKS = "Nothing asks for approval (approval policy never)."
ESCALATION_REJECTED = (
    "Do not ask to run a command outside the sandbox (sandbox_permissions): under this "
    "approval policy such a command is rejected, whoever would answer."
)
OTHER_CALLS = (
    "Any other call that needs approval (an MCP tool that may change data, code run in the "
    "notebook's kernel)"
)


def standing_answer(approves: bool) -> str:
    """What becomes of a call that needs approval, in one sentence."""
    if approves:
        return "the run approves every call that needs approval, without anyone seeing it."
    return "every call that needs approval is denied, and you are told it was rejected."


def headless_rules(policy: ApprovalPolicy, sandbox: SandboxMode, approves: bool) -> list[str]:
    """Which calls run without asking under ``policy`` and ``sandbox``, and what becomes
    of the others when the run denies (or, ``approves``, approves) every question."""
    fate = "approved by the run" if approves else "denied"
    free = sandbox is SandboxMode.DANGER_FULL_ACCESS
    where = "without a sandbox" if free else f"inside the sandbox, {SANDBOX[sandbox]}"
    if policy is ApprovalPolicy.NEVER:
        return never_rules(sandbox)
    rules: list[str] = []
    if policy is ApprovalPolicy.UNTRUSTED:
        rules.append(
            "Commands known only to read (listing, reading, searching files) run without "
            f"asking, {where}; every other command is {fate}"
            + (", still inside the sandbox" if approves and not free else "")
            + ", and so is every edit with apply_patch."
        )
    elif policy is ApprovalPolicy.ON_FAILURE:
        rules.append(f"Commands and edits run without asking, {where}.")
        if not free:
            rules.append(ESCALATION_REJECTED)
            rules.append(
                "When the sandbox blocks a command or an edit, running it again outside the "
                f"sandbox needs approval: it is {fate}."
            )
        rules.append(f"{FORCE_DELETE.capitalize()} is {fate}.")
    else:  # on-request
        rules.append(f"Commands run without asking, {where}.")
        if not free:
            rules.append(
                "A command that asks to run outside the sandbox or for more access "
                f"(sandbox_permissions), or {FORCE_DELETE}, is {fate}."
            )
        else:
            rules.append(f"{FORCE_DELETE.capitalize()} is {fate}.")
        if sandbox is SandboxMode.WORKSPACE_WRITE:
            rules.append(
                "Edits with apply_patch in the folders you may write go in without asking; "
                f"an edit anywhere else is {fate}."
            )
        elif sandbox is SandboxMode.READ_ONLY:
            rules.append(f"Every edit with apply_patch is {fate}: nothing may be written.")
        else:
            rules.append("Edits with apply_patch go in without asking.")
    rules.append(f"{OTHER_CALLS} is {fate}.")
    if not approves:
        rules.append(
            "When a call is denied, go on without it and say in your answer what it left undone."
        )
    return rules


def never_rules(sandbox: SandboxMode) -> list[str]:
    """Under the approval policy ``never`` nothing asks, whoever would answer."""
    if sandbox is SandboxMode.DANGER_FULL_ACCESS:
        return [
            NOTHING_ASKS,
            "Commands run without a sandbox.",
            f"{FORCE_DELETE.capitalize()} is refused.",
        ]
    kernel = "is refused" if sandbox is SandboxMode.READ_ONLY else "runs without asking"
    return [
        NOTHING_ASKS,
        f"Commands run inside the sandbox, {SANDBOX[sandbox]}; what it blocks fails.",
        ESCALATION_REJECTED,
        f"{FORCE_DELETE.capitalize()} is refused, and so is an edit outside the folders "
        "you may write.",
        "MCP tools run without asking, outside the sandbox; code run in the notebook's "
        f"kernel {kernel}.",
    ]


def may_ask_for_access(policy: ApprovalPolicy, approves: bool) -> bool:
    """Whether asking for more access than the sandbox gives can get it: only under
    ``on-request`` (every other policy rejects the request itself, as Codex's handlers
    do) and in a run that approves the question it raises."""
    return approves and policy is ApprovalPolicy.ON_REQUEST
