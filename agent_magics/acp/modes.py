"""Approval policies as ACP session modes.

A client shows a session's modes as a switch (jupyter-ai's mode menu, Zed's profile
picker); ours are the four approval policies, by their own names, so a mode read back
from the client is the policy that was chosen. Switching a mode changes the session's
policy for the next tool call; a teacher's site policy that caps the approval policy
refuses a looser one with its own sentence (:func:`agent_magics.teaching.bounds.bind`).
"""

from __future__ import annotations

from acp.schema import SessionMode, SessionModeState

from agent_magics.config import SessionConfig
from agent_magics.protocol.approval import ApprovalPolicy

MODES = {
    ApprovalPolicy.UNTRUSTED: (
        "Ask first",
        "Only commands known to read run without asking; every other command and every edit asks.",
    ),
    ApprovalPolicy.ON_REQUEST: (
        "Sandboxed",
        "Commands and edits run in the sandbox without asking; the agent asks when it "
        "needs more (the network, files outside the folder).",
    ),
    ApprovalPolicy.ON_FAILURE: (
        "Ask on failure",
        "Commands and edits run in the sandbox; when the sandbox blocks one, you are asked "
        "to run it without.",
    ),
    ApprovalPolicy.NEVER: (
        "Never ask",
        "Nothing asks: what the sandbox blocks fails, and the agent is told.",
    ),
}


def mode_state(config: SessionConfig) -> SessionModeState:
    """The modes offered and the one in force."""
    modes = [
        SessionMode(id=policy.value, name=name, description=description)
        for policy, (name, description) in MODES.items()
    ]
    return SessionModeState(current_mode_id=config.approval_policy.value, available_modes=modes)


def policy_of(mode_id: str) -> ApprovalPolicy | None:
    """The approval policy a mode id names (None: not one of ours)."""
    try:
        return ApprovalPolicy(mode_id)
    except ValueError:
        return None
