"""UI-neutral events a session emits; any front end (widgets, terminal, tests) renders them.

Events are named as past facts. They carry plain data only, so the core never learns who
is listening.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_magics.notices import (  # events too: named here with the rest
    ContextWindowNoted as ContextWindowNoted,
)
from agent_magics.notices import McpServerFailed as McpServerFailed
from agent_magics.notices import McpServerReady as McpServerReady
from agent_magics.notices import SandboxUnavailable as SandboxUnavailable
from agent_magics.notices import SandboxWeakness as SandboxWeakness
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision


@dataclass(frozen=True)
class TurnStarted:
    """A turn began with this prompt; ``number`` is its number in the conversation (the
    session's count, which a resumed session carries on: its file and its undo copies
    number turns by it)."""

    prompt: str
    number: int = 0


@dataclass(frozen=True)
class TextDelta:
    """A piece of the assistant message being streamed (``item_id`` names the message)."""

    item_id: str
    delta: str


@dataclass(frozen=True)
class AssistantMessage:
    """The model finished an assistant message."""

    text: str


@dataclass(frozen=True)
class ReasoningSummary:
    """The model finished a summary of its reasoning."""

    text: str


@dataclass(frozen=True)
class ToolCallProposed:
    """The model asked for a tool call; ``arguments`` as it sent them."""

    call_id: str
    tool_name: str
    arguments: str
    kind: str = "function"
    server: str | None = None
    """For an MCP tool: its server and its own name (``tool_name`` is qualified)."""
    mcp_tool: str | None = None


@dataclass(frozen=True)
class ApprovalRequested:
    """A tool call waits for a person's decision."""

    request: ApprovalRequest


@dataclass(frozen=True)
class ApprovalDecided:
    """A person (or, when ``cached``, an earlier "for the session") decided a call;
    ``waited_s`` is how long the question waited for the answer (a card shows it apart
    from the call's run time)."""

    call_id: str
    decision: ReviewDecision
    cached: bool = False
    waited_s: float = 0.0


@dataclass(frozen=True)
class ToolCallStarted:
    """A tool call began to run."""

    call_id: str
    tool_name: str


@dataclass(frozen=True)
class ToolOutputDelta:
    """A piece of a running call's output, as it arrived."""

    call_id: str
    chunk: str


@dataclass(frozen=True)
class ToolCallFinished:
    """A tool call ended; ``output`` is what the model gets back."""

    call_id: str
    tool_name: str
    output: Any
    success: bool
    duration_s: float
    stopped: bool = False
    """A person stopped this call (its card's Stop button); the turn went on."""


@dataclass(frozen=True)
class PlanStep:
    """One step of the plan and its status."""

    step: str
    status: str


@dataclass(frozen=True)
class PlanUpdated:
    """The model set its plan (update_plan)."""

    call_id: str
    explanation: str | None
    plan: Sequence[PlanStep]


@dataclass(frozen=True)
class GoalUpdated:
    """The thread's goal as it is now: a create_goal, update_goal or get_goal call's
    (its card shows it), or with no call id when a response spent its token budget."""

    call_id: str
    objective: str
    status: str  # active, paused, blocked, usageLimited, budgetLimited, complete
    token_budget: int | None
    tokens_used: int
    seconds_used: int


@dataclass(frozen=True)
class WebSearched:
    """The model server searched the web for the model (a ``web_search_call`` item):
    what it looked for and the pages it named, one a line (``sources``)."""

    call_id: str
    query: str
    sources: str


@dataclass(frozen=True)
class ImageViewed:
    """The model looked at an image (view_image); ``data_url`` is what it was sent."""

    call_id: str
    path: str
    data_url: str | None


@dataclass(frozen=True)
class RetryScheduled:
    """A request failed and is sent again after ``delay_s`` seconds."""

    attempt: int
    delay_s: float
    reason: str


@dataclass(frozen=True)
class ContextCompacted:
    """The conversation was compacted to fit the model's window: ``trigger`` is
    ``auto`` or ``manual``; ``phase`` when (Codex's ``mid_turn``, ``pre_turn``,
    ``post_turn``, ``standalone_turn``, and ours, ``overflow``: a request the server
    found too long, compacted and sent again); ``tokens_before`` / ``tokens_after``
    the context's size (the last response's count, and an estimate of what is kept);
    ``summary`` the model's summary (empty when the server compacted it itself);
    ``kept`` the person's messages kept; ``trimmed`` the oldest items left out so the
    summarising request fit."""

    trigger: str
    phase: str
    tokens_before: int
    tokens_after: int
    summary: str
    kept: tuple[str, ...] = ()
    trimmed: int = 0
    window: int | None = None


@dataclass(frozen=True)
class Usage:
    """Tokens a request (or, added up, a turn or session) used."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.output_tokens + other.output_tokens,
            self.reasoning_output_tokens + other.reasoning_output_tokens,
            self.total_tokens + other.total_tokens,
        )


@dataclass(frozen=True)
class FileDiff:
    """One file a turn changed: its path (relative to the working folder when inside it),
    ``added``, ``modified`` or ``deleted``, and a unified diff (or a sentence saying why
    there is none: a binary file, one too large to keep)."""

    path: str
    status: str
    diff: str


@dataclass(frozen=True)
class TurnDiff:
    """The files the turn changed, with their diffs, emitted before the turn's end."""

    turn: int
    files: tuple[FileDiff, ...]


@dataclass(frozen=True)
class CellsEdited:
    """The turn's edits to the open notebook, made through its editor's document: no
    file changed, so :class:`TurnDiff` has none of them. One dict each, as the session
    file keeps it (``edit``, ``path``, ``cell_id``, ``position`` from 1, ``before`` and
    ``after`` sources): emitted before the turn's end."""

    turn: int
    cells: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class ModuleShadowed:
    """A file the turn left in the working folder shadows a module Python imports: the
    next kernel started there (and any Python) would run it, outside the sandbox.
    ``path`` as shown (relative to the working folder); ``undoable``: it is one of the
    turn's changes, so ``%agent undo`` takes it back."""

    path: str
    module: str
    undoable: bool = True


@dataclass(frozen=True)
class TurnFinished:
    """The turn ended with the model's final answer; ``context`` is how full the
    model's window is (tokens, and the window when known)."""

    final_text: str
    usage: Usage = field(default_factory=Usage)
    context: tuple[int, int | None] = (0, None)


@dataclass(frozen=True)
class TurnFailed:
    """The turn stopped on an error, said in ``message``."""

    message: str
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class CellPlaced:
    """Where an ``edit_notebook`` call acts, as a person finds it in the notebook: the
    cell's position and first line (``cell 4 ("import pandas as pd")``), since the id
    the model names it by is one JupyterLab never shows."""

    call_id: str
    place: str


@dataclass(frozen=True)
class GradedCellsNoted:
    """Cells nbgrader grades that a call showed the model or changed: the notebook (as
    the call named it) and one note per cell (``session``, ``time``, ``grade_id``,
    ``action``). Front ends keep them with the turn's saved output, which every setup
    saves with the notebook, beside the notebook's own ``graded_turns`` where a tool can
    write those (see :mod:`agent_magics.tools.notebook.graded`)."""

    call_id: str
    notebook: str
    notes: tuple[Mapping[str, str], ...]


@dataclass(frozen=True)
class TurnAbortedEvent:
    """The turn stopped before its end: ``reason`` is ``interrupted`` or why it was aborted."""

    reason: str


@dataclass(frozen=True)
class AgentSpawned:
    """The parent's ``spawn_agent`` call ``call_id`` started sub-agent ``agent_id`` (its
    ``nickname``; ``depth`` 1 for a child of the main agent) on ``prompt``. The child's
    own events follow, each wrapped in :class:`AgentEvent`."""

    call_id: str
    agent_id: str
    nickname: str
    depth: int
    prompt: str


@dataclass(frozen=True)
class AgentEvent:
    """An event of sub-agent ``agent_id``, as that child's session emitted it (a
    grandchild's arrives wrapped twice). A child's approval questions reach the parent's
    approver with the child's path in ``ApprovalRequest.agents`` and a ticket of their
    own, so the cards of several agents never answer for each other."""

    agent_id: str
    event: Event


@dataclass(frozen=True)
class AgentStatusChanged:
    """Sub-agent ``agent_id`` moved to ``status``, one of Codex's: ``pending_init``,
    ``running``, ``completed`` (``final_text`` its last message), ``errored``
    (``final_text`` the error), ``shutdown``, ``not_found``."""

    agent_id: str
    status: str
    final_text: str | None = None


Event = (
    SandboxUnavailable
    | SandboxWeakness
    | ContextWindowNoted
    | McpServerReady
    | McpServerFailed
    | TurnStarted
    | TextDelta
    | AssistantMessage
    | ReasoningSummary
    | ToolCallProposed
    | ApprovalRequested
    | ApprovalDecided
    | ToolCallStarted
    | ToolOutputDelta
    | ToolCallFinished
    | PlanUpdated
    | GoalUpdated
    | ImageViewed
    | WebSearched
    | CellPlaced
    | GradedCellsNoted
    | RetryScheduled
    | ContextCompacted
    | TurnDiff
    | CellsEdited
    | ModuleShadowed
    | TurnFinished
    | TurnFailed
    | TurnAbortedEvent
    | AgentSpawned
    | AgentEvent
    | AgentStatusChanged
)

EventSink = Callable[[Event], None]


def ignore_events(event: Event) -> None:
    """An event sink that drops everything."""
