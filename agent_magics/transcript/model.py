"""The transcript of a turn as plain data, built by folding the session's events.

Every view reads this one model: the live cards, the static transcript of headless
runs, and a saved session read back (:mod:`.saved` turns its lines into the same
events), which the exports, ``%agent history`` render. :meth:`Transcript.apply` returns
the block an event changed, so a view redraws only that block. A tool call's block and
the sub-agents it started (each with a transcript of its own) are here, beside the
transcript that holds them; the other blocks are in :mod:`.blocks`, and their names,
like those of the lines about the session's machinery (:mod:`.notices`), are also this
module's.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from agent_magics.events import (
    AgentEvent,
    AgentSpawned,
    AgentStatusChanged,
    ApprovalDecided,
    ApprovalRequested,
    AssistantMessage,
    CellPlaced,
    ContextCompacted,
    Event,
    GoalUpdated,
    GradedCellsNoted,
    ImageViewed,
    ModuleShadowed,
    PlanUpdated,
    ReasoningSummary,
    RetryScheduled,
    TextDelta,
    ToolCallFinished,
    ToolCallProposed,
    ToolCallStarted,
    ToolOutputDelta,
    TurnAbortedEvent,
    TurnDiff,
    TurnFailed,
    TurnFinished,
    TurnStarted,
    Usage,
    WebSearched,
)
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision
from agent_magics.tools.approval.shadowing import planted_warning
from agent_magics.transcript.blocks import (
    AGENT_LIVE,
    OPEN_STATUSES,
    CompactionBlock,
    DiffBlock,
    NoticeBlock,
    TextBlock,
    ToolStatus,
    TurnStatus,
    output_parts,
    output_text,
)
from agent_magics.transcript.command_result import command_result
from agent_magics.transcript.goal_text import goal_line
from agent_magics.transcript.notices import SERVER_NOTICES, compacted_line, server_notice

__all__ = [
    "OPEN_STATUSES",
    "AgentRun",
    "Block",
    "CompactionBlock",
    "DiffBlock",
    "NoticeBlock",
    "TextBlock",
    "ToolBlock",
    "ToolStatus",
    "Transcript",
    "compacted_line",
    "output_parts",
    "server_notice",
]


@dataclass
class AgentRun:
    """A sub-agent a ``spawn_agent`` call started: who it is, its task, its status
    (Codex's: ``pending_init``, ``running``, ``completed``, ``errored``, ``shutdown``,
    ``not_found``; ``final_text`` its answer or error) and its own transcript, nested
    in the card of the call that spawned it (a grandchild nests in the child's)."""

    agent_id: str
    nickname: str
    depth: int
    prompt: str
    transcript: Transcript
    status: str = "pending_init"
    final_text: str | None = None

    @property
    def task_line(self) -> str:
        """The first line of its task, as a header shows it."""
        lines = self.prompt.strip().splitlines()
        return lines[0] if lines else ""


@dataclass
class ToolBlock:
    """One tool call and everything known about it so far.

    It keeps both what a person sees (``output``: the text, ``images`` apart) and what
    the model read (``raw_output``: images as ``[image]``), the call's arguments as
    written and parsed, and when it ran: ``_agent`` (the turn as data) reads the same
    blocks the cards draw."""

    call_id: str
    tool_name: str
    arguments: str
    kind: str = "function"
    status: ToolStatus = "queued"
    request: ApprovalRequest | None = None
    decision: ReviewDecision | None = None
    remembered: bool = False
    decided_by_policy: bool = False
    live_output: str = ""
    output: str | None = None
    images: list[str] = field(default_factory=list)
    plan: PlanUpdated | None = None
    goal: GoalUpdated | None = None  # the goal as a create, update or get_goal call left it
    image: ImageViewed | None = None
    duration_s: float | None = None
    success: bool | None = None  # the tool's own answer (a command may still exit 1)
    waited_s: float = 0.0  # of ``duration_s``, the time its questions waited for a person
    cell_place: str | None = None  # an edit_notebook call's cell, as a person finds it
    server: str | None = None  # an MCP tool's server and own name
    mcp_tool: str | None = None
    raw_output: str | None = None  # the output as the model read it, images as [image]
    started: float | None = None  # when it began and ended to run, time.monotonic()
    ended: float | None = None
    answers: int = 0  # approval answers: a command the sandbox refused is asked again
    agents: list[AgentRun] = field(default_factory=list)  # what a spawn_agent call started

    @property
    def parsed_arguments(self) -> Any:
        """The arguments parsed from JSON, or the text as it came when it is not JSON."""
        try:
            return json.loads(self.arguments)
        except (json.JSONDecodeError, RecursionError):
            return self.arguments

    @property
    def label(self) -> str:
        """``server · tool`` for an MCP tool, else the tool's name."""
        if self.server is not None and self.mcp_tool is not None:
            return f"{self.server} · {self.mcp_tool}"
        return self.tool_name


Block = TextBlock | ToolBlock | NoticeBlock | DiffBlock


SENT = "Message sent to it: "
"""How a message sent to a sub-agent (send_input) reads in its nested transcript."""


@dataclass
class Transcript:
    """Blocks in the order they happened, plus the state of the turn as a whole.

    ``policy_note`` is set by a front end that answers approvals without a person
    (a headless run); cards then say that the policy decided.
    """

    blocks: list[Block] = field(default_factory=list)
    status: TurnStatus = "starting"
    usage: Usage | None = None
    context: tuple[int, int | None] | None = None  # the window's fill at the turn's end
    message: str = ""
    policy_note: str | None = None
    number: int = 0  # the turn's number in its session, its prompt and when it started
    prompt: str | None = None
    started: str | None = None
    final_text: str | None = None  # the model's final answer, once the turn finished
    undone: list[str] = field(default_factory=list)  # the files an undo put back
    undone_cells: list[str] = field(default_factory=list)  # and the open notebook's cells
    nested: bool = False  # a sub-agent's: each later turn starts with a message sent to it
    graded: list[dict[str, str]] = field(default_factory=list)  # graded cells it touched
    _tools: dict[str, ToolBlock] = field(default_factory=dict)
    _agents: dict[str, tuple[AgentRun, ToolBlock]] = field(default_factory=dict)

    def tool(self, call_id: str) -> ToolBlock | None:
        return self._tools.get(call_id)

    def agent(self, agent_id: str) -> AgentRun | None:
        """The sub-agent this turn spawned under that id (not a grandchild)."""
        found = self._agents.get(agent_id)
        return found[0] if found is not None else None

    @property
    def tools(self) -> list[ToolBlock]:
        return [b for b in self.blocks if isinstance(b, ToolBlock)]

    def graded_notes(self) -> list[dict[str, str]]:
        """The graded cells this turn and its helpers read or changed, one note each
        (``notebook``, ``session``, ``time``, ``grade_id``, ``action``), in order."""
        notes = list(self.graded)
        for run, _ in self._agents.values():
            notes += run.transcript.graded_notes()
        return notes

    def _open_text(self) -> TextBlock | None:
        last = self.blocks[-1] if self.blocks else None
        return last if isinstance(last, TextBlock) and not last.done else None

    def add(self, block: Block) -> Block:
        """Add a block no event makes (a saved context message, an info line)."""
        return self._add(block)

    def _add(self, block: Block) -> Block:
        self.blocks.append(block)
        return block

    def _refresh_status(self) -> None:
        if self.status in ("running", "waiting"):
            waiting = any(t.status == "waiting" for t in self._tools.values()) or any(
                r.transcript.status == "waiting" for r, _ in self._agents.values()
            )
            self.status = "waiting" if waiting else "running"

    def apply(self, event: Event) -> Block | None:
        """Fold one event in; return the block it changed (``None``: only the status)."""
        changed = self._apply(event)
        self._refresh_status()
        return changed

    def _apply(self, event: Event) -> Block | None:
        if isinstance(event, TurnStarted):
            later = self.status != "starting" or event.prompt != self.prompt
            if self.nested and self.prompt is not None and later:
                self.status, self.prompt = "running", event.prompt  # (send_input's message)
                return self._add(NoticeBlock("info", f"{SENT}{event.prompt}"))
            self.status, self.prompt = "running", event.prompt
            return None
        if isinstance(event, TextDelta):
            block = self._open_text() or self._add(TextBlock())
            assert isinstance(block, TextBlock)
            block.text += event.delta
            return block
        if isinstance(event, AssistantMessage):
            block = self._open_text() or self._add(TextBlock())
            assert isinstance(block, TextBlock)
            block.text, block.done = event.text, True
            return block
        if isinstance(event, ReasoningSummary):
            return self._add(NoticeBlock("reasoning", event.text))
        if isinstance(event, ContextCompacted):
            line = compacted_line(event)
            return self._add(CompactionBlock("info", line, summary=event.summary, kept=event.kept))
        if isinstance(event, RetryScheduled):
            text = f"Retrying in {event.delay_s:.1f} s (attempt {event.attempt}): {event.reason}"
            return self._add(NoticeBlock("retry", text))
        if isinstance(event, SERVER_NOTICES):
            return self._add(server_notice(event))
        if isinstance(event, TurnDiff):
            return self._add(DiffBlock(event.files))
        if isinstance(event, GradedCellsNoted):
            self.graded += [{"notebook": event.notebook, **note} for note in event.notes]
            return None
        if isinstance(event, ModuleShadowed):
            text = planted_warning(event.path, event.module, event.undoable)
            return self._add(NoticeBlock("error", text))
        if isinstance(event, TurnFinished):
            self.status, self.usage, self.final_text = "done", event.usage, event.final_text
            self.context = event.context
            return None
        if isinstance(event, TurnFailed):
            # a turn that failed before any token was counted gets no "Tokens: 0" line
            usage = event.usage if event.usage.total_tokens else None
            self.status, self.message, self.usage = "failed", event.message, usage
            self._close_open_tools()
            return None
        if isinstance(event, TurnAbortedEvent):
            self.status, self.message = "aborted", event.reason
            self._close_open_tools()
            return None
        if isinstance(event, (AgentSpawned, AgentEvent, AgentStatusChanged)):
            return self._apply_agent(event)
        if isinstance(event, GoalUpdated) and event.call_id not in self._tools:
            return self._add(NoticeBlock("info", goal_line(event)))  # the budget ran out
        return self._apply_tool(event)

    def _apply_agent(self, event: AgentSpawned | AgentEvent | AgentStatusChanged) -> Block | None:
        """A sub-agent's life, nested in the card of the call that spawned it (that card
        is the block returned: it redraws its children)."""
        if isinstance(event, AgentSpawned):
            tool = self._tools.get(event.call_id)
            if tool is None:  # no card for the call (an odd saved file): one of its own
                tool = ToolBlock(event.call_id, "spawn_agent", "{}", status="done")
                self._tools[event.call_id] = tool
                self._add(tool)
            child = Transcript(policy_note=self.policy_note, prompt=event.prompt, nested=True)
            run = AgentRun(event.agent_id, event.nickname, event.depth, event.prompt, child)
            tool.agents.append(run)
            self._agents[event.agent_id] = (run, tool)
            return tool
        found = self._agents.get(event.agent_id)
        if found is None and isinstance(event, AgentStatusChanged) and event.status == "shutdown":
            return None  # an earlier turn's child closed: the close_agent card says so
        if found is None:  # spawned in an earlier turn, still at work: shown from here on
            self._apply_agent(AgentSpawned(f"earlier:{event.agent_id}", event.agent_id, "", 1, ""))
            found = self._agents[event.agent_id]
        run, tool = found
        if isinstance(event, AgentEvent):
            run.transcript.apply(event.event)
        else:
            run.status = event.status
            if event.final_text is not None:
                run.final_text = event.final_text
            if event.status not in AGENT_LIVE and run.transcript.status in (
                "starting",
                *OPEN_STATUSES,
            ):  # it ended without a turn end of its own (its model failed): not at work
                run.transcript.status = "done"
        return tool

    def _apply_tool(self, event: Event) -> Block | None:
        if isinstance(event, WebSearched):  # run by the server: a card already done
            args = json.dumps({"query": event.query}, ensure_ascii=False)
            block = ToolBlock(event.call_id, "web_search", args, status="done")
            block.output, block.raw_output, block.success = event.sources, event.sources, True
            self._tools[event.call_id] = block
            return self._add(block)
        if isinstance(event, ToolCallProposed):
            block = ToolBlock(event.call_id, event.tool_name, event.arguments, event.kind)
            block.server, block.mcp_tool = event.server, event.mcp_tool
            self._tools[event.call_id] = block
            return self._add(block)
        call_id = getattr(event, "call_id", None)
        if call_id is None and isinstance(event, ApprovalRequested):
            call_id = event.request.call_id
        tool = self._tools.get(str(call_id))
        if tool is None:
            return None
        if isinstance(event, ToolCallStarted):
            tool.status, tool.started = "running", time.monotonic()
        elif isinstance(event, ApprovalRequested):
            tool.status, tool.request, tool.decision = "waiting", event.request, None
        elif isinstance(event, ApprovalDecided):
            self._decide(tool, event)
        elif isinstance(event, ToolOutputDelta):
            tool.live_output += event.chunk
        elif isinstance(event, PlanUpdated):
            tool.plan = event
        elif isinstance(event, GoalUpdated):
            tool.goal = event
        elif isinstance(event, ImageViewed):
            tool.image = event
        elif isinstance(event, CellPlaced):
            tool.cell_place = event.place
        elif isinstance(event, ToolCallFinished):
            tool.output, tool.images = output_parts(event.output)
            tool.raw_output, tool.ended = output_text(event.output), time.monotonic()
            tool.duration_s, tool.success = event.duration_s, event.success
            if event.stopped:
                tool.status = "stopped"
            elif tool.status not in ("denied", "aborted"):
                tool.status = "done" if event.success and not _exited_badly(event) else "failed"
        return tool

    def _decide(self, tool: ToolBlock, event: ApprovalDecided) -> None:
        tool.decision, tool.remembered = event.decision, event.cached
        tool.answers += 1
        tool.waited_s += event.waited_s
        tool.decided_by_policy = self.policy_note is not None and not event.cached
        if event.decision is ReviewDecision.DENIED:
            tool.status = "denied"
        elif event.decision is ReviewDecision.ABORT:
            tool.status = "aborted"
        else:
            tool.status = "running"

    def _close_open_tools(self) -> None:
        for tool in self._tools.values():
            if tool.status in OPEN_STATUSES:
                tool.status = "aborted"

    def fail(self, message: str) -> None:
        """End the turn with a sentence for the person (a setting to fix, a bug)."""
        self.apply(TurnFailed(message, self.usage or Usage()))


def _exited_badly(event: ToolCallFinished) -> bool:
    """Whether the call ran a command that exited with an error: the tool answered (so it
    succeeded as a call), but the card must not head a failed command "done" in green."""
    run = command_result(event.tool_name, event.output)
    return run is not None and run.exit_code not in (None, 0)
