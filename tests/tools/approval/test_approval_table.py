"""The approval truth table, end to end: policy x sandbox x command kind x escalation,
through the ``shell`` handler and the orchestrator, with a recording approver and real
sandboxed processes (the pure decision function has its own table in test_policy.py).

Each command touches a folder outside every writable root, so a sandboxed attempt is
refused by the sandbox and the escalation path shows: ``ask`` is a first question,
``retry`` the question to re-run without the sandbox after a denial. Outcomes: ``ran``
(the command's effect happened), ``blocked`` (it ran in the sandbox and was denied),
``guard`` / ``forbidden`` / ``never`` / ``rejected`` (refused with Codex's text, nothing
ran).
"""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from agent_magics.errors import RespondToModel, TurnAborted
from agent_magics.protocol.approval import ApprovalPolicy, ReviewDecision, SandboxMode
from agent_magics.tools.approval.orchestrator import NEVER_PROMPT, RETRY_REASON
from agent_magics.tools.context import SessionServices
from agent_magics.tools.handlers.shell import ShellHandler
from agent_magics.tools.sandbox.platform import probe
from tests.helpers.sandbox import (
    Arena,
    RecordingApprover,
    close,
    use_mechanism,
)
from tests.helpers.tools import shell_invocation

SHELL = ShellHandler()
JUSTIFICATION = "I need to write outside the project"
COMMANDS = {
    "safe": ["cat", "{outside}/target.txt"],
    "unsafe": ["touch", "{outside}/new.txt"],
    "dangerous": ["rm", "-f", "{outside}/target.txt"],
}

# policy     sandbox             command    escalated  prompts    outcome
TABLE = """
untrusted    read-only           safe       no         -          ran
untrusted    read-only           unsafe     no         ask        ran
untrusted    read-only           dangerous  no         ask        ran
untrusted    workspace-write     safe       no         -          ran
untrusted    workspace-write     unsafe     no         ask        ran
untrusted    workspace-write     dangerous  no         ask        ran
untrusted    danger-full-access  safe       no         -          ran
untrusted    danger-full-access  unsafe     no         ask        ran
untrusted    danger-full-access  dangerous  no         ask        ran
on-failure   read-only           safe       no         -          ran
on-failure   read-only           unsafe     no         retry      ran
on-failure   read-only           dangerous  no         ask        ran
on-failure   workspace-write     safe       no         -          ran
on-failure   workspace-write     unsafe     no         retry      ran
on-failure   workspace-write     dangerous  no         ask        ran
on-failure   danger-full-access  safe       no         -          ran
on-failure   danger-full-access  unsafe     no         -          ran
on-failure   danger-full-access  dangerous  no         ask        ran
on-request   read-only           safe       no         -          ran
on-request   read-only           unsafe     no         -          blocked
on-request   read-only           dangerous  no         ask        blocked
on-request   workspace-write     safe       no         -          ran
on-request   workspace-write     unsafe     no         -          blocked
on-request   workspace-write     dangerous  no         ask        blocked
on-request   danger-full-access  safe       no         -          ran
on-request   danger-full-access  unsafe     no         -          ran
on-request   danger-full-access  dangerous  no         ask        ran
on-request   read-only           safe       yes        -          ran
on-request   read-only           unsafe     yes        ask        ran
on-request   read-only           dangerous  yes        ask        ran
on-request   workspace-write     safe       yes        -          ran
on-request   workspace-write     unsafe     yes        ask        ran
on-request   workspace-write     dangerous  yes        ask        ran
on-request   danger-full-access  safe       yes        -          ran
on-request   danger-full-access  unsafe     yes        -          ran
on-request   danger-full-access  dangerous  yes        ask        ran
never        read-only           safe       no         -          ran
never        read-only           unsafe     no         -          blocked
never        read-only           dangerous  no         -          forbidden
never        workspace-write     safe       no         -          ran
never        workspace-write     unsafe     no         -          blocked
never        workspace-write     dangerous  no         -          forbidden
never        danger-full-access  safe       no         -          ran
never        danger-full-access  unsafe     no         -          ran
never        danger-full-access  dangerous  no         -          forbidden
"""
GUARDED = [  # require_escalated outside on-request is refused before anything else
    (policy, sandbox, kind)
    for policy in ("untrusted", "on-failure", "never")
    for sandbox in ("read-only", "workspace-write", "danger-full-access")
    for kind in COMMANDS
]

# Denied answers (policy sandbox command escalated prompts outcome).
DENIALS = """
untrusted    workspace-write     unsafe     no         ask        rejected
on-failure   workspace-write     unsafe     no         retry      rejected
on-failure   read-only           dangerous  no         ask        rejected
on-request   workspace-write     dangerous  no         ask        rejected
on-request   read-only           unsafe     yes        ask        rejected
"""

# No mechanism works: every command asks first, and runs unconfined once approved.
FAIL_CLOSED = """
never        workspace-write     safe       no         -          never
never        workspace-write     unsafe     no         -          never
never        workspace-write     dangerous  no         -          forbidden
never        read-only           unsafe     no         -          never
never        danger-full-access  unsafe     no         -          ran
on-failure   workspace-write     unsafe     no         ask        ran
untrusted    workspace-write     safe       no         ask        ran
untrusted    workspace-write     unsafe     no         ask        ran
on-request   workspace-write     safe       no         ask        ran
on-request   read-only           unsafe     no         ask        ran
on-request   workspace-write     dangerous  no         ask        ran
on-request   workspace-write     unsafe     yes        ask        ran
"""


def rows(table: str) -> list[Any]:
    out = []
    for line in table.strip().splitlines():
        policy, sandbox, kind, escalated, prompts, outcome = line.split()
        row = (policy, sandbox, kind, escalated == "yes", prompts, outcome)
        out.append(pytest.param(*row, id="-".join(line.split()[:4])))
    return out


async def outcome_of(
    arena: Arena,
    policy: str,
    sandbox: str,
    kind: str,
    escalated: bool,
    decision: ReviewDecision = ReviewDecision.APPROVED,
) -> tuple[str, str]:
    """Run one row; returns ``(prompts, outcome)`` in the table's notation."""
    approver = RecordingApprover(decision)
    services = SessionServices(approver=approver)
    argv = [arena.fill(word) for word in COMMANDS[kind]]
    args: dict[str, Any] = {"command": argv}
    if escalated:
        args |= {"sandbox_permissions": "require_escalated", "justification": JUSTIFICATION}
    turn = {"approval_policy": ApprovalPolicy(policy), "sandbox_mode": SandboxMode(sandbox)}
    inv = shell_invocation(SHELL, args, services, arena.ws, **turn)
    try:
        text = (await SHELL.handle(inv)).text
    except RespondToModel as exc:
        text = exc.message
    finally:
        await close(services)
    prompts = []
    for request in approver.asked:
        if request.retry_without_sandbox:
            assert request.reason == RETRY_REASON
            prompts.append("retry")
        else:
            assert request.reason == (JUSTIFICATION if escalated else None)
            prompts.append("ask")
    return ",".join(prompts) or "-", classify(arena, kind, policy, argv, text)


def classify(arena: Arena, kind: str, policy: str, argv: list[str], text: str) -> str:
    rust = ApprovalPolicy(policy).rust_name
    refusals = {
        f"approval policy is {rust}; reject command — you should not ask for escalated "
        f"permissions if the approval policy is {rust}": "guard",
        f"`{shlex.join(argv)}` rejected: blocked by policy": "forbidden",
        NEVER_PROMPT: "never",
        "exec command rejected by user": "rejected",
    }
    if text in refusals:
        assert (arena.outside / "target.txt").read_text() == "original\n"
        assert not (arena.outside / "new.txt").exists()
        return refusals[text]
    done = {
        "safe": "original" in text,
        "unsafe": (arena.outside / "new.txt").exists(),
        "dangerous": not (arena.outside / "target.txt").exists(),
    }[kind]
    if done:
        return "ran"
    result = json.loads(text)
    denied = ("read-only file system", "permission denied")
    assert result["metadata"]["exit_code"] != 0
    assert any(word in result["output"].lower() for word in denied), text
    return "blocked"


@pytest.fixture
def sandboxed() -> None:
    found = probe()
    if found.kind is None:
        pytest.skip(f"no sandbox mechanism works here: {found.detail}")


@pytest.mark.usefixtures("sandboxed")
@pytest.mark.parametrize(
    ("policy", "sandbox", "kind", "escalated", "prompts", "outcome"), rows(TABLE)
)
async def test_truth_table(
    arena: Arena, policy: str, sandbox: str, kind: str, escalated: bool, prompts: str, outcome: str
) -> None:
    assert await outcome_of(arena, policy, sandbox, kind, escalated) == (prompts, outcome)


@pytest.mark.parametrize(
    ("policy", "sandbox", "kind"), [pytest.param(*g, id="-".join(g)) for g in GUARDED]
)
async def test_escalation_outside_on_request_is_refused(
    arena: Arena, policy: str, sandbox: str, kind: str
) -> None:
    assert await outcome_of(arena, policy, sandbox, kind, True) == ("-", "guard")


@pytest.mark.usefixtures("sandboxed")
@pytest.mark.parametrize(
    ("policy", "sandbox", "kind", "escalated", "prompts", "outcome"), rows(DENIALS)
)
async def test_denied_answers(
    arena: Arena, policy: str, sandbox: str, kind: str, escalated: bool, prompts: str, outcome: str
) -> None:
    got = await outcome_of(arena, policy, sandbox, kind, escalated, ReviewDecision.DENIED)
    assert got == (prompts, outcome)


@pytest.mark.usefixtures("sandboxed")
async def test_abort_ends_the_turn(arena: Arena) -> None:
    with pytest.raises(TurnAborted):
        await outcome_of(
            arena, "untrusted", "workspace-write", "unsafe", False, ReviewDecision.ABORT
        )
    assert not (arena.outside / "new.txt").exists()


@pytest.mark.parametrize(
    ("policy", "sandbox", "kind", "escalated", "prompts", "outcome"), rows(FAIL_CLOSED)
)
async def test_fail_closed_table(
    arena: Arena,
    monkeypatch: pytest.MonkeyPatch,
    policy: str,
    sandbox: str,
    kind: str,
    escalated: bool,
    prompts: str,
    outcome: str,
) -> None:
    with use_mechanism(monkeypatch, "none"):
        got = await outcome_of(arena, policy, sandbox, kind, escalated)
    assert got == (prompts, outcome)


# Commands that only look known-safe, run with `require_escalated` under on-request: each
# must be asked about (the approver denies), and the file it would create outside the
# sandbox stays absent. Before, they ran outside the sandbox with no question.
LOOKALIKES = [
    pytest.param(["./ls"], id="model-written-ls-codex-shares-this"),
    pytest.param(["bash", "-lc", "./ls -la"], id="model-written-ls-in-a-script"),
    pytest.param(["bash", "-lc", "echo hi\n\\touch {outside}/new.txt"], id="newline-backslash"),
    pytest.param(["bash", "-lc", "ls\rtouch {outside}/new.txt"], id="carriage-return"),
]


async def escalated(arena: Arena, argv: list[str], decision: ReviewDecision) -> tuple[int, str]:
    """Run ``argv`` escalated through the shell tool; the questions asked and the text."""
    ls = arena.ws / "ls"
    ls.write_text(f"#!/bin/sh\ntouch {arena.outside}/new.txt\n")
    ls.chmod(0o755)
    approver = RecordingApprover(decision)
    services = SessionServices(approver=approver)
    args = {
        "command": [arena.fill(a) for a in argv],
        "sandbox_permissions": "require_escalated",
        "justification": JUSTIFICATION,
    }
    turn = {
        "approval_policy": ApprovalPolicy.ON_REQUEST,
        "sandbox_mode": SandboxMode.WORKSPACE_WRITE,
    }
    inv = shell_invocation(SHELL, args, services, arena.ws, **turn)
    try:
        text = (await SHELL.handle(inv)).text
    except RespondToModel as exc:
        text = exc.message
    finally:
        await close(services)
    return len(approver.asked), text


@pytest.mark.usefixtures("sandboxed")
@pytest.mark.parametrize("argv", LOOKALIKES)
async def test_escalated_lookalike_asks(arena: Arena, argv: list[str]) -> None:
    asked, text = await escalated(arena, argv, ReviewDecision.DENIED)
    assert (asked, text) == (1, "exec command rejected by user")
    assert not (arena.outside / "new.txt").exists()


@pytest.mark.usefixtures("sandboxed")
async def test_escalated_system_ls_runs_unasked(arena: Arena) -> None:
    asked, text = await escalated(arena, ["/bin/ls", "{outside}"], ReviewDecision.DENIED)
    assert asked == 0
    assert "target.txt" in text
