"""The runtime of a shell command (``exec_command``, ``shell``, ``shell_command``): its
approval request and key, the policy's requirement, the command line it really runs
(the session's shell snapshot, the sandbox's wrapper) and the sandbox-denial check.

:class:`CommandRuntime` is what every command shares; :class:`ShellRuntime` runs one to
completion (``shell`` / ``shell_command``); ``exec_command``'s is in
:mod:`agent_magics.tools.runtimes.unified_exec`.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from agent_magics.errors import RespondToModel
from agent_magics.protocol.approval import ApprovalRequest, SandboxMode, SandboxPermissions
from agent_magics.tools.approval.requirement import (
    can_retry_unsandboxed,
    command_approval_requirement,
)
from agent_magics.tools.command_safety.rules import canonical_command
from agent_magics.tools.context import ToolInvocation
from agent_magics.tools.sandbox import SandboxSpec
from agent_magics.tools.sandbox.roots import writable_roots
from agent_magics.tools.stopping import output_so_far
from agent_magics.tools.unified_exec import manager_for
from agent_magics.tools.unified_exec.command_line import command_env
from agent_magics.tools.unified_exec.one_shot import (
    DEFAULT_TIMEOUT_MS,
    ExecOutput,
    decode_output,
    run_oneshot,
    spawn_error_text,
)
from agent_magics.tools.unified_exec.snapshot import snapshot_command

T = TypeVar("T")

EXEC_REJECTED = "exec command rejected by user"
DENIAL_KEYWORDS = (
    "operation not permitted",
    "permission denied",
    "read-only file system",
    "seccomp",
    "sandbox",
    "landlock",
    "failed to write file",
)

EXEC_SESSION_SCOPE = (
    "this same command, in this same folder, runs again without asking; another command, "
    "another argument or another folder asks again"
)
"""What "approve for session" covers, said from :func:`approval_key`: the whole command
(its every word), the folder and the permissions it asked for."""


def approval_key(
    argv: Sequence[str], cwd: Path, permissions: SandboxPermissions, tty: bool | None = None
) -> dict[str, Any]:
    """A shell approval key; unified exec keys also carry ``tty``."""
    key: dict[str, Any] = {
        "command": canonical_command(argv),
        "cwd": str(cwd),
        "sandbox_permissions": permissions.value,
        "additional_permissions": None,
    }
    if tty is not None:
        key["tty"] = tty
    return key


def model_writable_roots(workspace: Path) -> list[Path]:
    """Where the model's commands may write without a question in this session: the
    roots of ``workspace-write`` whatever the turn's sandbox mode, so that a program
    written under one mode is not trusted under another."""
    return writable_roots(workspace, SandboxMode.WORKSPACE_WRITE)


def looks_sandbox_denied(output: str, exit_code: int, linux_sandbox: bool = True) -> bool:
    """Codex's guess that a confined command failed because of the sandbox."""
    if exit_code == 0:
        return False
    lowered = output.lower()
    if any(word in lowered for word in DENIAL_KEYWORDS):
        return True
    if exit_code in (2, 126, 127):
        return False
    return linux_sandbox and exit_code == 128 + signal.SIGSYS


@dataclass(frozen=True)
class CommandRequest:
    """A command call as its handler built it: the argv shown, approved and judged (the
    model's), the folder, the permissions it asked for and why; ``tty`` for unified
    exec, whose approval keys carry it."""

    argv: Sequence[str]
    cwd: Path
    permissions: SandboxPermissions
    justification: str | None
    tty: bool | None = None


class CommandRuntime(Generic[T]):
    """What every shell command call shares: the approval request and key, the policy's
    requirement, the command line that really runs, and the denial check; a subclass
    gives the attempt and what of its result the check reads (:meth:`evidence`)."""

    rejection = EXEC_REJECTED
    confinement: SandboxSpec | None = None
    runs_outside_sandbox = False

    def __init__(self, inv: ToolInvocation, req: CommandRequest, env: Mapping[str, str]) -> None:
        turn = inv.turn
        self.inv, self.req, self.env = inv, req, env
        self.request = ApprovalRequest(
            call_id=inv.call_id,
            tool_name=inv.tool_name,
            kind="exec",
            cwd=req.cwd,
            command=tuple(req.argv),
            reason=req.justification,
            keys=[approval_key(req.argv, req.cwd, req.permissions, tty=req.tty)],
            session_scope=EXEC_SESSION_SCOPE,
        )
        self.requirement = command_approval_requirement(
            turn.approval_policy,
            turn.sandbox_mode,
            req.argv,
            req.permissions,
            req.justification,
            cwd=req.cwd,
            roots=model_writable_roots(turn.cwd),
        )
        self.can_retry_unsandboxed = can_retry_unsandboxed(turn.approval_policy)

    async def command(self, sandbox: SandboxSpec) -> tuple[list[str], Mapping[str, str]]:
        """The argv and environment that run: the session's shell snapshot (when one
        applies), inside the sandbox's wrapper."""
        turn = self.inv.turn
        run, run_env = await snapshot_command(
            self.inv.services,
            self.req.argv,
            self.env,
            turn.cwd,
            turn.approval_policy,
            turn.sandbox_mode,
        )
        return sandbox.wrap(run), run_env

    def evidence(self, result: T) -> tuple[str, int] | None:
        """The output and exit code the denial check reads; ``None`` while the command
        runs (or when it was timed out)."""
        raise NotImplementedError

    def is_sandbox_denial(self, result: T) -> bool:
        seen = self.evidence(result)
        return seen is not None and looks_sandbox_denied(*seen)

    def release(self, result: T) -> None:
        pass


class ShellRuntime(CommandRuntime[ExecOutput]):
    """``shell`` / ``shell_command``: the command runs to its end or its timeout."""

    def __init__(self, inv: ToolInvocation, req: CommandRequest, timeout_ms: int | None) -> None:
        super().__init__(inv, req, command_env(inv.turn.thread_id))
        self.timeout_ms = DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms

    async def attempt(self, sandbox: SandboxSpec) -> ExecOutput:
        inv = self.inv
        try:
            argv, env = await self.command(sandbox)
            return await run_oneshot(
                argv,
                self.req.cwd,
                env,
                self.timeout_ms,
                manager_for(inv.services),
                lambda read: output_so_far(inv.services, inv.call_id, read),
            )
        except (OSError, ValueError) as exc:
            raise RespondToModel(spawn_error_text(exc)) from None

    def evidence(self, result: ExecOutput) -> tuple[str, int] | None:
        if result.timed_out:
            return None
        return decode_output(result.aggregated), result.exit_code
