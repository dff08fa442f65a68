"""What a call of ``shell``, ``shell_command`` or ``exec_command`` goes through, shared:
decoding its arguments, the arguments with which it asks to leave the sandbox (their
schema is :func:`agent_magics.tools.specs.command.command_props`), and the approved,
possibly escalated run.

Each tool's arguments model names :class:`EscalationArgs` as its first base, so that the
escalation fields come after the tool's own (pydantic orders inherited fields from the
last base to the first): ``class ExecCommandArgs(EscalationArgs, _ExecFields)`` has
``cmd`` .. ``login``, then ``sandbox_permissions`` .. ``prefix_rule``. The order is
model-visible: a JSON array fills the fields in it, and the first invalid field is the one
reported; ``tests/test_shell_tools.py`` pins it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from agent_magics.errors import RespondToModel
from agent_magics.tools.approval import ApprovalRequest, SandboxPermissions
from agent_magics.tools.context import ToolInvocation
from agent_magics.tools.exec.guard import (
    EXEC_REJECTED,
    EXEC_SESSION_SCOPE,
    approval_key,
    check_permissions,
    model_writable_roots,
)
from agent_magics.tools.orchestrator import GuardedCall, Ran, run_guarded
from agent_magics.tools.policy import can_retry_unsandboxed, command_approval_requirement
from agent_magics.tools.sandbox import SandboxSpec

T = TypeVar("T")

PermissionName = Literal["use_default", "require_escalated", "with_additional_permissions"]


class EscalationArgs(BaseModel):
    """The arguments with which a command asks to run outside the sandbox."""

    sandbox_permissions: PermissionName = "use_default"
    additional_permissions: dict[str, Any] | None = None
    justification: str | None = None
    prefix_rule: list[str] | None = None

    def checked_permissions(
        self, inv: ToolInvocation, tool: Literal["shell", "exec_command"]
    ) -> SandboxPermissions:
        """``sandbox_permissions``, once Codex's guards for the turn's policy let it pass."""
        permissions = SandboxPermissions(self.sandbox_permissions)
        check_permissions(inv.turn.approval_policy, permissions, self.additional_permissions, tool)
        return permissions


def check_command_text(fields: Mapping[str, str | Sequence[str] | None]) -> None:
    """Refuse command text no process can be given: a NUL byte (the text would end
    there) or an unpaired surrogate (it has no UTF-8 spelling)."""
    for field, value in fields.items():
        texts = [value] if isinstance(value, str) else list(value or ())
        for text in texts:
            if "\0" in text:
                raise RespondToModel(f"`{field}` contains a NUL byte; remove it and try again")
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                char = f"U+{ord(text[exc.start]):04X}"
                raise RespondToModel(
                    f"`{field}` contains an unpaired surrogate ({char}), which is not valid "
                    "text; remove it and try again"
                ) from None


async def run_approved(
    inv: ToolInvocation,
    argv: Sequence[str],
    cwd: Path,
    args: EscalationArgs,
    permissions: SandboxPermissions,
    attempt: Callable[[SandboxSpec], Awaitable[T]],
    is_sandbox_denial: Callable[[T], bool],
    *,
    tty: bool | None = None,
    release: Callable[[T], None] | None = None,
) -> Ran[T]:
    """Ask for approval of running ``argv`` as the policy requires, then run ``attempt``
    (again outside the sandbox after a denial, when the policy allows asking); the
    result says which sandbox the last attempt ran under."""
    turn = inv.turn
    request = ApprovalRequest(
        call_id=inv.call_id,
        tool_name=inv.tool_name,
        kind="exec",
        cwd=cwd,
        command=tuple(argv),
        reason=args.justification,
        keys=[approval_key(argv, cwd, permissions, tty=tty)],
        session_scope=EXEC_SESSION_SCOPE,
    )
    requirement = command_approval_requirement(
        turn.approval_policy,
        turn.sandbox_mode,
        argv,
        permissions,
        args.justification,
        cwd=cwd,
        roots=model_writable_roots(turn.cwd),
    )
    call = GuardedCall(
        request,
        requirement,
        attempt,
        rejection=EXEC_REJECTED,
        is_sandbox_denial=is_sandbox_denial,
        can_retry_unsandboxed=can_retry_unsandboxed(turn.approval_policy),
        release=release,
    )
    return await run_guarded(inv, call)
