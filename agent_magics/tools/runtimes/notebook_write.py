"""The runtime of a notebook edit written to a file (edit_notebook on a notebook no
editor holds): apply_patch's approval and writable-folder rules around the write, with
an in-process path check as its confinement, as for a patch."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from agent_magics.events import CellPlaced
from agent_magics.protocol.approval import ApprovalRequest
from agent_magics.tools.approval.orchestrator import GuardedCall, run_guarded
from agent_magics.tools.approval.requirement import (
    files_scope,
    patch_approval_requirement,
    patch_can_retry_unsandboxed,
)
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.sandbox import SandboxSpec
from agent_magics.tools.sandbox.roots import is_writable, writable_roots, write_denied

REJECTED_BY_USER = "notebook edit rejected by user"


async def guarded_write(
    inv: ToolInvocation,
    path: Path,
    description: str,
    place: str,
    write: Callable[[tuple[Path, ...] | None], Awaitable[tuple[str, bool]]],
    kept: tuple[Path, ...] = (),
) -> ToolOutput:
    """apply_patch's approval and confinement around ``write`` (``description``: what the
    card's question shows of the edit) (given the writable roots
    when confined, ``None`` when the person or the policy lifted the confinement), with
    the turn's read-only files ``kept`` out of it; the card learns first where in the
    notebook the edit acts."""
    inv.services.emit(CellPlaced(inv.call_id, place))
    turn = inv.turn
    roots = writable_roots(turn.cwd, turn.sandbox_mode)
    inside = is_writable(path, roots, kept)
    request = ApprovalRequest(
        call_id=inv.call_id,
        tool_name=inv.tool_name,
        kind="patch",
        cwd=turn.cwd,
        patch=description,
        paths=(path,),
        keys=[str(path)],
        session_scope=files_scope([path]),
    )

    async def attempt(sandbox: SandboxSpec) -> tuple[str, bool]:
        if sandbox.confined and not inside:
            return write_denied(path), False
        return await write(tuple(roots) if sandbox.confined else None)

    call = GuardedCall(
        request,
        patch_approval_requirement(
            turn.approval_policy, turn.sandbox_mode, inside, limit=turn.sandbox_limit
        ),
        attempt,
        rejection=REJECTED_BY_USER,
        is_sandbox_denial=lambda r: not r[1] and "not permitted" in r[0],
        can_retry_unsandboxed=patch_can_retry_unsandboxed(turn.approval_policy),
        confinement=SandboxSpec("path_check", tuple(roots)),
    )
    text, ok = (await run_guarded(inv, call)).value
    return ToolOutput(text, success=ok)
