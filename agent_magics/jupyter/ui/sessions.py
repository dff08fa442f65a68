"""The saved sessions of the ``%%agent`` front end: each session written while it runs,
``%agent sessions`` and ``%agent resume``, and the one line after a kernel restart that
says a previous session can be continued."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_magics.config import SessionConfig
from agent_magics.errors import UserError, for_person
from agent_magics.store.index import SessionInfo, list_sessions
from agent_magics.store.paths import sessions_folder
from agent_magics.store.recorder import SessionRecorder, record_session, restored_fields
from agent_magics.store.resume import LAST, Resume, continue_in, load_resume, resumable
from agent_magics.transcript.calls import one_line

if TYPE_CHECKING:
    from agent_magics.agent.session import Session
    from agent_magics.jupyter.ui.runner import TurnView

PROMPT_CHARS = 48
RESUME_HINT = "%agent resume last"


def sessions_table(sessions: list[SessionInfo]) -> str:
    """What ``%agent sessions`` prints: one line per session, the newest first."""
    if not sessions:
        return for_person("no saved session here.")
    rows = [("id", "started", "last resumed", "model", "turns", "tokens", "first prompt")]
    for s in sessions:
        mark = "" if s.verified else " (not yours: history only)"
        rows.append(
            (
                s.id[:8],
                _when(s.started),
                _when(s.resumed) or "-",
                s.model,
                str(s.turns),
                f"{s.tokens:,}",
                one_line(s.first_prompt, PROMPT_CHARS) + mark,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r[:6], widths, strict=True)) + "  " + r[6]
        for r in rows
    )


def _when(stamp: str) -> str:
    """A saved time (ISO, UTC) as the table shows it."""
    return stamp[:19].replace("T", " ")


class SessionFiles:
    """The file of the controller's session, and a resume waiting for the next turn."""

    def __init__(self) -> None:
        self.recorder: SessionRecorder | None = None
        self.pending: Resume | None = None
        self._hinted = False

    def attach(self, session: Session, old: Session | None, view: TurnView) -> None:
        """Give the new ``session`` its file: the resumed session's, the one of the
        session it replaces (same conversation, new model server), or a new one."""
        folder = sessions_folder(session.config)
        turns = 0
        resumed = old is not None or self.pending is not None
        resume = self.pending is not None  # a person resumed it (not new settings)
        if old is not None:
            session.thread_id = old.thread_id
            turns = self.recorder.turn if self.recorder is not None else 0
        elif self.pending is not None:
            continue_in(session, self.pending)
            turns = self.pending.turns
        elif not self._hinted and folder is not None:
            ours = [s for s in list_sessions(folder) if resumable(s)]
            if ours:
                about = one_line(ours[0].first_prompt, PROMPT_CHARS)
                view.note(f"A previous session ({about!r}) can be continued: {RESUME_HINT}.")
        self._hinted = True
        self.pending = None
        self.close()
        self.recorder = record_session(
            session, folder, turns=turns, resumed=resumed, resume=resume, say=view.note
        )

    def failed(self, message: str) -> None:
        if self.recorder is not None:
            self.recorder.fail(message)

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
            self.recorder = None

    def table(self, config: SessionConfig) -> str:
        folder = sessions_folder(config)
        if folder is None:
            return for_person("sessions are not saved here (sessions_dir).")
        return sessions_table(list_sessions(folder))

    def resume(
        self, config: SessionConfig, ref: str, current: str | None
    ) -> tuple[dict[str, Any], list[str]]:
        """Read the session ``ref`` names for the next turn: the settings it gives (only
        a file this user's agent_magics wrote gives any) and the lines to print."""
        folder = sessions_folder(config)
        if folder is None:
            raise UserError("Sessions are not saved here (sessions_dir), so none can resume.")
        in_force = restored_fields(config)  # what the file may tighten, never loosen
        self.pending = load_resume(folder, ref or LAST, current=current, in_force=in_force)
        notes = [*self.pending.notes, "The next %%agent cell continues it."]
        return self.pending.settings, notes
