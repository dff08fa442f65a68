"""Denied calls: what their cards say in place of Codex's answer, and the count of those
a headless policy denied.

The model reads Codex's answer to a denied call byte for byte (``exec_command failed:
CreateProcess { message: "Rejected(\\"exec command rejected by user\\")" }``, ``patch
rejected by user``, ``err: "user rejected MCP tool call"``...): that is Rust's debug text
of an error, not words for a person. The card of a call you denied says what happened in
ours: nothing ran (or, for a retry outside the sandbox, that it did not run again).

Nobody can answer an approval question in a headless run (nbclient, papermill), so the
policy answers. Nobody was there to reject anything, so the first denied card says why
and how to let such calls run, each later one says it was not run, and a line at the end
of the turn counts them all.
"""

from __future__ import annotations

from agent_magics.protocol.approval import ReviewDecision
from agent_magics.transcript.model import ToolBlock, Transcript

DENIED_BY_YOU = "Not run: you denied it, and the model was told so."
DENIED_RETRY = (
    "Not run again outside the sandbox: you denied it, and the model was told so (the "
    "sandbox had blocked its first run)."
)
NOT_RUN = (
    "Not run: this call needed approval, and nobody can give it in a headless run "
    "(the first denied call says how to let such calls run)."
)


def denied_by_policy_block(block: ToolBlock) -> bool:
    """Whether the headless policy, not a person, denied ``block``: its card then shows
    our note in place of the answer the model got."""
    return block.decided_by_policy and block.decision is ReviewDecision.DENIED


def denied_block(block: ToolBlock) -> bool:
    """Whether ``block`` was denied, by a person or a policy: its card shows our words in
    place of the answer the model got (which only says it was rejected)."""
    return block.decision is ReviewDecision.DENIED and not block.remembered


def denial_note(block: ToolBlock) -> str | None:
    """What the card of a call a person denied says (``None`` for any other call)."""
    if not denied_block(block) or block.decided_by_policy:
        return None
    retry = block.request is not None and block.request.retry_without_sandbox
    return DENIED_RETRY if retry else DENIED_BY_YOU


def denied_by_policy(t: Transcript) -> list[ToolBlock]:
    """The calls the headless policy denied, in the order they came."""
    return [b for b in t.tools if denied_by_policy_block(b)]


def note_for(t: Transcript, block: ToolBlock) -> str | None:
    """What ``block``'s card says about its denial: the policy's note on the first call
    the policy denied, :data:`NOT_RUN` on the later ones, :func:`denial_note` on a call a
    person denied, ``None`` on a call nobody denied."""
    if t.policy_note is None or not denied_by_policy_block(block):
        return denial_note(block)
    first = next(iter(denied_by_policy(t)), None)
    return t.policy_note if block is first else NOT_RUN


def denial_summary(t: Transcript) -> str | None:
    """``2 tool calls denied by the headless policy.`` (``None``: no call was)."""
    n = len(denied_by_policy(t))
    if not n or t.policy_note is None:
        return None
    return f"{n} tool call{'' if n == 1 else 's'} denied by the headless policy."
