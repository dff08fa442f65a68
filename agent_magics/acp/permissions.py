"""An approval question as ACP's ``session/request_permission``, and the answer back.

Our three answers map one to one on ACP's option kinds: Approve is ``allow_once``,
Approve for session ``allow_always`` (offered only when the call may be remembered, its
name saying what it covers), Deny ``reject_once``. A client that cancels the question
(the turn was cancelled, or the client went away) answers ``cancelled``: the call is
aborted, as Stop does in a cell. An option id we did not offer is a denial.

What the person reads is exactly what runs: the command, the patch or the MCP call is
the request's own text (:meth:`ApprovalRequest.subject`), with invisible and bidi
characters named, not obeyed (:func:`agent_magics.text.visible.visible`).
"""

from __future__ import annotations

from typing import Any

from acp.schema import (
    AllowedOutcome,
    ContentToolCallContent,
    FileEditToolCallContent,
    PermissionOption,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallUpdate,
    ToolKind,
)

from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision
from agent_magics.text.visible import visible

APPROVE, FOR_SESSION, DENY = "approved", "approved_for_session", "denied"
DECISIONS = {
    APPROVE: ReviewDecision.APPROVED,
    FOR_SESSION: ReviewDecision.APPROVED_FOR_SESSION,
    DENY: ReviewDecision.DENIED,
}
KINDS: dict[str, ToolKind] = {"exec": "execute", "patch": "edit", "mcp": "other"}


def options(request: ApprovalRequest) -> list[PermissionOption]:
    """The answers offered for ``request``."""
    found = [PermissionOption(option_id=APPROVE, name="Approve", kind="allow_once")]
    if request.remember_allowed:
        scope = f": {visible(request.session_scope)}" if request.session_scope else ""
        name = f"Approve for session{scope}"
        found.append(PermissionOption(option_id=FOR_SESSION, name=name, kind="allow_always"))
    found.append(PermissionOption(option_id=DENY, name="Deny", kind="reject_once"))
    return found


def question(
    request: ApprovalRequest, call_id: str, diffs: list[FileEditToolCallContent] | None = None
) -> ToolCallUpdate:
    """The tool call the question is about, as the client shows it: its title, what
    would run, why the person is asked, and for a patch each file's diff. ``call_id``:
    the call's id in our updates (a sub-agent's calls are nested under their own ids)."""
    lines = []
    if request.retry_without_sandbox:
        lines.append("It would run without the sandbox.")
    if request.rule:
        lines.append(f"Why you are asked: {visible(request.rule)}")
    if request.reason:
        lines.append(f"The model says: {visible(request.reason)}")
    if request.agents:
        lines.append(f"Asked by a helper agent ({' > '.join(request.agents)}).")
    subject = visible(request.subject())
    text = "\n".join([f"```\n{subject}\n```", *lines])
    return ToolCallUpdate(
        tool_call_id=call_id,
        title=title(request),
        kind=KINDS.get(request.kind, "other"),
        status="pending",
        content=[ContentToolCallContent(type="content", content=_text(text)), *(diffs or [])],
        raw_input=_raw_input(request),
    )


def title(request: ApprovalRequest) -> str:
    if request.kind == "exec":
        return f"Run {visible(' '.join(request.command))[:200]}"
    if request.kind == "patch":
        names = ", ".join(p.name for p in request.paths)
        return f"Edit {visible(names)[:200]}" if names else "Edit files"
    if request.server is not None:
        return f"{visible(request.server)} · {visible(request.mcp_tool or '')}"
    return visible(request.tool_name)


def decision(response: RequestPermissionResponse) -> ReviewDecision:
    """The person's answer: a cancelled question aborts the call."""
    outcome = response.outcome
    if isinstance(outcome, AllowedOutcome):
        return DECISIONS.get(outcome.option_id, ReviewDecision.DENIED)
    return ReviewDecision.ABORT


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _raw_input(request: ApprovalRequest) -> dict[str, Any]:
    raw: dict[str, Any] = {"tool": request.tool_name, "cwd": str(request.cwd)}
    if request.command:
        raw["command"] = list(request.command)
    if request.patch:
        raw["patch"] = request.patch
    if request.server is not None:
        raw |= {"server": request.server, "tool": request.mcp_tool, "arguments": request.arguments}
    return raw
