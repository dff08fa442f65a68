"""``agent-magics exec --json``: the turn as JSON lines, in the event schema of ``codex exec``.

A program that reads ``codex exec --json`` reads this too: the same events, item types,
field names and statuses, item ids ``item_0``, ``item_1``... in the order items first
appear. One object a line on stdout, compact; the human log stays on stderr.

Events: ``thread.started`` (``thread_id``), ``turn.started``, ``item.started`` /
``item.updated`` / ``item.completed`` (``item``), ``turn.completed`` (``usage``:
``input_tokens``, ``cached_input_tokens``, ``cache_write_input_tokens`` (always 0: the
servers' count of it is not kept), ``output_tokens``, ``reasoning_output_tokens``),
``turn.failed`` (``error.message``, after an ``error`` event with the same message),
``error`` (``message``; also a request sent again, as Codex says a reconnection).

Codex's items: ``agent_message`` (``text``), ``reasoning`` (``text``),
``command_execution`` (``command``, ``aggregated_output``, ``exit_code``, ``status``
``in_progress`` / ``completed`` / ``failed`` / ``declined``; a command still running
when its call returned completes when ``write_stdin`` sees it exit, or at the turn's
end), ``file_change`` (``changes``: ``path``, ``kind`` add / delete / update;
``status`` completed / failed, a denied patch failed; only completed, as Codex),
``mcp_tool_call`` (``server``, ``tool``, ``arguments``, ``result`` {``content``,
``structured_content``} or ``error`` {``message``}, ``status``), ``collab_tool_call``
for the sub-agent tools (``tool`` spawn_agent / send_input / wait / close_agent, and
our resume_agent; ``sender_thread_id``, ``receiver_thread_ids``, ``prompt``,
``agents_states``, ``status``), ``web_search`` (``query``, ``action``), ``todo_list``
(``items``: ``text``, ``completed``; started by the first plan, updated by the next,
completed at the turn's end), ``error`` (``message``: a warning, such as no sandbox).

Ours, in the same style: ``tool_call`` for every other tool (read_file, view_image, the
kernel tools such as run_python, a person's functions...: ``tool``, ``arguments``,
``output``, ``status`` as a command's), ``goal`` for the thread's goal as a call or the
token budget left it (``objective``, ``status``, ``token_budget``, ``tokens_used``,
``seconds_used``), ``review`` for ``exec review``'s findings (``findings``,
``overall_correctness``, ``overall_explanation``, ``overall_confidence_score``, in the
shape of Codex's reviews), and a ``thread.compacted`` event (``trigger``, ``phase``,
``tokens_before``, ``tokens_after``) when the conversation was compacted: Codex 0.171
writes no event for that, so it is no item and the ids stay as Codex's. A stopped turn
ends with ``turn.failed`` (Codex writes nothing). A sub-agent's own steps are not
written, as Codex writes none.

:class:`ExecJsonl` is a pure fold: events in, the lines' objects out. Events reach it
with secrets already taken out (the session redacts what it emits).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, TextIO

from agent_magics.events import (
    AgentSpawned,
    AgentStatusChanged,
    ApprovalDecided,
    AssistantMessage,
    ContextCompacted,
    Event,
    GoalUpdated,
    McpServerFailed,
    ModuleShadowed,
    PlanUpdated,
    ReasoningSummary,
    RetryScheduled,
    SandboxUnavailable,
    SandboxWeakness,
    ToolCallFinished,
    ToolCallProposed,
    ToolCallStarted,
    TurnAbortedEvent,
    TurnFailed,
    TurnFinished,
    TurnStarted,
    Usage,
    WebSearched,
)
from agent_magics.protocol.approval import ReviewDecision
from agent_magics.terminal.jsonl_items import (
    COLLAB_FAILURES,
    Call,
    Shell,
    arguments_of,
    classify,
    mcp_outcome,
    patch_changes,
    started_fields,
)
from agent_magics.tools.approval.shadowing import planted_warning
from agent_magics.transcript.blocks import output_text
from agent_magics.transcript.command_result import command_result
from agent_magics.transcript.model import server_notice

if TYPE_CHECKING:
    from agent_magics.agent.session import Session

Line = dict[str, Any]
WARNINGS = (SandboxUnavailable, SandboxWeakness, McpServerFailed)


def json_line(obj: Line) -> str:
    """One event as ``codex exec`` writes it: compact JSON, UTF-8 kept."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def write_lines(lines: list[Line], file: TextIO) -> None:
    """Write and flush at once: a reader follows the turn as it happens."""
    if lines:
        file.write("".join(json_line(line) + "\n" for line in lines))
        file.flush()


def for_session(session: Session) -> ExecJsonl:
    """The fold for ``session``'s turn: its thread, folder and shell."""
    shell = Shell(session.shell.path, session.config.allow_login_shell)
    return ExecJsonl(session.thread_id, str(session.config.cwd), shell)


def usage_object(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "cache_write_input_tokens": 0,
        "output_tokens": usage.output_tokens,
        "reasoning_output_tokens": usage.reasoning_output_tokens,
    }


class ExecJsonl:
    """Folds a turn's events into ``exec --json`` events (see the module docstring).

    ``thread_id``: the session's; ``cwd``: where patch paths are relative to; ``shell``:
    what a shell tool's script runs in, for the command line Codex shows."""

    def __init__(self, thread_id: str, cwd: str, shell: Shell | None = None) -> None:
        self.thread_id, self.cwd, self.shell = thread_id, cwd, shell or Shell()
        self._next = 0
        self._calls: dict[str, Call] = {}
        self._sessions: dict[str, Call] = {}  # commands still running, by process session
        self._todo: dict[str, Any] | None = None
        self._agents: dict[str, str] = {}  # spawned agent by spawn_agent call id
        self._states: dict[str, dict[str, Any]] = {}  # each agent's last known status

    def started(self) -> list[Line]:
        return [{"type": "thread.started", "thread_id": self.thread_id}]

    def failed(self, message: str) -> list[Line]:
        """The turn ended on an error a person must see (``message``, one sentence)."""
        error = {"message": message}
        return [
            *self._close_open(),
            {"type": "error", **error},
            {"type": "turn.failed", "error": error},
        ]

    def reviewed(self, text: str, review: dict[str, Any]) -> list[Line]:
        """``exec review``'s ending, before ``turn.completed``: our ``review`` item with
        the findings as the reviewer gave them (Codex's shape), then the review as text in
        an ``agent_message`` (what Codex writes; the reviewer's own message, the JSON, is
        not written)."""
        return [
            self._completed(self._new("review", **review)),
            self._completed(self._new("agent_message", text=text)),
        ]

    def fold(self, event: Event) -> list[Line]:
        if isinstance(event, TurnStarted):
            return [{"type": "turn.started"}]
        if isinstance(event, AssistantMessage):
            return [self._completed(self._new("agent_message", text=event.text))]
        if isinstance(event, ReasoningSummary):
            return [self._completed(self._new("reasoning", text=event.text))]
        if isinstance(event, TurnFinished):
            return [
                *self._close_open(),
                {"type": "turn.completed", "usage": usage_object(event.usage)},
            ]
        if isinstance(event, TurnFailed):
            return self.failed(event.message)
        if isinstance(event, TurnAbortedEvent):
            why = "interrupted" if event.reason == "interrupted" else f"aborted: {event.reason}"
            return self.failed(f"the turn was {why}")
        if isinstance(event, RetryScheduled):
            text = f"Retrying in {event.delay_s:.1f} s (attempt {event.attempt}): {event.reason}"
            return [{"type": "error", "message": text}]
        if isinstance(event, WARNINGS):
            return [self._completed(self._new("error", message=server_notice(event).text))]
        if isinstance(event, ModuleShadowed):
            text = planted_warning(event.path, event.module, event.undoable)
            return [self._completed(self._new("error", message=text))]
        if isinstance(event, ContextCompacted):
            return [
                {
                    "type": "thread.compacted",
                    "trigger": event.trigger,
                    "phase": event.phase,
                    "tokens_before": event.tokens_before,
                    "tokens_after": event.tokens_after,
                }
            ]
        return self._fold_more(event)

    def _fold_more(self, event: Event) -> list[Line]:
        if isinstance(event, PlanUpdated):
            items = [{"text": s.step, "completed": s.status == "completed"} for s in event.plan]
            if self._todo is not None:
                self._todo["items"] = items
                return [{"type": "item.updated", "item": dict(self._todo)}]
            self._todo = self._new("todo_list", items=items)
            return [{"type": "item.started", "item": dict(self._todo)}]
        if isinstance(event, WebSearched):
            action = {"type": "search", "query": event.query} if event.query else {"type": "other"}
            item = self._new("web_search", query=event.query, action=action)
            return [{"type": "item.started", "item": dict(item)}, self._completed(item)]
        if isinstance(event, GoalUpdated):
            item = self._new(
                "goal",
                objective=event.objective,
                status=event.status,
                token_budget=event.token_budget,
                tokens_used=event.tokens_used,
                seconds_used=event.seconds_used,
            )
            return [self._completed(item)]
        if isinstance(event, AgentSpawned):
            self._agents[event.call_id] = event.agent_id
            self._states.setdefault(event.agent_id, {"status": "pending_init", "message": None})
            return []
        if isinstance(event, AgentStatusChanged):
            self._states[event.agent_id] = {"status": event.status, "message": event.final_text}
            return []
        return self._fold_call(event)

    # -- tool calls ---------------------------------------------------------------------

    def _fold_call(self, event: Event) -> list[Line]:
        if isinstance(event, ToolCallProposed):
            self._calls[event.call_id] = classify(event, self.shell)
            return []
        call = self._calls.get(getattr(event, "call_id", ""))
        if call is None:
            return []
        if isinstance(event, ToolCallStarted):
            return self._start(call)
        if isinstance(event, ApprovalDecided):
            call.denied = event.decision in (ReviewDecision.DENIED, ReviewDecision.ABORT)
            return []
        if isinstance(event, ToolCallFinished):
            del self._calls[event.call_id]
            return self._finish(call, event)
        return []

    def _start(self, call: Call) -> list[Line]:
        found = started_fields(call, self.thread_id)
        if found is None:
            return []
        call.item = self._new(found[0], **found[1])
        return [{"type": "item.started", "item": dict(call.item)}]

    def _finish(self, call: Call, event: ToolCallFinished) -> list[Line]:
        ok = event.success and not event.stopped
        if call.kind == "patch":
            changes = patch_changes(call.patch[0], self._folder(call)) if call.patch else []
            status = "completed" if ok and not call.denied else "failed"
            return [self._completed(self._new("file_change", changes=changes, status=status))]
        if call.kind == "silent":
            return self._stdin(call, event) if call.tool == "write_stdin" else []
        if not call.item:  # never started: nothing to complete
            return []
        item = call.item
        if call.kind == "command":
            return self._command_done(call, event)
        if call.kind == "mcp":
            item["result"], item["error"] = mcp_outcome(event.output, event.success)
            item["status"] = "completed" if ok and item["error"] is None else "failed"
        elif call.kind == "collab":
            self._collab_done(call, ok)
        else:
            item["output"] = output_text(event.output)
            item["status"] = "declined" if call.denied else "completed" if ok else "failed"
        return [self._completed(item)]

    def _command_done(self, call: Call, event: ToolCallFinished) -> list[Line]:
        item, run = call.item, command_result(call.tool, event.output)
        if call.denied:
            item["status"] = "declined"
            return [self._completed(item)]
        if run is None:
            item["aggregated_output"], item["status"] = output_text(event.output), "failed"
            return [self._completed(item)]
        item["aggregated_output"] = run.output
        if run.exit_code is None and run.session_id is not None and not event.stopped:
            self._sessions[run.session_id] = call  # still running: write_stdin ends it
            return []
        item["exit_code"] = run.exit_code
        done = run.exit_code == 0 and not event.stopped
        item["status"] = "completed" if done else "failed"
        return [self._completed(item)]

    def _stdin(self, call: Call, event: ToolCallFinished) -> list[Line]:
        args = arguments_of(call.arguments)
        session = str(args.get("session_id")) if isinstance(args, dict) else ""
        run = command_result("write_stdin", event.output)
        running = self._sessions.get(session)
        if running is None or run is None:
            return []
        running.item["aggregated_output"] += run.output
        if run.exit_code is None:
            return []
        del self._sessions[session]
        running.item["exit_code"] = run.exit_code
        running.item["status"] = "completed" if run.exit_code == 0 else "failed"
        return [self._completed(running.item)]

    def _collab_done(self, call: Call, ok: bool) -> None:
        item = call.item
        if call.tool == "spawn_agent":
            agent = self._agents.get(call.call_id)
            item["receiver_thread_ids"] = [agent] if agent else []
            ok = ok and agent is not None
        states = {a: self._states[a] for a in item["receiver_thread_ids"] if a in self._states}
        item["agents_states"] = states
        failed = any(s["status"] in COLLAB_FAILURES for s in states.values())
        item["status"] = "completed" if ok and not failed else "failed"

    # -- items --------------------------------------------------------------------------

    def _new(self, kind: str, **fields: Any) -> dict[str, Any]:
        item = {"id": f"item_{self._next}", "type": kind, **fields}
        self._next += 1
        return item

    def _completed(self, item: dict[str, Any]) -> Line:
        return {"type": "item.completed", "item": dict(item)}

    def _folder(self, call: Call) -> str:
        cd = call.patch[1] if call.patch else None
        return self.cwd if cd is None else os.path.join(self.cwd, cd)

    def _close_open(self) -> list[Line]:
        """At the turn's end, as Codex: the plan completes, and so does every command
        still running (with no exit code)."""
        lines = []
        if self._todo is not None:
            lines.append(self._completed(self._todo))
            self._todo = None
        for call in self._sessions.values():
            call.item["status"] = "completed"
            lines.append(self._completed(call.item))
        self._sessions.clear()
        return lines
