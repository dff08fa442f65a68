"""The model's instructions say who answers approval questions (issue 34): a person in
the notebook or at a terminal, or, in a run nobody watches, nobody, and then which calls
run without asking under the policy and sandbox in force and which are denied. Each rule
is held against the requirement the orchestrator acts on."""

from __future__ import annotations

import pytest

from agent_magics.agent.headless_rules import ESCALATION_REJECTED, NO_ASKING, headless_rules
from agent_magics.agent.instructions import BASE_INSTRUCTIONS, base_instructions
from agent_magics.errors import RespondToModel
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode, SandboxPermissions
from agent_magics.tools.approval.requirement import (
    NeedsApproval,
    Skip,
    exec_approval_requirement,
    patch_approval_requirement,
)
from agent_magics.tools.runtimes.command_args import check_permissions

P, S = ApprovalPolicy, SandboxMode


def test_a_person_in_the_notebook_reads_the_instructions_as_before() -> None:
    assert base_instructions("notebook", P.ON_REQUEST, S.WORKSPACE_WRITE) == BASE_INSTRUCTIONS
    terminal = base_instructions("terminal", P.ON_REQUEST, S.WORKSPACE_WRITE)
    assert "A person at the terminal reads your messages and approves" in terminal
    assert "notebook" not in terminal.split("How to work:")[0]


@pytest.mark.parametrize("policy", list(P), ids=lambda p: p.value)
@pytest.mark.parametrize("sandbox", list(S), ids=lambda s: s.value)
def test_a_headless_run_says_nobody_answers_and_no_person_approves(
    policy: ApprovalPolicy, sandbox: SandboxMode
) -> None:
    for answer, approves in (("deny", False), ("approve", True)):
        text = base_instructions(answer, policy, sandbox)
        flat = " ".join(text.split())
        assert "Nobody can answer an approval question here" in flat
        assert "A person" not in flat and "approves the tool calls" not in flat
        assert all(f"- {rule}\n" in text for rule in headless_rules(policy, sandbox, approves))
    denying = base_instructions("deny", policy, sandbox)
    assert "every call that needs approval is denied" in " ".join(denying.split())
    approving = " ".join(base_instructions("approve", policy, sandbox).split())
    assert "the run approves every call that needs approval" in approving
    # asking for more access gets it nowhere in a run that denies: under on-request the
    # question is denied, under the other policies the request itself is rejected
    assert NO_ASKING in denying
    assert (" ".join(NO_ASKING.split()) in approving) == (policy is not P.ON_REQUEST)


@pytest.mark.parametrize("policy", list(P), ids=lambda p: p.value)
@pytest.mark.parametrize("sandbox", [S.READ_ONLY, S.WORKSPACE_WRITE], ids=lambda s: s.value)
def test_the_rules_say_what_the_requirements_decide(
    policy: ApprovalPolicy, sandbox: SandboxMode
) -> None:
    said = " ".join(headless_rules(policy, sandbox, approves=False))
    write = exec_approval_requirement(policy, sandbox, [["touch", "x"]])
    if isinstance(write, Skip):  # said as running without asking, or with nothing asking
        assert "run without asking" in said or "Nothing asks for approval" in said
    else:
        assert isinstance(write, NeedsApproval)
        assert "every other command is denied" in said
    try:  # the handler's guard, before any requirement
        check_permissions(policy, SandboxPermissions.REQUIRE_ESCALATED, None, "exec_command")
    except RespondToModel:
        rejected = True
    else:
        rejected = False
    assert (ESCALATION_REJECTED in said) == (rejected and policy is not P.UNTRUSTED)
    outside = patch_approval_requirement(policy, sandbox, all_writable=False)
    if isinstance(outside, NeedsApproval) and policy is P.ON_REQUEST:
        assert "is denied" in said and "apply_patch" in said
    assert ("force-deletes files (rm -f, rm -rf) is refused" in said) == (policy is P.NEVER)
