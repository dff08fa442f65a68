"""Continuing a saved session: which file, which settings, and the session it becomes.

The settings of a file count only when every line of it carries this user's seal
(:mod:`.signing`): a file planted in a cloned repository could otherwise turn approvals
off, lift the sandbox or send the API key to a server of its choosing. Any other file
gives its history only, and only when the person named it by its id; what its foreign
lines hold in developer or system roles is dropped (:mod:`.readback`), and resuming it
does not make it the person's: ``last`` keeps passing over it.

A session whose file another kernel is writing (it holds the file's lock) is not
resumed: the two would append to one file and mix their histories.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.errors import UserError
from agent_magics.events import Usage
from agent_magics.store.index import SessionInfo, list_sessions
from agent_magics.store.log import in_use
from agent_magics.store.readback import COMPACTED, META, LoadedSession, read_session
from agent_magics.store.resumed_settings import (
    DEFAULTS_IN_FORCE,
    held_line,
    restorable,
    restored_line,
    resumed_settings,
)
from agent_magics.store.saved_children import SavedChildren, saved_children
from agent_magics.store.signing import session_key
from agent_magics.tools.goal_state import restore_goal

if TYPE_CHECKING:
    from agent_magics.store.live_session import RecordedSession

LAST = "last"
"""What a resumed session takes from its (signed) file, below the options given now: the
latest values its lines give (``session_meta``, then each ``settings`` line after it)."""


@dataclass
class Resume:
    """A session to continue: its file read back, the settings it gives, what to say."""

    loaded: LoadedSession
    settings: dict[str, Any]
    turns: int
    usage: Usage
    notes: list[str] = field(default_factory=list)
    goal: Any = None  # the thread's goal as the last turn left it (see goal_state)
    children: SavedChildren = field(default_factory=SavedChildren)  # closed sub-agents
    context: tuple[int, bool] = (0, False)
    """How full the window was when the file ended (tokens, said full): a resumed
    conversation over the limit is compacted before its first request."""

    @property
    def id(self) -> str:
        return self.loaded.id


LAST_CHECKED = 5
"""How many of the newest sessions ``last`` reads whole, looking for one wholly yours."""


def find_session(
    folder: Path, ref: str, *, key: bytes | None = None, current: str | None = None
) -> SessionInfo:
    """The session ``ref`` names: ``last`` (the newest one this user's agent_magics
    wrote, other than the ``current`` one, as the list sees it), an id or the start of
    one. Raises UserError with one sentence."""
    sessions = list_sessions(folder, key=key)
    if ref == LAST:
        sessions = [s for s in sessions if s.id != current]
        ours = [s for s in sessions if s.verified]
        if not ours:
            why = others_sessions(folder, sessions)
            raise UserError(why or f"No saved session to resume in {folder}.")
        return ours[0]
    matches = [s for s in sessions if s.id == ref] or [s for s in sessions if s.id.startswith(ref)]
    if not matches:
        raise UserError(f"No saved session {ref!r} in {folder} (%agent sessions lists them).")
    if len(matches) > 1:
        raise UserError(f"{ref!r} starts {len(matches)} session ids; give more of it.")
    return matches[0]


def newest_yours(
    folder: Path, *, key: bytes | None = None, current: str | None = None
) -> tuple[LoadedSession | None, list[str]]:
    """The newest session that can go on here (see :func:`resumable`), read and checked
    line by line (the list checks a long file's first and last lines only), and what to
    say of newer ones passed over: lines of them not yours, or another kernel writing
    them now."""
    key = key if key is not None else session_key()
    sessions = [s for s in list_sessions(folder, key=key) if s.id != current]
    foreign: list[str] = []
    busy: list[str] = []
    found, checked = None, 0
    for info in sessions:
        if not info.verified:
            foreign.append(info.id)
        elif in_use(info.path):
            busy.append(info.id)
        elif checked < LAST_CHECKED:
            checked += 1
            try:
                loaded = read_session(info.path, key=key, whole=False)
            except OSError:
                continue
            if not loaded.verified:
                foreign.append(info.id)
            elif info.answered:
                found = loaded
                break
    return found, [note for note in (_passed_over(foreign), _busy(busy)) if note]


def resumable(info: SessionInfo) -> bool:
    """Whether ``last`` may mean this session: wholly yours (as the list sees it), with
    an answer of the model in it, and not being written by another kernel now."""
    return info.verified and info.answered and not in_use(info.path)


def load_resume(
    folder: Path,
    ref: str,
    *,
    key: bytes | None = None,
    current: str | None = None,
    in_force: dict[str, Any] | None = None,
) -> Resume:
    """Read the session ``ref`` names, for a front end to continue (see :func:`continue_in`);
    ``current``: the session running now, which ``last`` does not mean; ``in_force``: the
    settings in force now (as a session file keeps them; the defaults when not given),
    which the file may tighten but not loosen (see :func:`held_back`)."""
    key = key if key is not None else session_key()
    notes: list[str] = []
    if (ref or LAST) == LAST:
        found, passed = newest_yours(folder, key=key, current=current)
        if found is None:
            listed = [s for s in list_sessions(folder, key=key) if s.id != current]
            why = others_sessions(folder, listed)
            if why is None:
                raise UserError(" ".join([f"No saved session to resume in {folder}.", *passed]))
            raise UserError(" ".join([why, *(note for note in passed if note.endswith(BUSY))]))
        loaded = found
        notes += passed
    else:
        info = find_session(folder, ref, key=key, current=current)
        try:
            loaded = read_session(info.path, key=key, whole=False)
        except OSError as exc:
            raise UserError(f"Cannot read session {info.id}: {exc}.") from None
    if loaded.id != current and in_use(loaded.path):
        raise UserError(
            f"Session {loaded.id} is being written by another kernel right now; resuming "
            "it here would mix two histories in one file (end it there first: %agent reset "
            "or stop that kernel)."
        )
    settings = resumed_settings(loaded.config)
    settings, held = restorable(settings, DEFAULTS_IN_FORCE if in_force is None else in_force)
    turns = [r["turn"] for r in loaded.records if isinstance(r.get("turn"), int)]
    notes = [resuming_line(loaded, max(turns, default=0)), *notes]
    notes += provenance_notes(loaded)
    if loaded.damaged:
        notes.append(
            f"Session {loaded.id} is damaged: {loaded.damaged}; it resumes from the good items."
        )
    if restored := restored_line(settings):
        notes.append(restored)
    if held:
        notes.append(held_line(held))
    children = saved_children(loaded.records, loaded.provenance)
    if children.refused:
        notes.append(_refused_children(len(children.refused)))
    ended = [r for r in loaded.records if r["type"] == "turn_ended"]
    tokens = ended[-1].get("session_tokens", 0) if ended else 0
    # the records are read: a session that goes on holds only its history (a long
    # file's records, kept alive, would slow every garbage collection of the turn)
    context = _context(loaded.records)
    loaded = replace(loaded, records=[])
    return Resume(
        loaded,
        settings,
        max(turns, default=0),
        Usage(total_tokens=tokens if isinstance(tokens, int) else 0),
        notes,
        ended[-1].get("goal") if ended else None,
        children,
        context,
    )


def _context(records: list[dict[str, Any]]) -> tuple[int, bool]:
    """The window's fill the last turn end or compaction recorded."""
    tokens, full = 0, False
    for record in records:
        if record["type"] == "turn_ended":
            tokens, full = record.get("context_tokens", 0), record.get("context_full") is True
        elif record["type"] == COMPACTED:
            tokens, full = record.get("tokens_after", 0), False
    return (tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else 0), full


def _refused_children(count: int) -> str:
    return (
        f"Left out {count} sub-agent(s) of this session: lines of their records were not "
        "written by your agent_magics, so their history is not given back to the model "
        "(resume_agent does not know them)."
    )


def resuming_line(loaded: LoadedSession, turns: int) -> str:
    """``Resuming session <id>: 3 turns, started 2026-11-26 19:40:12 UTC, last used
    2026-11-26 20:01:40 UTC.`` A person knows a session by its turns and when it ran;
    the number of items in its history (messages, calls, outputs) meant nothing to them.
    The start is the file's first line's (as in ``%agent sessions``), the last use when
    the file was last written."""
    said = [f"{turns} turn{'' if turns == 1 else 's'}"]
    started = next((r.get("started") for r in loaded.records if r["type"] == META), None)
    if isinstance(started, str) and started:
        said.append(f"started {started[:19].replace('T', ' ')} UTC")
    try:
        used = datetime.fromtimestamp(loaded.path.stat().st_mtime, UTC)
        said.append(f"last used {used:%Y-%m-%d %H:%M:%S} UTC")
    except OSError:
        pass  # gone since it was read: the rest still holds
    return f"Resuming session {loaded.id}: {', '.join(said)}."


def provenance_notes(loaded: LoadedSession) -> list[str]:
    """What to tell the person about whose lines the file holds."""
    notes = []
    if not loaded.verified:
        whose = (
            f"{loaded.foreign} of its lines were not written by your agent_magics"
            if loaded.foreign
            else "it continues lines that were not written by your agent_magics"
        )
        notes.append(
            f"Session {loaded.id} is not yours: {whose}, so its settings are ignored and "
            "only its history is loaded; resuming it does not make it yours "
            "(%agent resume last passes over it)."
        )
    if loaded.dropped:
        notes.append(
            f"Left out {loaded.dropped} developer, system or unknown item(s) of those "
            "lines: they are not sent to the model as instructions."
        )
    if loaded.interleaved and not loaded.foreign:  # else not being yours says more
        notes.append(
            f"Session {loaded.id} was written by two kernels at once (or edited): its lines "
            "do not follow one another as written, so its history may mix two conversations."
        )
    return notes


TAKE_ONE_DELIBERATELY = (
    "To go on from one of them, read it first (agent-magics export ID notes.md), then "
    "resume it by its id (agent-magics exec --resume ID, or %agent resume ID in a "
    "notebook): only its history is loaded, never its settings, and last keeps passing "
    "over it."
)


def others_sessions(folder: Path, sessions: list[SessionInfo]) -> str | None:
    """Why ``last`` takes none of the ``sessions`` saved in ``folder`` (newest first),
    some being another home's, and how to go on from one on purpose; ``None`` when all
    are this home's."""
    foreign = [s for s in sessions if not s.verified]
    if not foreign:
        return None
    n, k = len(sessions), len(foreign)
    names = ", ".join(s.id[:8] for s in foreign[:3]) + (" ..." if k > 3 else "")
    whose = f"all {k} are" if k == n and k > 1 else "it is" if k == n else f"{k} of them are"
    return (
        f"No saved session to resume in {folder}: {n} {'are' if n > 1 else 'is'} there, "
        f"but {whose} sealed with a key other than this home's (~/.agent_magics/"
        "session_key), that is written on another machine or under another home, so not "
        f"trusted here ({names}). {TAKE_ONE_DELIBERATELY}"
    )


BUSY = "another kernel is writing them now."


def _passed_over(ids: list[str]) -> str:
    if not ids:
        return ""
    names = ", ".join(i[:8] for i in ids[:3]) + (" ..." if len(ids) > 3 else "")
    return (
        f"Passed over newer session(s) {names}: lines of them were not written by your "
        "agent_magics (resume one by its id to load its history anyway)."
    )


def _busy(ids: list[str]) -> str:
    if not ids:
        return ""
    names = ", ".join(i[:8] for i in ids[:3]) + (" ..." if len(ids) > 3 else "")
    return f"Passed over newer session(s) {names}: {BUSY}"


def continue_in(session: RecordedSession, resume: Resume) -> None:
    """Make the new ``session`` the saved one: its history, id, token count and the
    sub-agents it started (closed: ``resume_agent`` reopens them)."""
    session.history = list(resume.loaded.history)
    session.agents.restore(resume.children.children)
    session.thread_id = resume.id
    session.usage = resume.usage
    session.turns = resume.turns  # the next turn's number follows the file's
    session.context.tokens, session.context.full = resume.context
    restore_goal(session.services, resume.goal)  # its usage carries on
