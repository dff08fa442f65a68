"""What keeps a session's file up to date: it listens to the session's events and is
told when items join its history (``Session.on_history``), and writes each at once.

A turn whose settings differ from the last ones written (a cell's ``-a untrusted -s
read-only`` applies to the session in place) first gets a ``settings`` line, so a
resumed session takes the settings its last turns ran with, not those of its start."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.events import (
    ApprovalDecided,
    CellsEdited,
    ContextCompacted,
    Event,
    ToolCallFinished,
    ToolCallProposed,
    TurnAbortedEvent,
    TurnDiff,
    TurnFinished,
    TurnStarted,
    Usage,
)
from agent_magics.store.agent_records import AgentRecords
from agent_magics.store.log import (
    COMPACTED,
    ROLLBACK,
    SETTINGS,
    SessionInUse,
    SessionLog,
    config_record,
    now_iso,
)
from agent_magics.store.readback import RESUMED_SETTINGS
from agent_magics.tools.goal_state import goal_record

if TYPE_CHECKING:
    from agent_magics.config import SessionConfig
    from agent_magics.store.live_session import RecordedSession
    from agent_magics.store.resume import Resume

_log = logging.getLogger("agent_magics")


def usage_record(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "output_tokens": usage.output_tokens,
        "reasoning_output_tokens": usage.reasoning_output_tokens,
        "total_tokens": usage.total_tokens,
    }


def restored_fields(config: SessionConfig) -> dict[str, Any]:
    """The settings as saved, only the fields a resumed session takes from them."""
    saved = config_record(config)
    return {k: saved.get(k) for k in RESUMED_SETTINGS}


class SessionRecorder:
    """Writes ``session`` to ``folder/<id>.jsonl`` while it runs (the id is the session's
    ``thread_id``). ``turns``: how many turns the file already holds; ``resumed``: the
    file already holds the history the session has (a resumed session, or the same
    conversation after its settings changed), so it is not written again (a foreign
    history copied in would come out under this user's seal); ``resume``: a person
    resumed it (``%agent resume``), which its file notes with the time."""

    def __init__(
        self,
        session: RecordedSession,
        folder: Path,
        *,
        turns: int = 0,
        resumed: bool = False,
        resume: bool = False,
    ) -> None:
        self.session = session
        self.folder = folder
        self.log = SessionLog.open(
            folder, session.thread_id, session.config, session.redact.text, resume=resume
        )
        self._settings = restored_fields(session.config)  # as the settings line has them
        self.turn = turns
        self._written = len(session.history) if turns or resumed else 0
        self._in_turn = False
        self._tools: dict[str, str] = {}
        self._turn_usage = Usage()
        self._agents = AgentRecords(session, self.write)  # sub-agents, for reading back
        self._unsubscribe = session.subscribe(self._on_event)
        session.on_history = self.sync

    @property
    def id(self) -> str:
        return self.log.id

    def write(self, record: dict[str, Any]) -> None:
        """Add a record of the current turn (``turn`` is filled in when absent)."""
        self.log.write({**record, "turn": record.get("turn", self.turn)})

    def sync(self) -> None:
        """Write the history items not yet written (only within a turn: the items that
        open a turn are written after its ``turn_started``)."""
        history = self.session.history
        if not self._in_turn:
            return
        if self._written > len(history) and self.session.thread_id == self.log.id:
            # A failed turn taken back: reading the file drops those items too.
            taken = self._written - len(history)
            self.log.write({"type": ROLLBACK, "turn": self.turn, "items": taken})
            self._written = len(history)
        elif self._written > len(history):  # the conversation was reset
            self._written = 0
        for item in history[self._written :]:
            self.log.write({"type": "item", "turn": self.turn, "item": item.wire()})
        self._written = len(history)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, TurnStarted):
            self._start(event.prompt, event.number)
            return
        if isinstance(event, ContextCompacted):  # before sync: the history was replaced
            self._compacted(event)
            return
        self.sync()
        self._agents.on_event(event)
        if isinstance(event, ToolCallProposed):
            self._tools[event.call_id] = event.tool_name
        elif isinstance(event, ApprovalDecided):
            self.write(
                {
                    "type": "decision",
                    "call_id": event.call_id,
                    "tool": self._tools.get(event.call_id, ""),
                    "decision": event.decision.value,
                    "by": "policy" if event.cached else "user",
                }
            )
        elif isinstance(event, ToolCallFinished):
            self.write(
                {
                    "type": "tool_finished",
                    "call_id": event.call_id,
                    "tool": event.tool_name,
                    "status": "ok" if event.success else "failed",
                    "duration_s": round(event.duration_s, 3),
                }
            )
        elif isinstance(event, TurnFinished):
            self._end("done", event.usage)
        elif isinstance(event, TurnAbortedEvent):
            self._end("aborted", None, event.reason)
        elif isinstance(event, TurnDiff):
            files = [{"path": f.path, "status": f.status, "diff": f.diff} for f in event.files]
            self.write({"type": "turn_diff", "files": files})
        elif isinstance(event, CellsEdited):  # the open notebook's cells: no file changed
            self.write({"type": "cell_edits", "cells": list(event.cells)})

    def _compacted(self, event: ContextCompacted) -> None:
        """The history from now on is the compacted one: a resume reads it from here."""
        history = self.session.history
        self.write(
            {
                "type": COMPACTED,
                "time": now_iso(),
                "trigger": event.trigger,
                "phase": event.phase,
                "tokens_before": event.tokens_before,
                "tokens_after": event.tokens_after,
                "summary": event.summary,
                "kept_messages": len(event.kept),
                "window": event.window,
                "replacement_history": [item.wire() for item in history],
            }
        )
        self._written = len(history)

    def _start(self, prompt: str, number: int = 0) -> None:
        if self._in_turn:  # the turn before failed without telling
            self._end("failed", None, "the turn ended without a result")
        if self.session.thread_id != self.log.id:  # a new conversation: a new file
            self.log.close()
            try:
                self.log = SessionLog.open(
                    self.folder,
                    self.session.thread_id,
                    self.session.config,
                    self.session.redact.text,
                )
            except OSError as exc:  # the closed log drops what is written
                _log.warning("Cannot save the session in %s: %s", self.folder, exc)
            self._settings = restored_fields(self.session.config)
            self.turn, self._written = 0, 0
        settings = restored_fields(self.session.config)
        if settings != self._settings:
            self.log.write({"type": SETTINGS, "time": now_iso(), "config": settings})
            self._settings = settings
        self.turn = number or self.turn + 1  # the session's count, carried on by a resume
        self._in_turn = True
        self.log.write(
            {"type": "turn_started", "turn": self.turn, "time": now_iso(), "prompt": prompt}
        )
        self.sync()

    def fail(self, message: str) -> None:
        """The turn ended with an error (a front end says it: the session does not)."""
        if self._in_turn:
            self.sync()
            self._end("failed", None, message)

    def _end(self, status: str, usage: Usage | None, error: str | None = None) -> None:
        if not self._in_turn:
            return
        self.sync()
        self._in_turn = False
        record: dict[str, Any] = {"type": "turn_ended", "turn": self.turn, "time": now_iso()}
        record["status"] = status
        record["usage"] = usage_record(usage or Usage())
        record["error"] = error
        record["session_tokens"] = self.session.usage.total_tokens
        record["context_tokens"] = self.session.context.tokens  # the next compaction's count
        record["context_full"] = self.session.context.full
        record["goal"] = goal_record(self.session.services)  # restored on resume
        self.log.write(record)
        self.log.sync()

    def close(self) -> None:
        self._unsubscribe()
        if self.session.on_history == self.sync:
            self.session.on_history = None
        self.log.close()


def saved_session(
    session: RecordedSession,
    folder: Path | None,
    resume: Resume | None,
    say: Callable[[str], None] | None = None,
) -> SessionRecorder | None:
    """``session`` made the saved one ``resume`` holds, when resuming (its history, id
    and counts), then its recorder in ``folder`` (:func:`record_session`)."""
    if resume is not None:
        from agent_magics.store.resume import continue_in

        continue_in(session, resume)
    resumed = resume is not None
    turns = resume.turns if resume is not None else 0
    return record_session(session, folder, turns=turns, resumed=resumed, resume=resumed, say=say)


def record_session(
    session: RecordedSession,
    folder: Path | None,
    *,
    turns: int = 0,
    resumed: bool = False,
    resume: bool = False,
    say: Callable[[str], None] | None = None,
) -> SessionRecorder | None:
    """A recorder for ``session`` in ``folder`` (None: not saved), or None when the file
    cannot be made (a warning) or another kernel is writing it (``say`` tells the person
    so, else a warning): the session runs without it."""
    if folder is None:
        return None
    try:
        return SessionRecorder(session, folder, turns=turns, resumed=resumed, resume=resume)
    except SessionInUse as exc:
        (say or _log.warning)(f"This session is not saved: {exc}.")
        return None
    except OSError as exc:
        _log.warning("Cannot save the session in %s: %s", folder, exc)
        return None
