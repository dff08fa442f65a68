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

from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import takewhile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.errors import UserError
from agent_magics.events import Usage
from agent_magics.models.secret import REDACTED
from agent_magics.store.index import SessionInfo, list_sessions
from agent_magics.store.log import in_use
from agent_magics.store.readback import META, RESUMED_SETTINGS, LoadedSession, read_session
from agent_magics.store.saved_children import SavedChildren, saved_children
from agent_magics.store.signing import session_key
from agent_magics.tools.goal_state import restore_goal

if TYPE_CHECKING:
    from agent_magics.agent.session import Session

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
            raise UserError(f"No saved session to resume in {folder}.")
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
    """The newest session wholly yours, read and checked line by line (the list checks
    a long file's first and last lines only), and the ids of newer ones passed over
    because lines of them are not yours."""
    key = key if key is not None else session_key()
    sessions = [s for s in list_sessions(folder, key=key) if s.id != current]
    passed = [s.id for s in takewhile(lambda s: not s.verified, sessions)]
    for info in [s for s in sessions if s.verified][:LAST_CHECKED]:
        try:
            loaded = read_session(info.path, key=key)
        except OSError:
            continue
        if loaded.verified:
            return loaded, passed
        passed.append(info.id)
    return None, passed


def load_resume(
    folder: Path, ref: str, *, key: bytes | None = None, current: str | None = None
) -> Resume:
    """Read the session ``ref`` names, for a front end to continue (see :func:`continue_in`);
    ``current``: the session running now, which ``last`` does not mean."""
    key = key if key is not None else session_key()
    notes: list[str] = []
    if (ref or LAST) == LAST:
        found, passed = newest_yours(folder, key=key, current=current)
        if found is None:
            raise UserError(f"No saved session to resume in {folder}.")
        loaded = found
        if passed:
            notes.append(_passed_over(passed))
    else:
        info = find_session(folder, ref, key=key, current=current)
        try:
            loaded = read_session(info.path, key=key)
        except OSError as exc:
            raise UserError(f"Cannot read session {info.id}: {exc}.") from None
    if loaded.id != current and in_use(loaded.path):
        raise UserError(
            f"Session {loaded.id} is being written by another kernel right now; resuming "
            "it here would mix two histories in one file (end it there first: %agent reset "
            "or stop that kernel)."
        )
    settings = resumed_settings(loaded.config)
    turns = [r["turn"] for r in loaded.records if isinstance(r.get("turn"), int)]
    notes = [resuming_line(loaded, max(turns, default=0)), *notes]
    notes += provenance_notes(loaded)
    if loaded.damaged:
        notes.append(
            f"Session {loaded.id} is damaged: {loaded.damaged}; it resumes from the good items."
        )
    if restored := restored_line(settings):
        notes.append(restored)
    children = saved_children(loaded.records, key)
    if children.refused:
        notes.append(_refused_children(len(children.refused)))
    ended = [r for r in loaded.records if r["type"] == "turn_ended"]
    tokens = ended[-1].get("session_tokens", 0) if ended else 0
    return Resume(
        loaded,
        settings,
        max(turns, default=0),
        Usage(total_tokens=tokens if isinstance(tokens, int) else 0),
        notes,
        ended[-1].get("goal") if ended else None,
        children,
    )


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


def restored_line(settings: dict[str, Any]) -> str | None:
    """The one line that says which approval policy and sandbox a resume brings back
    (none when the file gives no settings)."""
    policy, sandbox = settings.get("approval_policy"), settings.get("sandbox_mode")
    if policy is None and sandbox is None:
        return None
    return (
        f"Restored the session's latest settings: approval policy {policy or 'default'}, "
        f"sandbox {sandbox or 'default'} (options given now still win)."
    )


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


def _passed_over(ids: list[str]) -> str:
    names = ", ".join(i[:8] for i in ids[:3]) + (" ..." if len(ids) > 3 else "")
    return (
        f"Passed over newer session(s) {names}: lines of them were not written by your "
        "agent_magics (resume one by its id to load its history anyway)."
    )


def resumed_settings(saved: dict[str, Any]) -> dict[str, Any]:
    """The settings a session takes from its signed file. An MCP server whose secrets
    were left out when it was saved is not taken (the one configured now stands)."""
    settings = {k: saved[k] for k in RESUMED_SETTINGS if saved.get(k) is not None}
    servers = settings.get("mcp_servers")
    if isinstance(servers, dict):
        settings["mcp_servers"] = {
            name: server
            for name, server in servers.items()
            if isinstance(server, dict) and not _redacted(server)
        }
    return settings


def _redacted(server: dict[str, Any]) -> bool:
    tables = (server.get("env") or {}, server.get("http_headers") or {})
    return any(REDACTED in str(v) for table in tables for v in table.values())


def continue_in(session: Session, resume: Resume) -> None:
    """Make the new ``session`` the saved one: its history, id, token count and the
    sub-agents it started (closed: ``resume_agent`` reopens them)."""
    session.history = list(resume.loaded.history)
    session.agents.restore(resume.children.children)
    session.thread_id = resume.id
    session.usage = resume.usage
    restore_goal(session.services, resume.goal)  # its usage carries on
