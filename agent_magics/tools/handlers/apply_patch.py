"""apply_patch: edit files with a patch, checked whole before anything is written.

Two forms, chosen by ``apply_patch_tool_type``: a freeform tool whose input is the raw
patch (constrained by a Lark grammar), or a JSON function with one ``input`` string.
The result is reported like an exec of Codex's apply_patch program (structured JSON;
shown as text when the freeform tool is offered).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from agent_magics.apply_patch import (
    PatchApplyError,
    PatchVerificationError,
    VerifiedPatch,
    verify_patch,
)
from agent_magics.apply_patch.files import PlainFiles
from agent_magics.errors import RespondToModel
from agent_magics.tools.approval import ApprovalRequest, files_scope
from agent_magics.tools.args import decode_args
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import CustomPayload, ToolInvocation, ToolOutput
from agent_magics.tools.exec.format import structured_output
from agent_magics.tools.exec.guard import looks_write_denied, write_denied
from agent_magics.tools.orchestrator import GuardedCall, run_guarded
from agent_magics.tools.policy import patch_approval_requirement, patch_can_retry_unsandboxed
from agent_magics.tools.sandbox import SandboxSpec
from agent_magics.tools.sandbox.roots import confined_files, is_writable, writable_roots
from agent_magics.tools.shadowing import kernel_folder, shadow_reason, shadowing
from agent_magics.tools.spec import ToolSpec
from agent_magics.tools.specs.patch import (
    apply_patch_spec,
)

REJECTED_BY_USER = "patch rejected by user"
EMPTY_PATCH = "patch rejected: empty patch"
VERIFICATION_FAILED = "apply_patch verification failed: "


class ApplyPatchArgs(BaseModel):
    input: str


async def run_apply_patch(inv: ToolInvocation, patch_text: str, cwd: Path) -> ToolOutput:
    """Verify, approve and apply ``patch_text`` relative to ``cwd``; used by the tool and
    by shell calls that turn out to be apply_patch invocations."""
    try:
        verified = verify_patch(patch_text, cwd)
    except PatchVerificationError as exc:
        raise RespondToModel(VERIFICATION_FAILED + str(exc)) from None
    if verified.is_empty:
        raise RespondToModel(EMPTY_PATCH)
    turn = inv.turn
    roots = writable_roots(turn.cwd, turn.sandbox_mode)
    paths = verified.touched_paths
    writes = [c.move_path or c.path for c in verified.changes if c.kind != "delete"]
    shadows = dict(shadowing(writes, [turn.cwd, *kernel_folder()]))
    reason = shadow_reason(list(shadows.items())) if shadows else None
    inside = all(is_writable(p, roots) for p in paths) and not shadows
    requirement = patch_approval_requirement(
        turn.approval_policy, turn.sandbox_mode, inside, reason
    )
    request = ApprovalRequest(
        call_id=inv.call_id,
        tool_name=inv.tool_name,
        kind="patch",
        cwd=cwd,
        patch=verified.patch,
        paths=tuple(paths),
        keys=[str(p) for p in paths],
        session_scope=files_scope(paths),
    )

    async def attempt(sandbox: SandboxSpec) -> tuple[str, int, float]:
        started = time.monotonic()
        if sandbox.confined and not inside:
            outside = [p for p in paths if p in shadows or not is_writable(p, roots)]
            denied = "".join(write_denied(p) for p in outside)
            return denied, 1, time.monotonic() - started
        files = confined_files(roots) if sandbox.confined else PlainFiles()
        written = inv.services.before_write(paths)
        try:
            text, code = await asyncio.to_thread(_apply, verified, files)
        finally:
            if written is not None:
                written()
        return text, code, time.monotonic() - started

    call = GuardedCall(
        request,
        requirement,
        attempt,
        rejection=REJECTED_BY_USER,
        is_sandbox_denial=lambda r: looks_write_denied(r[0], r[1]),
        can_retry_unsandboxed=patch_can_retry_unsandboxed(turn.approval_policy),
        confinement=SandboxSpec("path_check", tuple(roots)),
    )
    text, code, duration = (await run_guarded(inv, call)).value
    body = structured_output(text, code, duration, turn.truncation)
    return ToolOutput(body, success=code == 0)


def _apply(verified: VerifiedPatch, files: PlainFiles) -> tuple[str, int]:
    try:
        return verified.apply(files), 0
    except PatchApplyError as exc:
        return f"{exc.message}\n", 1


class ApplyPatchHandler:
    """The apply_patch tool in its freeform or function form."""

    name = "apply_patch"
    supports_parallel = False

    def __init__(self, tool_type: Literal["freeform", "function"] = "freeform") -> None:
        self.tool_type = tool_type
        self.payload_kind: Literal["function", "custom"] = (
            "custom" if tool_type == "freeform" else "function"
        )

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return apply_patch_spec(self.tool_type)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        if isinstance(inv.payload, CustomPayload):
            patch = inv.payload.input
        else:
            patch = decode_args(ApplyPatchArgs, inv.payload.arguments).input
        return await run_apply_patch(inv, patch, inv.turn.cwd)
