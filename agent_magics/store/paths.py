"""Where a session's files go: one place for the session file, its undo copies and the
list of sessions to agree on (and no import of the session files' reader)."""

from __future__ import annotations

from pathlib import Path

from agent_magics.config import SessionConfig

DEFAULT_SESSIONS_DIR = Path(".agent_magics") / "sessions"


def sessions_folder(config: SessionConfig) -> Path | None:
    """Where this session's file goes: ``sessions_dir`` (relative to the working folder),
    or ``.agent_magics/sessions`` there; None when saving is off, or when the default
    folder leads out of the working folder through a symlink (a cloned repository could
    plant one to make us write elsewhere)."""
    chosen = config.sessions_dir
    if chosen is False:
        return None
    if chosen is None:
        folder = config.cwd / DEFAULT_SESSIONS_DIR
        if not folder.resolve().is_relative_to(config.cwd.resolve()):
            return None
        return folder
    return config.cwd / Path(chosen).expanduser()


def undo_folder(config: SessionConfig, session_id: str) -> Path | None:
    """``<sessions folder>/<session id>.undo``, beside the session's file; None when
    sessions are not saved."""
    folder = sessions_folder(config)
    return None if folder is None else folder / f"{session_id}.undo"
