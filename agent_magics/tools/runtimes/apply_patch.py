"""The runtime of a patch (the apply_patch tool, or an apply_patch a shell command
runs): checked whole before anything is written, approved as the policy says, applied
in-process inside the writable roots (its own confinement: a path check, not the
platform's sandbox), and reported like an exec of Codex's apply_patch program.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from agent_magics.apply_patch import (
    PatchApplyError,
    PatchParseError,
    PatchVerificationError,
    UpdateFile,
    VerifiedPatch,
    parse_patch,
    resolve_patch_path,
    verify_patch,
)
from agent_magics.apply_patch.files import PlainFiles
from agent_magics.errors import RespondToModel
from agent_magics.protocol.approval import ApprovalRequest
from agent_magics.tools.approval.orchestrator import run_guarded
from agent_magics.tools.approval.requirement import (
    files_scope,
    patch_approval_requirement,
    patch_can_retry_unsandboxed,
)
from agent_magics.tools.approval.shadowing import kernel_folder, shadow_reason, shadowing
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.sandbox import SandboxSpec
from agent_magics.tools.sandbox.platform import off_limits
from agent_magics.tools.sandbox.roots import (
    confined_files,
    is_writable,
    writable_roots,
    write_denied,
)
from agent_magics.tools.unified_exec.format import structured_output

REJECTED_BY_USER = "patch rejected by user"
EMPTY_PATCH = "patch rejected: empty patch"
VERIFICATION_FAILED = "apply_patch verification failed: "

Applied = tuple[str, int, float]
"""What an attempt printed, its exit code and how long it took."""


def looks_write_denied(output: str, exit_code: int) -> bool:
    """Whether an in-process write failed because of :func:`write_denied` writes.

    Narrower than the commands' check on purpose: a patch's own failure (say ``Failed to
    write file`` for a real I/O error) is the model's to fix, not a denial.
    """
    return exit_code != 0 and "not permitted" in output


async def run_apply_patch(inv: ToolInvocation, patch_text: str, cwd: Path) -> ToolOutput:
    """Verify, approve and apply ``patch_text`` relative to ``cwd``; used by the tool and
    by shell calls that turn out to be apply_patch invocations."""
    runtime = PatchRuntime(inv, patch_text, cwd)
    text, code, duration = (await run_guarded(inv, runtime)).value
    body = structured_output(text, code, duration, inv.turn.truncation)
    return ToolOutput(body, success=code == 0)


class PatchRuntime:
    """One patch: its request and key (the paths it touches), the policy's requirement,
    the attempt and the denial check."""

    rejection = REJECTED_BY_USER
    runs_outside_sandbox = False  # its path check is its sandbox

    def __init__(self, inv: ToolInvocation, patch_text: str, cwd: Path) -> None:
        if (why := _off_limits(inv, patch_text, cwd)) is not None:
            raise RespondToModel(VERIFICATION_FAILED + why)  # before any file is read
        try:
            verified = verify_patch(patch_text, cwd)
        except PatchVerificationError as exc:
            raise RespondToModel(VERIFICATION_FAILED + str(exc)) from None
        if verified.is_empty:
            raise RespondToModel(EMPTY_PATCH)
        turn = inv.turn
        self.inv, self.verified = inv, verified
        self.roots = writable_roots(turn.cwd, turn.sandbox_mode)
        self.paths = paths = verified.touched_paths
        writes = [c.move_path or c.path for c in verified.changes if c.kind != "delete"]
        self.shadows = dict(shadowing(writes, [turn.cwd, *kernel_folder()]))
        reason = shadow_reason(list(self.shadows.items())) if self.shadows else None
        self.kept = turn.read_only_paths  # the notebook the kernel runs, say
        self.inside = all(is_writable(p, self.roots, self.kept) for p in paths)
        self.inside = self.inside and not self.shadows
        self.requirement = patch_approval_requirement(
            turn.approval_policy, turn.sandbox_mode, self.inside, reason, turn.sandbox_limit
        )
        self.request = ApprovalRequest(
            call_id=inv.call_id,
            tool_name=inv.tool_name,
            kind="patch",
            cwd=cwd,
            patch=verified.patch,
            paths=tuple(paths),
            keys=[str(p) for p in paths],
            session_scope=files_scope(paths),
        )
        self.can_retry_unsandboxed = patch_can_retry_unsandboxed(turn.approval_policy)
        self.confinement: SandboxSpec | None = SandboxSpec("path_check", tuple(self.roots))

    async def attempt(self, sandbox: SandboxSpec) -> Applied:
        started = time.monotonic()
        if sandbox.confined and not self.inside:
            outside = [
                p
                for p in self.paths
                if p in self.shadows or not is_writable(p, self.roots, self.kept)
            ]
            denied = "".join(write_denied(p) for p in outside)
            return denied, 1, time.monotonic() - started
        files = confined_files(self.roots, self.kept) if sandbox.confined else PlainFiles()
        written = self.inv.services.before_write(self.paths)
        try:
            text, code = await asyncio.to_thread(_apply, self.verified, files)
        finally:
            if written is not None:
                written()
        return text, code, time.monotonic() - started

    def is_sandbox_denial(self, result: Applied) -> bool:
        return looks_write_denied(result[0], result[1])

    def release(self, result: Applied) -> None:
        pass


def _off_limits(inv: ToolInvocation, patch_text: str, cwd: Path) -> str | None:
    """Why a patch may not touch one of its paths: it is among the machine's secrets
    (checking a hunk against such a file would tell the model what it holds)."""
    try:
        hunks = parse_patch(patch_text).hunks
    except PatchParseError:
        return None  # verify_patch says why, reading nothing
    for hunk in hunks:
        move = hunk.move_path if isinstance(hunk, UpdateFile) else None
        for raw in (hunk.path, move):
            if raw is not None and (why := off_limits(inv.turn.cwd, resolve_patch_path(cwd, raw))):
                return why
    return None


def _apply(verified: VerifiedPatch, files: PlainFiles) -> tuple[str, int]:
    try:
        return verified.apply(files), 0
    except PatchApplyError as exc:
        return f"{exc.message}\n", 1
