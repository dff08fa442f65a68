"""The orchestrator's fixed sequence: requirement -> question -> sandbox -> attempt ->
after a sandbox denial, the question to retry without it (codex-tools.md §9.5, §9.6).

Attempts here are plain recorders handed to ``run_guarded`` (the contract every
tool uses); the sandbox they receive is the real one this machine offers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from agent_magics.errors import RespondToModel, TurnAborted
from agent_magics.events import ApprovalDecided, ApprovalRequested, Event
from agent_magics.protocol.approval import (
    ApprovalPolicy,
    ApprovalRequest,
    ReviewDecision,
    SandboxMode,
)
from agent_magics.tools.approval.orchestrator import (
    NEVER_PROMPT,
    RETRY_REASON,
    GuardedCall,
    run_guarded,
)
from agent_magics.tools.approval.requirement import (
    ApprovalRequirement,
    Forbidden,
    NeedsApproval,
    Skip,
)
from agent_magics.tools.context import CustomPayload, SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.handlers.apply_patch import ApplyPatchHandler
from agent_magics.tools.sandbox import NO_SANDBOX, SandboxSpec
from agent_magics.tools.sandbox.platform import probe
from tests.helpers.sandbox import Arena, RecordingApprover, use_mechanism

REJECTED = "exec command rejected by user"
APPROVE, FOR_SESSION = ReviewDecision.APPROVED, ReviewDecision.APPROVED_FOR_SESSION
DENY, ABORT = ReviewDecision.DENIED, ReviewDecision.ABORT


@dataclass
class Attempts:
    """Records the sandbox of each attempt and each result the orchestrator released;
    the first ``denials`` attempts look denied."""

    denials: int = 0
    seen: list[SandboxSpec] = field(default_factory=list)
    released: list[str] = field(default_factory=list)

    async def __call__(self, sandbox: SandboxSpec) -> str:
        self.seen.append(sandbox)
        return "denied" if len(self.seen) <= self.denials else "ok"

    @property
    def kinds(self) -> list[str]:
        return [s.kind for s in self.seen]


@dataclass
class Harness:
    approver: RecordingApprover
    services: SessionServices
    events: list[Event]
    cwd: Path

    async def run(
        self,
        requirement: ApprovalRequirement,
        attempts: Attempts,
        *,
        policy: ApprovalPolicy = ApprovalPolicy.ON_REQUEST,
        sandbox: SandboxMode = SandboxMode.WORKSPACE_WRITE,
        kind: Literal["exec", "patch"] = "exec",
        retry: bool = True,
        keys: tuple[Any, ...] = ("k1",),
    ) -> str:
        turn = TurnContext(cwd=self.cwd, approval_policy=policy, sandbox_mode=sandbox)
        inv = ToolInvocation("c1", "shell", CustomPayload(""), turn, self.services)
        request = ApprovalRequest("c1", "shell", kind, self.cwd, ("touch", "x"), keys=keys)
        call = GuardedCall(
            request,
            requirement,
            attempts,
            rejection=REJECTED,
            is_sandbox_denial=lambda result: result == "denied",
            can_retry_unsandboxed=retry,
            release=attempts.released.append,
        )
        ran = await run_guarded(inv, call)
        assert ran.sandbox == attempts.seen[-1]
        return ran.value

    @property
    def prompts(self) -> list[str | None]:
        return [r.reason for r in self.approver.asked]


@pytest.fixture
def make(tmp_path: Path) -> Any:
    def build(*decisions: ReviewDecision) -> Harness:
        approver = RecordingApprover()
        answers = list(decisions)

        async def answer(request: ApprovalRequest) -> ReviewDecision:
            approver.decision = answers.pop(0) if answers else APPROVE
            return await approver(request)

        events: list[Event] = []
        services = SessionServices(approver=answer, emit=events.append)
        return Harness(approver, services, events, tmp_path)

    return build


@pytest.fixture
def confined() -> str:
    found = probe()
    if found.kind is None:
        pytest.skip(f"no sandbox mechanism works here: {found.detail}")
    return found.kind


async def test_forbidden_runs_nothing(make: Any) -> None:
    h, attempts = make(), Attempts()
    with pytest.raises(RespondToModel) as refused:
        await h.run(Forbidden("`rm -f x` rejected: blocked by policy"), attempts)
    assert refused.value.message == "`rm -f x` rejected: blocked by policy"
    assert attempts.seen == [] and h.approver.asked == []


async def test_skip_runs_once_in_the_platform_sandbox(make: Any, confined: str) -> None:
    h, attempts = make(), Attempts()
    assert await h.run(Skip(), attempts) == "ok"
    (spec,) = attempts.seen
    assert spec.kind == confined and spec.confined and not spec.network
    assert spec.writable_roots[0] == h.cwd.resolve()
    assert h.approver.asked == []


async def test_read_only_mode_has_no_writable_roots(make: Any, confined: str) -> None:
    h, attempts = make(), Attempts()
    await h.run(Skip(), attempts, sandbox=SandboxMode.READ_ONLY)
    assert attempts.seen[0].kind == confined and attempts.seen[0].writable_roots == ()


async def test_full_access_runs_unconfined(make: Any) -> None:
    h, attempts = make(), Attempts(denials=1)
    assert await h.run(Skip(), attempts, sandbox=SandboxMode.DANGER_FULL_ACCESS) == "denied"
    assert attempts.seen == [NO_SANDBOX]  # unconfined: a failure is not a sandbox denial


@pytest.mark.parametrize(
    ("requirement", "kinds"),
    [
        pytest.param(NeedsApproval("why"), ["sandboxed"], id="sandboxed-after-approval"),
        pytest.param(NeedsApproval("why", bypass_sandbox=True), ["none"], id="bypass"),
    ],
)
async def test_needs_approval_asks_first(
    make: Any, confined: str, requirement: NeedsApproval, kinds: list[str]
) -> None:
    h, attempts = make(APPROVE), Attempts()
    assert await h.run(requirement, attempts) == "ok"
    assert h.prompts == ["why"]
    assert [k if k == "none" else "sandboxed" for k in attempts.kinds] == kinds
    assert [type(e) for e in h.events] == [ApprovalRequested, ApprovalDecided]


@pytest.mark.parametrize(
    ("decision", "raised"),
    [pytest.param(DENY, RespondToModel, id="denied"), pytest.param(ABORT, TurnAborted, id="abort")],
)
async def test_no_runs_nothing(make: Any, decision: ReviewDecision, raised: type) -> None:
    h, attempts = make(decision), Attempts()
    with pytest.raises(raised, match=f"^{REJECTED}$"):
        await h.run(NeedsApproval(), attempts)
    assert attempts.seen == []


async def test_approved_for_session_is_remembered_per_key(make: Any, confined: str) -> None:
    h = make(FOR_SESSION)
    await h.run(NeedsApproval(), Attempts(), keys=("a", "b"))
    await h.run(NeedsApproval(), Attempts(), keys=("b",))  # a subset: remembered
    await h.run(NeedsApproval(), Attempts(), keys=("b", "c"))  # c is new: asked
    assert len(h.approver.asked) == 2
    cached = [e for e in h.events if isinstance(e, ApprovalDecided) and e.cached]
    assert cached == [ApprovalDecided("c1", FOR_SESSION, True)]


async def test_plain_approval_is_not_remembered(make: Any, confined: str) -> None:
    h = make(APPROVE, APPROVE)
    await h.run(NeedsApproval(), Attempts())
    await h.run(NeedsApproval(), Attempts())
    assert len(h.approver.asked) == 2


async def test_denial_without_retry_returns_the_denial(make: Any, confined: str) -> None:
    h, attempts = make(), Attempts(denials=1)
    assert await h.run(Skip(), attempts, retry=False) == "denied"
    assert len(attempts.seen) == 1 and h.approver.asked == []


async def test_denial_asks_to_retry_without_the_sandbox(make: Any, confined: str) -> None:
    h, attempts = make(APPROVE), Attempts(denials=1)
    assert await h.run(Skip(), attempts, policy=ApprovalPolicy.ON_FAILURE) == "ok"
    assert attempts.kinds == [confined, "none"]
    (retry,) = h.approver.asked
    assert retry.reason == RETRY_REASON and retry.retry_without_sandbox


async def test_no_second_question_after_an_approval(make: Any, confined: str) -> None:
    h, attempts = make(APPROVE), Attempts(denials=1)
    assert await h.run(NeedsApproval("first"), attempts, policy=ApprovalPolicy.UNTRUSTED) == "ok"
    assert h.prompts == ["first"] and attempts.kinds == [confined, "none"]


@pytest.mark.parametrize(
    ("decision", "raised"),
    [pytest.param(DENY, RespondToModel, id="denied"), pytest.param(ABORT, TurnAborted, id="abort")],
)
async def test_refused_retry(
    make: Any, confined: str, decision: ReviewDecision, raised: type
) -> None:
    h, attempts = make(decision), Attempts(denials=1)
    with pytest.raises(raised, match=f"^{REJECTED}$"):
        await h.run(Skip(), attempts, policy=ApprovalPolicy.ON_FAILURE)
    assert len(attempts.seen) == 1


@pytest.mark.parametrize(
    ("decision", "retry"),
    [
        pytest.param(APPROVE, True, id="retried"),
        pytest.param(DENY, True, id="retry-refused"),
        pytest.param(APPROVE, False, id="no-retry"),
    ],
)
async def test_a_dropped_first_attempt_is_released(
    make: Any, confined: str, decision: ReviewDecision, retry: bool
) -> None:
    """The denied first result is handed back for cleanup (exec_command kills its
    process) exactly when the call will not return it: retried, or the retry refused."""
    h, attempts = make(decision), Attempts(denials=1)
    try:
        await h.run(Skip(), attempts, policy=ApprovalPolicy.ON_FAILURE, retry=retry)
    except RespondToModel:
        assert decision is DENY
    assert attempts.released == (["denied"] if retry else [])


@pytest.mark.parametrize(
    ("kind", "asked"),
    [
        pytest.param("exec", 1, id="command-retry-remembered"),
        pytest.param("patch", 2, id="patch-retry-always-asks"),
    ],
)
async def test_retry_question_and_the_session_cache(
    make: Any, confined: str, kind: str, asked: int
) -> None:
    h = make(FOR_SESSION, APPROVE)
    await h.run(NeedsApproval(), Attempts(), kind=kind)  # remembers k1
    attempts = Attempts(denials=1)
    assert await h.run(Skip(), attempts, policy=ApprovalPolicy.ON_FAILURE, kind=kind) == "ok"
    assert len(h.approver.asked) == asked and attempts.kinds == [confined, "none"]


@pytest.mark.parametrize(
    ("policy", "decision", "expected"),
    [
        pytest.param(ApprovalPolicy.NEVER, APPROVE, NEVER_PROMPT, id="never-refuses"),
        pytest.param(ApprovalPolicy.ON_REQUEST, APPROVE, "ok", id="asks-then-runs-unconfined"),
        pytest.param(ApprovalPolicy.ON_FAILURE, DENY, REJECTED, id="denied"),
    ],
)
async def test_fail_closed_when_no_mechanism_works(
    make: Any,
    monkeypatch: pytest.MonkeyPatch,
    policy: ApprovalPolicy,
    decision: ReviewDecision,
    expected: str,
) -> None:
    h, attempts = make(decision), Attempts()
    with use_mechanism(monkeypatch, "none"):
        try:
            result = await h.run(Skip(), attempts, policy=policy)
        except RespondToModel as exc:
            result = exc.message
    assert result == expected
    assert attempts.kinds == (["none"] if expected == "ok" else [])
    assert len(h.approver.asked) == (0 if policy is ApprovalPolicy.NEVER else 1)


PATCH = "*** Begin Patch\n*** Add File: {path}\n+hi\n*** End Patch\n"


async def test_patch_outside_asks_to_retry_even_when_remembered(arena: Arena) -> None:
    """apply_patch under on-failure: the path check denies, the retry question is asked
    although the file was approved for the session, and the patch then applies."""
    approver = RecordingApprover(FOR_SESSION)
    services = SessionServices(approver=approver)
    target = arena.outside / "new.txt"
    services.approvals.remember([str(target)])
    handler = ApplyPatchHandler("freeform")
    turn = TurnContext(
        cwd=arena.ws,
        approval_policy=ApprovalPolicy.ON_FAILURE,
        sandbox_mode=SandboxMode.WORKSPACE_WRITE,
    )
    inv = ToolInvocation(
        "c1", "apply_patch", CustomPayload(PATCH.format(path=target)), turn, services
    )
    out = await handler.handle(inv)
    assert out.success and target.read_text() == "hi\n"
    (retry,) = approver.asked
    assert retry.kind == "patch" and retry.retry_without_sandbox and retry.reason == RETRY_REASON
