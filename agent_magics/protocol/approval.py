"""What every layer says about approvals: the policies, sandbox modes and review
decisions (Codex's names and values: ``on-request``, ``workspace-write``,
``approved_for_session``), the request a card shows, the ``Approver`` callback a front
end gives a session, and the store of a session's "approve for session" answers. Which
calls need a person is decided in :mod:`agent_magics.tools.approval.requirement`.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal


class ApprovalPolicy(StrEnum):
    """When a person is asked before a tool runs."""

    UNTRUSTED = "untrusted"
    ON_FAILURE = "on-failure"
    ON_REQUEST = "on-request"
    NEVER = "never"

    @property
    def rust_name(self) -> str:
        """The name Codex prints in its messages (``UnlessTrusted``, ``Never``...)."""
        return {
            "untrusted": "UnlessTrusted",
            "on-failure": "OnFailure",
            "on-request": "OnRequest",
            "never": "Never",
        }[self.value]


class SandboxMode(StrEnum):
    """What commands may touch."""

    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    DANGER_FULL_ACCESS = "danger-full-access"


class SandboxPermissions(StrEnum):
    """What a shell call asks for in its ``sandbox_permissions`` argument."""

    USE_DEFAULT = "use_default"
    REQUIRE_ESCALATED = "require_escalated"
    WITH_ADDITIONAL_PERMISSIONS = "with_additional_permissions"


class ReviewDecision(StrEnum):
    """A person's answer to an approval request."""

    APPROVED = "approved"
    APPROVED_FOR_SESSION = "approved_for_session"
    DENIED = "denied"
    ABORT = "abort"


@dataclass(frozen=True)
class ApprovalRequest:
    """What the front end shows on a card when a call needs a person."""

    call_id: str
    tool_name: str
    kind: Literal["exec", "patch", "mcp", "function"]
    cwd: Path
    command: Sequence[str] = ()
    reason: str | None = None
    patch: str | None = None
    paths: Sequence[Path] = ()
    retry_without_sandbox: bool = False
    keys: Sequence[Any] = field(default=(), compare=False)
    server: str | None = None
    """For an MCP call: the server, the tool's own name and the JSON arguments."""
    mcp_tool: str | None = None
    arguments: str | None = None
    remember_allowed: bool = True
    """False when "approve for session" must not be offered (always-ask tools)."""
    rule: str | None = None
    """Why a person is asked: the rule of the policy that applied, in our words."""
    session_scope: str | None = None
    """What "approve for session" would cover, said from what ``keys`` hold (the tool
    that builds the keys writes it beside them)."""
    ticket: str = ""
    """The question's own key, made by :func:`new_ticket` when it is asked: a click, a
    typed answer or a Stop answers the question of its ticket only. A call id cannot be
    the key: the model chooses it, and may choose one another agent's question has."""
    agents: tuple[str, ...] = ()
    """The sub-agent that asks, as the path of agent ids from the main agent's child
    down (empty: the main agent asks). Set by the session that forwards the question,
    never read from anything the model wrote."""

    def subject(self) -> str:
        """What would run, in one piece of text: the command, the patch, or the MCP
        tool with its arguments."""
        if self.command:
            return " ".join(self.command)
        if self.patch:
            return self.patch
        if self.server is not None:
            return f"{self.server} · {self.mcp_tool} {self.arguments or ''}".rstrip()
        if self.kind == "function":
            return f"{self.tool_name} {self.arguments or ''}".rstrip()
        return self.tool_name


Approver = Callable[[ApprovalRequest], Awaitable[ReviewDecision]]

TICKET_BYTES = 16


def new_ticket() -> str:
    """A fresh question key no model can guess or choose."""
    return secrets.token_hex(TICKET_BYTES)


async def deny_all(request: ApprovalRequest) -> ReviewDecision:
    """The headless default: whatever needs a person is refused."""
    return ReviewDecision.DENIED


async def approve_all(request: ApprovalRequest) -> ReviewDecision:
    """Approve every request (for scripted runs that opted into it)."""
    return ReviewDecision.APPROVED


class ApprovalStore:
    """Remembers ``approved_for_session`` answers, one entry per approval key."""

    def __init__(self) -> None:
        self._approved: set[str] = set()

    @staticmethod
    def _key(key: Any) -> str:
        return json.dumps(key, sort_keys=True, default=str)

    def all_approved(self, keys: Sequence[Any]) -> bool:
        return bool(keys) and all(self._key(k) in self._approved for k in keys)

    def remember(self, keys: Sequence[Any]) -> None:
        self._approved.update(self._key(k) for k in keys)

    def clear(self) -> None:
        self._approved.clear()
