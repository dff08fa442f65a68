"""Calls a headless policy denied: what their cards say, and their count.

Nobody can answer an approval question in a headless run (nbclient, papermill), so the
policy answers. The model still reads Codex's answer to a denied call (``exec_command
failed: CreateProcess { message: "Rejected(\\"exec command rejected by user\\")" }``), but
nobody was there to reject anything, so the person reads our words instead: the first
denied card says why and how to let such calls run, each later one says it was not run,
and a line at the end of the turn counts them all.
"""

from __future__ import annotations

from agent_magics.tools.approval import ReviewDecision
from agent_magics.ui.state import ToolBlock, Transcript

NOT_RUN = (
    "Not run: this call needed approval, and nobody can give it in a headless run "
    "(the first denied call says how to let such calls run)."
)


def denied_by_policy_block(block: ToolBlock) -> bool:
    """Whether the headless policy, not a person, denied ``block``: its card then shows
    our note in place of the answer the model got."""
    return block.decided_by_policy and block.decision is ReviewDecision.DENIED


def denied_by_policy(t: Transcript) -> list[ToolBlock]:
    """The calls the headless policy denied, in the order they came."""
    return [b for b in t.tools if denied_by_policy_block(b)]


def note_for(t: Transcript, block: ToolBlock) -> str | None:
    """What ``block``'s card says about its denial: the policy's note on the first denied
    call, :data:`NOT_RUN` on the later ones, ``None`` on a call the policy did not deny."""
    if t.policy_note is None or not denied_by_policy_block(block):
        return None
    first = next(iter(denied_by_policy(t)), None)
    return t.policy_note if block is first else NOT_RUN


def denial_summary(t: Transcript) -> str | None:
    """``2 tool calls denied by the headless policy.`` (``None``: no call was)."""
    n = len(denied_by_policy(t))
    if not n or t.policy_note is None:
        return None
    return f"{n} tool call{'' if n == 1 else 's'} denied by the headless policy."
