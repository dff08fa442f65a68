"""What a tool handler receives (the invocation and its turn) and what it returns."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from agent_magics.events import Event, EventSink, ignore_events
from agent_magics.protocol.approval import (
    ApprovalPolicy,
    ApprovalStore,
    Approver,
    SandboxMode,
    deny_all,
)
from agent_magics.tools.truncate import DEFAULT_POLICY, TruncationPolicy

T = TypeVar("T")


@dataclass(frozen=True)
class FunctionPayload:
    """A ``function_call``: JSON arguments as the model sent them."""

    arguments: str


@dataclass(frozen=True)
class CustomPayload:
    """A ``custom_tool_call``: raw text input (freeform tools such as apply_patch)."""

    input: str


Payload = FunctionPayload | CustomPayload

ContentItem = dict[str, Any]  # {"type": "input_text", "text": ...} | {"type": "input_image", ...}


@dataclass(frozen=True)
class ToolOutput:
    """What goes back to the model: text or content items. ``success`` stays internal."""

    content: str | list[ContentItem]
    success: bool = True

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(i.get("text", "") for i in self.content if i.get("type") == "input_text")


@dataclass(frozen=True)
class ShellInfo:
    """The person's shell: path and family (bash, zsh, sh)."""

    path: str
    kind: Literal["bash", "zsh", "sh"] = "bash"

    @classmethod
    def detect(cls) -> ShellInfo:
        shell = os.environ.get("SHELL") or "/bin/bash"
        name = Path(shell).name
        if name in ("bash", "zsh", "sh"):
            return cls(shell, name)  # type: ignore[arg-type]
        return cls("/bin/bash", "bash")


KeptFiles = Callable[[], Sequence[Path]]
"""The files a front end keeps out of reach of the agent's commands and patches, asked
again at each turn (the notebook the kernel runs: see ``TurnContext.read_only_paths``)."""


@dataclass(frozen=True)
class TurnContext:
    """Settings that hold for one turn."""

    cwd: Path
    approval_policy: ApprovalPolicy = ApprovalPolicy.ON_REQUEST
    sandbox_mode: SandboxMode = SandboxMode.WORKSPACE_WRITE  # as SessionConfig's
    truncation: TruncationPolicy = DEFAULT_POLICY
    shell: ShellInfo = field(default_factory=ShellInfo.detect)
    allow_login_shell: bool = True
    supports_images: bool = True
    thread_id: str = ""
    network_access: bool = False
    sandbox_limit: str | None = None
    """A teacher's limit on the sandbox, in the policy's words: while set, no command or
    patch runs outside the sandbox (see :func:`~.approval.orchestrator.run_guarded`)."""
    read_only_paths: tuple[Path, ...] = ()
    """Files no command or patch of the agent may change even inside a writable root (the
    notebook the kernel runs: its editor saves it, and it holds the teacher's policy)."""


@dataclass
class SessionServices:
    """Session-wide state handlers share: approvals, events, long-lived tool state."""

    approver: Approver = deny_all
    emit: EventSink = ignore_events
    approvals: ApprovalStore = field(default_factory=ApprovalStore)
    pending_user_messages: list[str] = field(default_factory=list)
    before_write: Callable[[list[Path]], Callable[[], None] | None] = lambda paths: None
    """Told the paths a tool is about to write or remove, before it touches them (the
    turn's diff keeps their original content); what it returns is called once the write
    is done, whether it succeeded or not (undo knows what the agent's own write left)."""
    _state: dict[str, Any] = field(default_factory=dict)

    def state(self, key: str, factory: Callable[[], T]) -> T:
        """Per-session state owned by one handler (e.g. its running processes)."""
        if key not in self._state:
            self._state[key] = factory()
        value: T = self._state[key]
        return value


@dataclass(frozen=True)
class ToolInvocation:
    """One call of one tool."""

    call_id: str
    tool_name: str
    payload: Payload
    turn: TurnContext
    services: SessionServices

    def emit(self, event: Event) -> None:
        self.services.emit(event)

    def resolve(self, path: str) -> Path:
        """A path argument, relative to the turn's cwd unless absolute (not normalised)."""
        p = Path(path)
        return p if p.is_absolute() else self.turn.cwd / p
