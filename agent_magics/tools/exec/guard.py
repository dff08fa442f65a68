"""What the shell tools check before running a command, and how they describe it for
approval: escalation guards, approval keys, sandbox-denial detection (of commands, and of
apply_patch's in-process writes).
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from agent_magics.errors import RespondToModel
from agent_magics.tools.approval import (
    ApprovalPolicy,
    SandboxMode,
    SandboxPermissions,
)
from agent_magics.tools.safety import canonical_command
from agent_magics.tools.sandbox.roots import writable_roots

EXEC_REJECTED = "exec command rejected by user"
ADDITIONAL_DISABLED = (
    "additional permissions are disabled; enable `features.request_permission` before using "
    "`with_additional_permissions`"
)
ADDITIONAL_WITHOUT_MODE = (
    "`additional_permissions` requires `sandbox_permissions` set to `with_additional_permissions`"
)
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


def check_permissions(
    policy: ApprovalPolicy,
    permissions: SandboxPermissions,
    additional: object,
    tool: Literal["shell", "exec_command"],
) -> None:
    """Codex's guards on ``sandbox_permissions`` / ``additional_permissions``."""
    escalating = permissions is not SandboxPermissions.USE_DEFAULT
    if escalating and policy is not ApprovalPolicy.ON_REQUEST:
        verb = "cannot" if tool == "exec_command" else "should not"
        name = policy.rust_name
        raise RespondToModel(
            f"approval policy is {name}; reject command — you {verb} ask for escalated "
            f"permissions if the approval policy is {name}"
        )
    if permissions is SandboxPermissions.WITH_ADDITIONAL_PERMISSIONS:
        raise RespondToModel(ADDITIONAL_DISABLED)
    if additional is not None:
        raise RespondToModel(ADDITIONAL_WITHOUT_MODE)


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


def write_denied(path: Path) -> str:
    """The line a write the sandbox refuses reports, as Codex's confined apply_patch
    prints it (Rust's text for ``EPERM``)."""
    return f"Failed to write file {path}: Operation not permitted (os error 1)\n"


def looks_write_denied(output: str, exit_code: int) -> bool:
    """Whether an in-process apply_patch failed because of :func:`write_denied` writes.

    Narrower than :func:`looks_sandbox_denied` on purpose: a patch's own failure (say
    ``Failed to write file`` for a real I/O error) is the model's to fix, not a denial.
    """
    return exit_code != 0 and "not permitted" in output
