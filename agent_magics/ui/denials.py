"""Calls a headless policy denied: the note that explains why, said once, and their count.

Nobody can answer an approval question in a headless run (nbclient, papermill), so the
policy answers. The static transcript explains the first such denial, on its card, and
counts them all in a line at the end of the turn.
"""

from __future__ import annotations

from agent_magics.tools.approval import ReviewDecision
from agent_magics.ui.state import ToolBlock, Transcript


def denied_by_policy(t: Transcript) -> list[ToolBlock]:
    """The calls the headless policy denied, in the order they came."""
    return [b for b in t.tools if b.decided_by_policy and b.decision is ReviewDecision.DENIED]


def note_for(t: Transcript, block: ToolBlock) -> str | None:
    """The policy's note for ``block``: only the first denied call carries it."""
    first = next(iter(denied_by_policy(t)), None)
    return t.policy_note if block is first else None


def denial_summary(t: Transcript) -> str | None:
    """``2 tool calls denied by the headless policy.`` (``None``: no call was)."""
    n = len(denied_by_policy(t))
    if not n or t.policy_note is None:
        return None
    return f"{n} tool call{'' if n == 1 else 's'} denied by the headless policy."
