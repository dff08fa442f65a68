"""What a tool card shows besides its call: the decision once the question is answered,
a running command's latest output, and whether the output opens by itself.

Pure functions over :class:`~agent_magics.ui.state.ToolBlock`, shared by the live cards
(:mod:`.widgets`) and the static transcript (:mod:`.static_html`), so both say the same.
"""

from __future__ import annotations

from agent_magics.tools.approval import ReviewDecision
from agent_magics.ui.render import COMMAND_TOOLS, PRE_STYLE, esc
from agent_magics.ui.state import ToolBlock

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


def decision_line(block: ToolBlock) -> str:
    """The decision on a call and who made it, as a card shows it once the question is
    answered (``""`` when nobody was asked)."""
    d = block.decision
    if d is None:
        return ""
    if block.remembered:
        return "Allowed: approved earlier for this session"
    if block.decided_by_policy:
        return "Denied by the policy" if d is ReviewDecision.DENIED else "Approved by the policy"
    return DECIDED_BY_PERSON[d]


def decision_html(block: ToolBlock) -> str:
    line = decision_line(block)
    if not line or block.decision is None:
        return ""
    mark = "✘" if block.decision is ReviewDecision.DENIED else "✔"
    mark = "■" if block.decision is ReviewDecision.ABORT else mark
    color = DECISION_COLORS[block.decision]
    return f'<div style="color:{color};font-weight:600">{mark} {esc(line)}</div>'


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
