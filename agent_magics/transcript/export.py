"""Export a session as a document: ``.ipynb`` (through nbformat), ``.md`` or ``.html``.

A stored session is read from its file (:func:`~agent_magics.store.log.read_session`),
damaged or not: what it holds is exported and the document says what was skipped. The
live session of a kernel that does not save its sessions is exported from its history,
which does not keep who approved a call or how it ended, so the document says so.

Nothing read from a session file decides where we write: the path is the person's, an
existing file is kept unless ``force``, and the file is written whole (a temporary file
renamed into place), readable by its owner only, like the session file it comes from.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.config import SessionConfig
from agent_magics.errors import UserError
from agent_magics.store.log import SUFFIX, read_session
from agent_magics.transcript.document import SessionDoc
from agent_magics.transcript.saved import fold, history_records

if TYPE_CHECKING:
    from agent_magics.agent.session import Session

FORMATS = (".ipynb", ".md", ".html")
FILE_MODE = 0o600
HISTORY_ONLY_NOTE = (
    "This session was not saved to disk, so who approved each call and how it ended "
    "were not kept; this is its history."
)
USAGE = "usage: export [ID|last] PATH [--force]  (PATH ends in .ipynb, .md or .html)"


def render(doc: SessionDoc, suffix: str) -> str:
    """The document in the format its suffix names."""
    if suffix == ".ipynb":
        from agent_magics.transcript.ipynb import notebook_text

        return notebook_text(doc)
    if suffix == ".md":
        from agent_magics.transcript.export_md import to_markdown

        return to_markdown(doc)
    from agent_magics.transcript.export_html import to_html

    return to_html(doc)


def check_target(path: Path, force: bool) -> str:
    """The format ``path`` asks for; UserError when it names none or exists already."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise UserError(f"cannot export to {path}: the name must end in .ipynb, .md or .html.")
    if (path.exists() or path.is_symlink()) and not force:
        raise UserError(f"{path} exists already; add --force to replace it.")
    if path.is_dir():
        raise UserError(f"{path} is a folder.")
    return suffix


def write_document(doc: SessionDoc, path: Path, *, force: bool = False) -> Path:
    """Render ``doc`` into ``path`` (its suffix names the format); returns the path."""
    suffix = check_target(path, force)
    text = render(doc, suffix)
    folder = path.parent if str(path.parent) else Path()
    if not folder.is_dir():
        raise UserError(f"cannot export to {path}: the folder {folder} does not exist.")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, FILE_MODE)
        if not force and (path.exists() or path.is_symlink()):  # appeared meanwhile
            raise UserError(f"{path} exists already; add --force to replace it.")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def stored_document(file: Path) -> SessionDoc:
    try:
        loaded = read_session(file)
    except OSError as exc:
        raise UserError(f"cannot read the session file {file}: {exc.strerror or exc}.") from exc
    doc = fold(loaded.meta, loaded.records, damaged=loaded.damaged)
    if loaded.meta is None:
        doc.id = loaded.id
    return doc


def live_document(
    history: Iterable[Mapping[str, Any]],
    *,
    session_id: str,
    meta: Mapping[str, Any],
    redact: Callable[[str], str],
) -> SessionDoc:
    """The document of a session that has no file, from its history (wire JSON)."""
    doc = fold({**meta, "id": session_id}, history_records(history), redact=redact)
    doc.note = HISTORY_ONLY_NOTE
    return doc


def session_file(folder: Path | None, which: str) -> Path:
    """The file of saved session ``which``: an id, the start of one, or ``last`` (as
    ``%agent resume`` takes them)."""
    if folder is None:
        raise UserError("sessions are not saved here (the setting sessions_dir is false).")
    from agent_magics.store.resume import find_session

    return find_session(folder, which).path


def parse_export_args(words: list[str]) -> tuple[str | None, Path, bool]:
    """``[ID|last] PATH [--force]`` as (which session or None for the current, path,
    force)."""
    force = "--force" in words
    rest = [w for w in words if w != "--force"]
    if not 1 <= len(rest) <= 2 or any(w.startswith("-") for w in rest):
        raise UserError(USAGE)
    which = rest[0] if len(rest) == 2 else None
    return which, Path(rest[-1]).expanduser(), force


def done_line(path: Path, doc: SessionDoc) -> str:
    turns = f"{len(doc.turns)} turn{'' if len(doc.turns) == 1 else 's'}"
    damaged = f" (the file is damaged: {doc.damaged})" if doc.damaged else ""
    return f"Exported session {doc.id} ({turns}) to {path.resolve()}{damaged}."


def export_session(words: list[str], config: SessionConfig, session: Session | None) -> str:
    """``export [ID|last] PATH [--force]``: a saved session, or without ID the current
    one (from its file when it has one, else from its history). Returns the line that
    says where the document went; UserError with one sentence otherwise."""
    from agent_magics.store.paths import sessions_folder

    which, path, force = parse_export_args(words)
    path = path if path.is_absolute() else config.cwd / path
    check_target(path, force)
    folder = sessions_folder(config)
    if which is not None:
        doc = stored_document(session_file(folder, which))
    elif session is None or not session.history:
        raise UserError("there is no conversation to export yet; name a saved one: " + USAGE)
    elif folder is not None and (folder / f"{session.thread_id}{SUFFIX}").is_file():
        doc = stored_document(folder / f"{session.thread_id}{SUFFIX}")
    else:
        meta = {"started": None, "cwd": str(config.cwd), "config": {"model": config.model}}
        history = [item.wire() for item in session.history]
        doc = live_document(
            history, session_id=session.thread_id, meta=meta, redact=session.redact.text
        )
    return done_line(write_document(doc, path, force=force), doc)
