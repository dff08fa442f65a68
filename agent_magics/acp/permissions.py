"""An approval question as ACP's ``session/request_permission``, and the answer back.

Our three answers map one to one on ACP's option kinds: Approve is ``allow_once``,
Approve for session ``allow_always`` (offered only when the call may be remembered, its
name saying what it covers), Deny ``reject_once``. A client that cancels the question
(the turn was cancelled, or the client went away) answers ``cancelled``: the call is
aborted, as Stop does in a cell. An option id we did not offer is a denial.

What the person reads is exactly what runs: the command, the patch or the MCP call is
the request's own text (:meth:`ApprovalRequest.subject`), with invisible and bidi
characters named, not obeyed (:func:`agent_magics.text.visible.visible`), whole in the
call's ``raw_input.command`` (:func:`shown_input`) and in a code block no line of it can
close (:func:`fenced`).
"""

from __future__ import annotations

import json
import re
import shlex
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
    text = "\n".join([fenced(visible(what_runs(request))), *lines])
    return ToolCallUpdate(
        tool_call_id=call_id,
        title=title(request),
        kind=KINDS.get(request.kind, "other"),
        status="pending",
        content=[ContentToolCallContent(type="content", content=_text(text)), *(diffs or [])],
        raw_input=shown_input(request),
    )


def fenced(text: str) -> str:
    """``text`` as a Markdown code block no line of it can close (its fence is longer
    than any run of backticks in it), so a client that renders Markdown shows it all."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def shown_input(request: ApprovalRequest) -> dict[str, Any]:
    """What a question's call is, whole: ``command`` is exactly what would run, with
    hidden characters named. jupyter-ai shows a pending call by its title and this
    ``command`` alone (not the question's content), and the title is cut: so this is
    where the person reads all of it."""
    return {"command": visible(what_runs(request)), **_raw_input(request)}


KERNEL_CODE = ("run_python", "run_cell")
"""Tools whose ``command`` is one piece of code, shown as it is."""


def what_runs(request: ApprovalRequest) -> str:
    """What runs, as the person must read it: a command's argv quoted as a shell reads
    it (words a space-joined one runs together stay apart, a one-word argv with a space
    is one word), the kernel's code as it is, and an MCP or function call's arguments as
    the values the call gets (JSON with a key twice runs with its last value: the text
    the model wrote would show the first)."""
    if request.kind == "exec" and request.tool_name not in KERNEL_CODE and request.command:
        return shlex.join(request.command)
    if request.arguments is not None and (request.server is not None or request.kind == "function"):
        if request.server is not None:
            return f"{request.server} · {request.mcp_tool} {call_values(request.arguments)}"
        return f"{request.tool_name} {call_values(request.arguments)}"
    return request.subject()


def title(request: ApprovalRequest) -> str:
    if request.kind == "exec":
        return f"Run {visible(what_runs(request))[:200]}"
    if request.kind == "patch":
        names = ", ".join(p.name for p in request.paths)
        return f"Edit {visible(names)[:200]}" if names else "Edit files"
    if request.server is not None:
        return f"{visible(request.server)} · {visible(request.mcp_tool or '')}"
    return visible(request.tool_name)


def decision(
    response: RequestPermissionResponse, offered: list[PermissionOption]
) -> ReviewDecision:
    """The person's answer: a cancelled question aborts the call; an option that was not
    offered (Approve for session where it may not be remembered) is a denial."""
    outcome = response.outcome
    if not isinstance(outcome, AllowedOutcome):
        return ReviewDecision.ABORT
    if outcome.option_id not in {o.option_id for o in offered}:
        return ReviewDecision.DENIED
    return DECISIONS.get(outcome.option_id, ReviewDecision.DENIED)


def call_values(arguments: str) -> str:
    """A call's JSON arguments as the values it gets (sorted keys; a key written twice
    once, with the value that counts); the text itself when it is not JSON."""
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False, sort_keys=True)
    except ValueError:
        return arguments


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _raw_input(request: ApprovalRequest) -> dict[str, Any]:
    raw: dict[str, Any] = {"tool": request.tool_name, "cwd": str(request.cwd)}
    if request.patch:
        raw["patch"] = visible(request.patch)
    if request.server is not None:
        arguments = visible(call_values(request.arguments or ""))
        raw |= {"server": request.server, "tool": request.mcp_tool, "arguments": arguments}
    return raw
