"""The approval rule of code that runs in the kernel's own process (run_python, the
person's functions) as a table, written out by hand, and what "approve for session"
remembers of such a call.

1. a function registered with ``approval="auto"`` runs (the registration was the yes);
2. under ``read-only`` nothing else runs without a person's yes: ``never`` refuses,
   every other policy asks;
3. otherwise ``never`` runs and every other policy asks.

Every run bypasses the sandbox: no sandbox confines the kernel.
"""

from __future__ import annotations

import pytest

from agent_magics.protocol.approval import ApprovalPolicy, ApprovalStore, SandboxMode
from agent_magics.tools.approval.requirement import (
    KERNEL_READ_ONLY,
    Forbidden,
    NeedsApproval,
    Skip,
    kernel_approval_requirement,
    kernel_session_key,
)

P = pytest.param
RO, WW, FULL = "read-only", "workspace-write", "danger-full-access"
REASON = "why it asks"
RUN, ASK, REFUSE = Skip(True), NeedsApproval(REASON, True), Forbidden(KERNEL_READ_ONLY)

TABLE = [
    # run_python's code, and a function registered with approval="ask"
    P("untrusted", RO, False, ASK, id="ask-untrusted-read-only"),
    P("on-failure", RO, False, ASK, id="ask-on-failure-read-only"),
    P("on-request", RO, False, ASK, id="ask-on-request-read-only"),
    P("never", RO, False, REFUSE, id="ask-never-read-only"),
    P("untrusted", WW, False, ASK, id="ask-untrusted-workspace-write"),
    P("on-failure", WW, False, ASK, id="ask-on-failure-workspace-write"),
    P("on-request", WW, False, ASK, id="ask-on-request-workspace-write"),
    P("never", WW, False, RUN, id="ask-never-workspace-write"),
    P("untrusted", FULL, False, ASK, id="ask-untrusted-full-access"),
    P("on-failure", FULL, False, ASK, id="ask-on-failure-full-access"),
    P("on-request", FULL, False, ASK, id="ask-on-request-full-access"),
    P("never", FULL, False, RUN, id="ask-never-full-access"),
    # a function registered with approval="auto"
    P("untrusted", RO, True, RUN, id="auto-untrusted-read-only"),
    P("on-request", RO, True, RUN, id="auto-on-request-read-only"),
    P("never", RO, True, RUN, id="auto-never-read-only"),
    P("untrusted", WW, True, RUN, id="auto-untrusted-workspace-write"),
    P("never", WW, True, RUN, id="auto-never-workspace-write"),
    P("on-failure", FULL, True, RUN, id="auto-on-failure-full-access"),
]


@pytest.mark.parametrize(("policy", "sandbox", "auto", "expected"), TABLE)
def test_kernel_approval_table(policy: str, sandbox: str, auto: bool, expected: object) -> None:
    requirement = kernel_approval_requirement(
        ApprovalPolicy(policy), SandboxMode(sandbox), REASON, auto=auto
    )
    assert requirement == expected


def test_the_refusal_is_one_sentence() -> None:
    assert KERNEL_READ_ONLY.count(". ") == 0 and KERNEL_READ_ONLY.endswith(".")
    assert "read-only" in KERNEL_READ_ONLY and "never" in KERNEL_READ_ONLY


def remembered(sandbox: str, tool: tuple[str, ...], exact: str, store: ApprovalStore) -> bool:
    return store.all_approved(kernel_session_key(SandboxMode(sandbox), tool, exact))


@pytest.mark.parametrize(
    ("given", "asked", "covered"),
    [
        P((WW, "a = 1"), (WW, "import os"), True, id="workspace-write-covers-the-tool"),
        P((FULL, "a = 1"), (WW, "import os"), True, id="other-sandboxes-share-the-tool-key"),
        P((RO, "a = 1"), (RO, "a = 1"), True, id="read-only-covers-the-same-code"),
        P((RO, "a = 1"), (RO, "a = 2"), False, id="read-only-not-other-code"),
        P((RO, "a = 1"), (RO, "a = 1 "), False, id="read-only-exact-text"),
        P((WW, "a = 1"), (RO, "a = 1"), False, id="no-carry-over-into-read-only"),
        P((RO, "a = 1"), (WW, "a = 1"), False, id="read-only-yes-stays-there"),
    ],
)
def test_what_approve_for_session_remembers(
    given: tuple[str, str], asked: tuple[str, str], covered: bool
) -> None:
    store = ApprovalStore()
    store.remember(kernel_session_key(SandboxMode(given[0]), ("run_python",), given[1]))
    assert remembered(asked[0], ("run_python",), asked[1], store) is covered
    # A function's key is its own: a yes to run_python never covers it.
    assert remembered(asked[0], ("function", "scale"), asked[1], store) is False
