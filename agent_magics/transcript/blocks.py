"""The blocks a turn's transcript is made of, as plain data (:mod:`.model` folds events
into them; every view draws them).

A tool block keeps both what a person sees (``output``: the text, ``images`` apart) and
what the model read (``raw_output``: images as ``[image]``), the call's arguments as
written and parsed, and when it ran: ``_agent`` (the turn as data) reads the same
blocks the cards draw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agent_magics.events import FileDiff, GoalUpdated, ImageViewed, PlanUpdated
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision

if TYPE_CHECKING:
    from agent_magics.transcript.model import Transcript

ToolStatus = Literal[
    "queued", "running", "waiting", "done", "failed", "denied", "aborted", "stopped"
]
TurnStatus = Literal["starting", "queued", "running", "waiting", "done", "failed", "aborted"]
NoticeKind = Literal["reasoning", "retry", "info", "error", "context", "item"]
"""``context``: a message sent beside the prompt; ``item``: a saved item of a kind no
view draws (its ``text`` is the type). Both come only from a saved session."""

OPEN_STATUSES = ("queued", "running", "waiting")
AGENT_LIVE = ("pending_init", "running")
"""A sub-agent's statuses (Codex's) while it still works."""


@dataclass
class TextBlock:
    """Assistant text, streamed in as deltas; ``done`` once the message is complete."""

    text: str = ""
    done: bool = False


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
    """One tool call and everything known about it so far."""

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


@dataclass
class NoticeBlock:
    """A line between blocks: a reasoning summary, a retry, a note."""

    kind: NoticeKind
    text: str
    logged: bool = False  # also logged as a warning: a terminal, which shows it, need not


@dataclass
class CompactionBlock(NoticeBlock):
    """The conversation compacted: ``text`` is the line that says when and how much;
    ``summary`` what the model wrote (empty when the server keeps it), ``kept`` the
    person's messages kept. Views show the line and fold the rest; a view that knows
    only notices shows the line."""

    summary: str = ""
    kept: tuple[str, ...] = ()

    @property
    def folded_title(self) -> str:
        kept = len(self.kept)
        return f"What the conversation goes on from: the summary and {kept} kept message(s)"


@dataclass
class DiffBlock:
    """The files the turn changed, one unified diff each (:mod:`.turn_diff` draws it)."""

    files: tuple[FileDiff, ...]


Block = TextBlock | ToolBlock | NoticeBlock | DiffBlock


def output_parts(output: Any) -> tuple[str, list[str]]:
    """The text and image URLs of a tool output (a string or a list of content items)."""
    if isinstance(output, str):
        return output, []
    texts: list[str] = []
    images: list[str] = []
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "input_text":
            texts.append(str(item.get("text", "")))
        elif item.get("type") == "input_image" and item.get("image_url"):
            images.append(str(item["image_url"]))
    return "\n".join(texts), images


def output_text(output: Any) -> str:
    """A tool output's text as the model read it (an image as ``[image]``)."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        parts = []
        for item in output:
            if isinstance(item, dict):
                parts.append(str(item.get("text") or f"[{str(item.get('type', '?'))[6:]}]"))
        return "\n".join(parts)
    return str(output)
