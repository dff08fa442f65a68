"""What a tool card shows besides its call: the question and why it is asked, the
decision once it is answered, how long the call ran and waited, a running command's latest
output, and whether the output opens by itself.

Pure functions over :class:`~agent_magics.transcript.model.ToolBlock`, shared by the live
cards (:mod:`agent_magics.jupyter.ui.widgets`) and the static transcript (:mod:`.static_html`),
so both say the same.
"""

from __future__ import annotations

from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision
from agent_magics.text.visible import visible
from agent_magics.transcript.calls import COMMAND_TOOLS
from agent_magics.transcript.html import PRE_STYLE, esc
from agent_magics.transcript.model import ToolBlock
from agent_magics.transcript.terminal import run_and_wait

STOPPABLE_TOOLS = (*COMMAND_TOOLS, "write_stdin")  # a running card of these has Stop
LIVE_TAIL_LINES = 5  # lines of a running command's output shown as it runs
LIVE_TAIL_CHARS = 1000

DECIDED_BY_PERSON = {
    ReviewDecision.APPROVED: "Approved by you",
    ReviewDecision.APPROVED_FOR_SESSION: "Approved for this session by you",
    ReviewDecision.DENIED: "Denied by you",
    ReviewDecision.ABORT: "Turn aborted by you",
}
DECISION_COLORS = {
    ReviewDecision.APPROVED: "#1a7f37",
    ReviewDecision.APPROVED_FOR_SESSION: "#1a7f37",
    ReviewDecision.DENIED: "#cf222e",
    ReviewDecision.ABORT: "#9a6700",
}


MUTED = "color:#6e7781"


def decision_line(block: ToolBlock) -> str:
    """The decision on a call and who made it, as a card shows it once the question is
    answered (``""`` when nobody was asked); a yes for the session says what it covers."""
    d = block.decision
    if d is None:
        return ""
    if block.remembered:
        return "Allowed: approved earlier for this session"
    if block.decided_by_policy:
        return "Denied by the policy" if d is ReviewDecision.DENIED else "Approved by the policy"
    scope = block.request.session_scope if block.request is not None else None
    if d is ReviewDecision.APPROVED_FOR_SESSION and scope:
        return f"{DECIDED_BY_PERSON[d]}: {scope}"
    return DECIDED_BY_PERSON[d]


def took_text(block: ToolBlock) -> str:
    """How long the call ran and, apart, how long it waited for your answer (``""``
    until it ends). Only a person's answer is a wait: a policy's or a remembered one is
    not shown as one."""
    if not block.duration_s:
        return ""
    by_person = block.decision is not None and not block.remembered
    waited = block.waited_s if by_person and not block.decided_by_policy else 0.0
    return run_and_wait(block.duration_s, waited, ran=block.status not in ("denied", "aborted"))


def took_html(block: ToolBlock) -> str:
    """:func:`took_text` as the card's header ends with it (``""`` until the call ends)."""
    text = took_text(block)
    return f' <span style="{MUTED}">({esc(text)})</span>' if text else ""


def reason_note(request: ApprovalRequest) -> str | None:
    """The reason given with a question, beside the rule that asks: a command's is the
    model's own justification; a kernel call's would repeat the rule and the note under
    its code (a function's card has no code, so its note that it runs outside the
    sandbox stays); a retry's is the rule itself."""
    reason = request.reason
    if not reason or request.retry_without_sandbox or reason in (request.rule or ""):
        return None
    if request.tool_name == "run_python":
        return None
    return f"The model's reason: {reason}" if request.kind == "exec" else reason


def question_html(block: ToolBlock) -> str:
    """The question above the approval buttons: why it is asked (the rule that applied),
    the model's reason if it gave one, and what "Approve for session" would cover."""
    request = block.request
    ask = "Allow this call?"
    if request is not None and request.retry_without_sandbox:
        ask += " (it would run without the sandbox)"
    lines = [f"<b>{ask}</b>"]
    if request is None:
        return lines[0]
    if request.rule:
        lines.append(f"<div>Why you are asked: {esc(visible(request.rule))}</div>")
    if (note := reason_note(request)) is not None:
        lines.append(f"<div>{esc(visible(note))}</div>")
    if request.remember_allowed and request.session_scope:
        scope = esc(visible(request.session_scope))
        lines.append(f'<div style="{MUTED}">Approve for session: {scope}.</div>')
    return "".join(lines)


def decision_html(block: ToolBlock) -> str:
    line = decision_line(block)
    if not line or block.decision is None:
        return ""
    mark = "✘" if block.decision is ReviewDecision.DENIED else "✔"
    mark = "■" if block.decision is ReviewDecision.ABORT else mark
    color = DECISION_COLORS[block.decision]
    return f'<div style="color:{color};font-weight:600">{mark} {esc(line)}</div>'


def note_html(text: str) -> str:
    """A muted line of ours on a card (what a denial means, said in place of the output)."""
    return f'<div style="{MUTED}"><i>{esc(text)}</i></div>'


def output_opens(block: ToolBlock, exit_code: int | None) -> bool:
    """A failed call's output is shown open: that is what a person looks at first."""
    return block.status == "failed" or exit_code not in (None, 0)


def live_tail(text: str, lines: int = LIVE_TAIL_LINES, chars: int = LIVE_TAIL_CHARS) -> str:
    """The last lines of a running command's output (a cut line starts with ``…``)."""
    tail = "\n".join(text.rstrip("\n").splitlines()[-lines:])
    return tail if len(tail) <= chars else "…" + tail[-(chars - 1) :]


def live_html(text: str) -> str:
    """A running command's latest output, under the card's header."""
    if not text.strip():
        return ""
    return f'<pre style="{PRE_STYLE};color:#57606a">{esc(live_tail(text))}</pre>'
