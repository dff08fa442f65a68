"""Our events as ACP ``session/update`` notifications: a pure fold, events in, updates out.

- the model's words stream as ``agent_message_chunk`` (each delta; a message that came
  whole, without deltas, as one chunk), its reasoning summaries as ``agent_thought_chunk``;
- each tool call is a ``tool_call`` when proposed (``pending``: a question may come), a
  ``tool_call_update`` when it starts (``in_progress``), as its output streams, and when
  it ends (``completed`` or ``failed``: a denied, stopped or failed call), with a kind
  (execute, edit, read, search, fetch, think, other), its locations, and for a patch the
  diff of each file (:mod:`.diffs`);
- the plan is ACP's ``plan``; web searches, goals and a compaction are tool calls that
  are done when they appear; warnings (no sandbox, an MCP server that failed) are a line
  of the agent's message;
- a sub-agent's calls are nested: their ids start with the agent's path
  (``<agent id>/<call id>``), their titles with its nickname in brackets, and their
  ``_meta`` names the call that started the agent (``parentToolCallId``);
- the turn's end gives ``usage_update`` (how full the window is, when its size is known).

Events reach the fold with secrets already taken out (the session redacts what it
emits). Output shown in a call is bounded (:data:`MAX_OUTPUT_CHARS`, its tail kept).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.helpers import (
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    PlanEntry,
    TextContentBlock,
    ToolCallLocation,
    ToolKind,
    UsageUpdate,
)

from agent_magics.acp.diffs import locations, patch_diffs
from agent_magics.events import (
    AgentEvent,
    AgentSpawned,
    ApprovalDecided,
    AssistantMessage,
    ContextCompacted,
    Event,
    GoalUpdated,
    McpServerFailed,
    PlanUpdated,
    ReasoningSummary,
    RetryScheduled,
    SandboxUnavailable,
    SandboxWeakness,
    TextDelta,
    ToolCallFinished,
    ToolCallProposed,
    ToolCallStarted,
    ToolOutputDelta,
    TurnAbortedEvent,
    TurnFailed,
    TurnFinished,
    WebSearched,
)
from agent_magics.protocol.approval import ReviewDecision
from agent_magics.transcript.blocks import output_text
from agent_magics.transcript.calls import PATH_ARGS, call_summary, parse_arguments
from agent_magics.transcript.command_result import command_result
from agent_magics.transcript.model import server_notice
from agent_magics.transcript.terminal import call_patch

Update = Any
"""One ``session/update`` payload (the SDK's union of update models)."""
MAX_OUTPUT_CHARS = 20_000
KINDS: dict[str, ToolKind] = {
    "exec_command": "execute",
    "shell": "execute",
    "shell_command": "execute",
    "local_shell": "execute",
    "write_stdin": "execute",
    "run_python": "execute",
    "run_cell": "execute",
    "apply_patch": "edit",
    "edit_notebook": "edit",
    "read_file": "read",
    "view_image": "read",
    "read_notebook": "read",
    "list_variables": "read",
    "inspect_variable": "read",
    "list_dir": "search",
    "grep_files": "search",
    "web_search": "fetch",
    "update_plan": "think",
}
TITLES = {"run_python": "Python", "run_cell": "Cell", "apply_patch": "Edit"}
WARNINGS = (SandboxUnavailable, SandboxWeakness, McpServerFailed)


@dataclass
class _Call:
    tool: str
    output: str = ""
    denied: bool = False
    diffs: list[FileEditToolCallContent] = field(default_factory=list)


class AcpUpdates:
    """The fold for one session whose files are under ``cwd``; ``redact``: the session's
    redactor, for the files' texts the diffs carry (events come redacted already)."""

    def __init__(self, cwd: Path, redact: Callable[[str], str] = str) -> None:
        self.cwd = cwd
        self.redact = redact  # the diffs read files: their secrets go too
        self._calls: dict[str, _Call] = {}
        self._streamed = False  # the message being written came as deltas
        self._spawned: dict[str, str] = {}  # agent id -> the call that started it
        self._names: dict[str, str] = {}  # agent id -> nickname
        self._compacted = 0

    def diffs_of(self, call_id: str) -> list[FileEditToolCallContent]:
        """The diffs of a proposed patch (a permission question shows them)."""
        call = self._calls.get(call_id)
        return list(call.diffs) if call is not None else []

    def fold(self, event: Event, path: tuple[str, ...] = ()) -> list[Update]:
        if isinstance(event, AgentEvent):
            return self.fold(event.event, (*path, event.agent_id))
        if isinstance(event, AgentSpawned):
            self._spawned[event.agent_id] = self._id(path, event.call_id)
            self._names[event.agent_id] = event.nickname
            return []
        if path and isinstance(event, (TextDelta, AssistantMessage, ReasoningSummary)):
            return []  # a helper's words reach the parent as its answer
        if isinstance(event, TextDelta):
            self._streamed = True
            return [update_agent_message_text(event.delta)]
        if isinstance(event, AssistantMessage):
            streamed, self._streamed = self._streamed, False
            return [] if streamed else [update_agent_message_text(event.text)]
        if isinstance(event, ReasoningSummary):
            return [update_agent_thought_text(event.text + "\n")]
        if isinstance(event, RetryScheduled):
            line = f"Retrying in {event.delay_s:.1f} s (attempt {event.attempt}): {event.reason}\n"
            return [update_agent_thought_text(line)]
        if isinstance(event, WARNINGS):
            return [update_agent_message_text(f"\n> {server_notice(event).text}\n\n")]
        if isinstance(event, (TurnAbortedEvent, TurnFailed)) and not path:
            return self._close_open()
        if isinstance(event, TurnFinished):
            used, size = event.context
            if not size:  # the window is not known: no fill to show
                return []
            return [UsageUpdate(session_update="usage_update", used=used, size=size)]
        return self._fold_more(event, path)

    def _fold_more(self, event: Event, path: tuple[str, ...]) -> list[Update]:
        if isinstance(event, PlanUpdated):
            entries = [
                PlanEntry(content=s.step, priority="medium", status=_plan_status(s.status))
                for s in event.plan
            ]
            return [update_plan(entries)]
        if isinstance(event, WebSearched):
            title = f"Searched the web: {event.query}" if event.query else "Searched the web"
            return [self._done(path, event.call_id, title, "fetch", event.sources)]
        if isinstance(event, GoalUpdated):
            title = f"Goal ({event.status}): {event.objective}"
            used = f"{event.tokens_used} tokens, {event.seconds_used} s"
            budget = f" of {event.token_budget}" if event.token_budget else ""
            return [self._done(path, f"goal-{event.call_id}", title, "think", used + budget)]
        if isinstance(event, ContextCompacted):
            title = (
                f"Compacted the conversation ({event.trigger}): "
                f"{event.tokens_before} → {event.tokens_after} tokens"
            )
            return [
                self._done(path, f"compact-{self._compactions()}", title, "think", event.summary)
            ]
        return self._fold_call(event, path)

    # -- tool calls ---------------------------------------------------------------------

    def _fold_call(self, event: Event, path: tuple[str, ...]) -> list[Update]:
        if isinstance(event, ToolCallProposed):
            return [self._proposed(event, path)]
        call_id = self._id(path, getattr(event, "call_id", ""))
        call = self._calls.get(call_id)
        if call is None:
            return []
        if isinstance(event, ToolCallStarted):
            return [update_tool_call(call_id, status="in_progress")]
        if isinstance(event, ApprovalDecided):
            call.denied = event.decision in (ReviewDecision.DENIED, ReviewDecision.ABORT)
            return []
        if isinstance(event, ToolOutputDelta):
            call.output = (call.output + event.chunk)[-MAX_OUTPUT_CHARS:]
            return [update_tool_call(call_id, content=[_text(call.output)])]
        if isinstance(event, ToolCallFinished):
            del self._calls[call_id]
            return [self._finished(call_id, call, event)]
        return []

    def _proposed(self, event: ToolCallProposed, path: tuple[str, ...]) -> Update:
        call_id = self._id(path, event.call_id)
        call = _Call(event.tool_name)
        self._calls[call_id] = call
        patch = call_patch(event.tool_name, event.arguments, event.kind)
        if patch is not None:
            call.diffs = patch_diffs(patch, self.cwd, self.redact)
        where = self._locations(event) if not call.diffs else locations(call.diffs)
        update = start_tool_call(
            call_id,
            self._title(event, path),
            kind=_kind(event),
            status="pending",
            content=list(call.diffs) or None,
            locations=where or None,
            raw_input=parse_arguments(event.arguments) or event.arguments,
        )
        return self._nested(update, path)

    def _finished(self, call_id: str, call: _Call, event: ToolCallFinished) -> Update:
        text = output_text(event.output)
        run = command_result(call.tool, event.output)
        shown = run.output if run is not None else text
        ok = event.success and not event.stopped and not call.denied
        if run is not None and run.exit_code not in (None, 0):
            ok = False
        content: list[Any] = [*call.diffs] if ok else []
        if shown.strip():
            content.append(_text(shown[-MAX_OUTPUT_CHARS:]))
        return update_tool_call(
            call_id,
            status="completed" if ok else "failed",
            content=content or None,
            raw_output={"output": text[-MAX_OUTPUT_CHARS:], "success": event.success},
        )

    def _done(
        self, path: tuple[str, ...], call_id: str, title: str, kind: ToolKind, text: str
    ) -> Update:
        update = start_tool_call(
            self._id(path, call_id),
            self._prefix(path) + title,
            kind=kind,
            status="completed",
            content=[_text(text)] if text else None,
        )
        return self._nested(update, path)

    def _title(self, event: ToolCallProposed, path: tuple[str, ...]) -> str:
        summary = call_summary(event.tool_name, event.arguments, event.kind)
        if event.server is not None:
            name = f"{event.server} · {event.mcp_tool}"
        else:
            name = TITLES.get(event.tool_name, event.tool_name)
        first = summary.splitlines()[0] if summary else ""
        return self._prefix(path) + (f"{name}: {first}" if first else name)

    def _locations(self, event: ToolCallProposed) -> list[ToolCallLocation]:
        args = parse_arguments(event.arguments) or {}
        key = PATH_ARGS.get(event.tool_name)
        value = args.get(key) if key and key != "query" else None
        if not isinstance(value, str):
            return []
        return [ToolCallLocation(path=str(self.cwd / value))]

    def _prefix(self, path: tuple[str, ...]) -> str:
        return "".join(f"[{self._names.get(a, a)}] " for a in path)

    def _nested(self, update: Any, path: tuple[str, ...]) -> Any:
        if path and (parent := self._spawned.get(path[-1])) is not None:
            update.field_meta = {"parentToolCallId": parent}
        return update

    def _close_open(self) -> list[Update]:
        """A turn that stopped or failed: every call still open failed with it."""
        ended = [update_tool_call(call_id, status="failed") for call_id in self._calls]
        self._calls.clear()
        return ended

    def _compactions(self) -> int:
        self._compacted += 1
        return self._compacted

    @staticmethod
    def _id(path: tuple[str, ...], call_id: str) -> str:
        return "/".join([*path, call_id])


def _kind(event: ToolCallProposed) -> ToolKind:
    if event.server is not None:
        return "other"
    return KINDS.get(event.tool_name, "other")


def _plan_status(status: str) -> Any:
    return status if status in ("pending", "in_progress", "completed") else "pending"


def _text(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))
