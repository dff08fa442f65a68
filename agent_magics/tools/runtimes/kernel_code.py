"""Code that runs in the person's kernel: the approval every such tool shares.

run_python and run_cell run code in the kernel's own process, which no sandbox confines,
so the person's yes is the only guard (see
:func:`~agent_magics.tools.approval.requirement.kernel_approval_requirement`). The rule
lives here, apart from IPython, so that a front end that reaches a kernel from outside
(a chat panel's agent, through the Jupyter server) asks exactly as a session inside the
kernel does: the same requirement, the same keys, the code shown as it runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agent_magics.protocol.approval import ApprovalRequest
from agent_magics.tools.approval.orchestrator import GuardedCall, run_guarded
from agent_magics.tools.approval.requirement import (
    PYTHON_IN_KERNEL,
    kernel_approval_requirement,
    kernel_session_key,
    kernel_session_scope,
)
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.sandbox import SandboxSpec


async def asked_in_kernel(
    inv: ToolInvocation,
    tool: str,
    code: str,
    session_key: tuple[str, ...],
    rejected: str,
    run: Callable[[], Awaitable[ToolOutput]],
) -> ToolOutput:
    """``run`` once the rules for code that runs in the kernel allow ``code`` (asking the
    person where they say so): run_python's rule, shared by every tool that runs code in
    the kernel. The question shows ``code``, exactly what runs."""
    turn = inv.turn
    request = ApprovalRequest(
        call_id=inv.call_id,
        tool_name=tool,
        kind="exec",
        cwd=turn.cwd,
        command=(code,),  # what a person reads when asked, in a card or a terminal
        keys=kernel_session_key(turn.sandbox_mode, session_key, code),
        session_scope=kernel_session_scope(turn.sandbox_mode, tool),
    )
    requirement = kernel_approval_requirement(
        turn.approval_policy, turn.sandbox_mode, PYTHON_IN_KERNEL
    )

    async def attempt(_sandbox: SandboxSpec) -> ToolOutput:
        return await run()

    ran = await run_guarded(
        inv, GuardedCall(request, requirement, attempt, rejected, runs_outside_sandbox=True)
    )
    return ran.value
