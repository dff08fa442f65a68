"""Notebook documents for the notebook tools: parse, show as numbered cells, edit, write.

Everything goes through nbformat, so an edited notebook keeps its nbformat version and
metadata and is validated before a byte is written. The write is atomic: a temporary
file in the notebook's own folder, renamed over it through that folder's descriptor, so
a reader never sees half a notebook and a folder swapped for a symlink cannot move it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent_magics.apply_patch.files import ConfinedFiles, PlainFiles
from agent_magics.errors import RespondToModel
from agent_magics.tools.notebook.graded import WITHHELD
from agent_magics.tools.truncate import TruncationPolicy, truncate_text

if TYPE_CHECKING:
    from agent_magics.tools.context import SessionServices

MAX_OUTPUT_BYTES = 2000
"""UTF-8 bytes of one cell output's text shown before its middle is cut."""
MAX_SOURCE_BYTES = 20_000
"""UTF-8 bytes of one cell's source shown before its middle is cut."""
SESSION_ENV = "JPY_SESSION_NAME"
"""Set by Jupyter Server in a kernel's environment: the notebook the kernel belongs to."""
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
TEXT_TYPES = ("text/plain", "text/markdown", "text/html", "application/json")
OWN_NOTEBOOK = (
    "This is the notebook this kernel runs in, open in the user's editor, and writing "
    "its file would lose their unsaved edits: say what to change and let the user make "
    "the edit, or edit a copy of the notebook instead."
)

LIVE_NOTE = "the proposed cell is shown to them in the tool's card"


class LiveUnavailable(RespondToModel):
    """The open notebook cannot be changed through its editor; ``reason`` says why, in
    words that finish the sentence of :func:`live_unavailable`. ``maybe``: whether the
    notebook is open at all could not be learned (a server that did not answer), so its
    file is not written either."""

    def __init__(self, reason: str, maybe: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.maybe = maybe


def live_unavailable(path: Path, reason: str, maybe: bool = False) -> str:
    """The one sentence the model gets when the open notebook could not be edited."""
    where = "may be open" if maybe else "is open"
    return (
        f"The notebook was not changed: {path} {where} in the user's editor and {reason}, "
        f"so tell the user what to change by hand ({LIVE_NOTE})."
    )


MetadataChange = Callable[[dict[str, Any]], object]
"""Changes a notebook's metadata (a plain dict) in place."""


class NotebookCells(Protocol):
    """A notebook's cells, read one at a time (what an edit of one cell reads)."""

    def version(self) -> tuple[int, int]:
        """The notebook's ``nbformat`` and ``nbformat_minor``."""
        ...

    def count(self) -> int: ...

    def find(self, wanted: str) -> int | None:
        """Where the cell whose id (as :func:`cell_id` gives it) is ``wanted`` is now."""
        ...

    def ids(self) -> list[str]:
        """Every cell's id, as :func:`cell_id` gives it, in order."""
        ...

    def cell(self, index: int) -> Any:
        """A copy of one cell, as :func:`parse` reads it."""
        ...


class LiveDocument(NotebookCells, Protocol):
    """The open notebook as its editor holds it, unsaved edits included: a front end
    (JupyterLab's collaborative document) gives it; nothing writes the file under it.
    An edit reads it a cell at a time (:class:`NotebookCells`), a read as a whole."""

    def notebook(self) -> Any:
        """The whole notebook now, as :func:`parse` reads it."""
        ...

    async def apply(
        self,
        edit_mode: str,
        index: int | None,
        cell: dict[str, Any] | None,
        note: MetadataChange | None = None,
    ) -> None:
        """Make an edit in one change: ``index`` is the cell replaced or deleted, or the
        one to insert after (``None`` for the top), where this document found it or
        showed it (:meth:`find`, :meth:`cell`, :meth:`notebook`: it may have moved since),
        else the cell at that position now; ``cell`` is the new cell; ``note`` changes
        the notebook's metadata in the same change. Raises :class:`LiveUnavailable` or
        RespondToModel (a cell nbgrader locks is refused here too, whatever was read)."""
        ...

    async def note(self, change: MetadataChange) -> None:
        """Change the notebook's metadata (a note for the teacher), nothing else."""
        ...

    async def close(self) -> None: ...


class LiveNotebook(Protocol):
    """The notebook this kernel belongs to, reached through its editor."""

    async def owns(self, path: Path) -> bool:
        """Whether ``path`` is that notebook (under the name it has now: it may have been
        renamed in the editor since the kernel started)."""
        ...

    async def open(self) -> LiveDocument:
        """Join the editor's document; :class:`LiveUnavailable` when no front end can."""
        ...

    async def close(self) -> None:
        """Leave what :meth:`open` kept for the next calls (the session ended)."""
        ...


class HeldNotebook(LiveNotebook, Protocol):
    """Another notebook a Jupyter server holds open, reached through its document."""

    @property
    def target(self) -> Path:
        """The file the server keeps the document for (resolved when it was found): what
        the writable roots are checked against, whatever the path given names by then."""
        ...


class LiveNotebooks(LiveNotebook, Protocol):
    """The notebook this kernel belongs to, and the others a Jupyter server holds open."""

    async def held_open(self, path: Path) -> HeldNotebook | None:
        """Another notebook ``path`` when a Jupyter server holds it open, reached through
        its editor's document; ``None`` when no server does (its file may be written).
        Raises :class:`LiveUnavailable` when one does, or may, but its document cannot be
        edited."""
        ...


LIVE_KEY = "live_notebooks"
"""The session's state (:meth:`SessionServices.state`) that lists the live notebooks used."""


def used_live(services: SessionServices, live: LiveNotebook) -> LiveNotebook:
    """``live``, noted as used by the session, so the session's end leaves its room."""
    used: list[LiveNotebook] = services.state(LIVE_KEY, list)
    if live not in used:
        used.append(live)
    return live


async def close_live_notebooks(services: SessionServices) -> None:
    """End of the session: leave the rooms its notebook tools kept."""
    used: list[LiveNotebook] = services.state(LIVE_KEY, list)
    while used:
        await used.pop().close()


def nbformat_module() -> Any:
    """nbformat, imported when a notebook is first read or written: with jsonschema's
    format checkers installed (they come with JupyterLab) its import takes about a
    second, which loading the extension must not pay. Typed ``Any``: its reader and
    writer carry no annotations."""
    import nbformat

    return nbformat


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def parse(data: bytes, path: Path) -> Any:
    """The notebook in ``data``, as nbformat reads it (its own version kept)."""
    nbformat = nbformat_module()
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=nbformat.NO_CONVERT)
        nbformat.validate(nb)
    except (UnicodeDecodeError, ValueError, nbformat.ValidationError, KeyError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RespondToModel(f"{path} is not a valid notebook: {first}") from None
    if nb.get("nbformat") != 4:
        raise RespondToModel(f"{path} uses nbformat {nb.get('nbformat')}; only version 4 is read")
    return nb


def read_notebook_file(path: Path) -> Any:
    """Read and parse the notebook at ``path`` (a regular file of bounded size)."""
    try:
        data = PlainFiles().read(str(path))
    except (OSError, ValueError) as exc:
        raise RespondToModel(f"failed to read notebook {path}: {exc}") from None
    return parse(data, path)


def cell_id(nb: Any, index: int) -> str:
    """A cell's id; cells of notebooks older than nbformat 4.5 have none, so their
    position stands in (``cell-<n>``, counted from 1)."""
    found = nb.cells[index].get("id")
    return str(found) if found else f"cell-{index + 1}"


def find_cell(nb: Any, wanted: str) -> int:
    for index in range(len(nb.cells)):
        if cell_id(nb, index) == wanted:
            return index
    raise RespondToModel(no_such_cell(wanted, [cell_id(nb, i) for i in range(len(nb.cells))]))


def no_such_cell(wanted: str, ids: list[str]) -> str:
    """What the model is told when no cell has the id ``wanted``."""
    return f"no cell has id {wanted!r}; the cell ids are: {', '.join(ids) or 'none'}"


def _cut(text: str, limit: int) -> str:
    """``text`` with its middle cut when it has more than ``limit`` UTF-8 bytes."""
    return truncate_text(text, TruncationPolicy("bytes", limit))


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def image_bytes(data: Any) -> bytes | None:
    try:
        return base64.b64decode(_joined(data), validate=False)
    except (binascii.Error, ValueError):
        return None


def render_output(
    out: Any,
    cell_no: int,
    out_no: int,
    images: list[tuple[str, bytes]],
    mask: Callable[[str], str] = str,
) -> str:
    """One output as text, ``mask`` applied (the teacher's withheld answers) before it is
    cut; its images are listed and appended to ``images``."""
    kind = out.get("output_type", "?")
    if kind == "stream":
        text = _cut(mask(_joined(out.get("text", ""))), MAX_OUTPUT_BYTES)
        return f"[{kind} {out.get('name', '')}]\n{text}"
    if kind == "error":
        trace = mask(_ANSI.sub("", "\n".join(str(line) for line in out.get("traceback", []))))
        head = mask(f"{out.get('ename', '')}: {out.get('evalue', '')}")
        return f"[error] {head}\n{_cut(trace, MAX_OUTPUT_BYTES)}"
    data = out.get("data", {})
    lines = [f"[{kind}]"]
    for mime in data:
        if mime in IMAGE_TYPES:
            raw = image_bytes(data[mime])
            label = f"image {cell_no}.{out_no}"
            lines.append(f"{mime}: {label}, {len(raw or b'')} bytes")
            if raw:
                images.append((label, raw))
    text_mime = next((m for m in TEXT_TYPES if m in data), None)
    if text_mime is not None:
        lines.append(_cut(mask(_joined(data[text_mime])), MAX_OUTPUT_BYTES))
    return "\n".join(lines)


def render(
    nb: Any,
    path: Path,
    start: int,
    end: int,
    outputs: bool,
    hide: Callable[[Any], bool] | None = None,
    mask: Callable[[str], str] = str,
) -> tuple[str, list[tuple[str, bytes]]]:
    """Cells ``start..end`` (1-based, inclusive) as text, and the images of their outputs;
    a cell ``hide`` picks (a graded answer the teacher withholds) shows only its head and
    :data:`agent_magics.tools.notebook.graded.WITHHELD`, no source, no outputs, and the
    other cells' outputs go through ``mask`` (:mod:`agent_magics.tools.notebook.masking`)."""
    count = len(nb.cells)
    version = f"{nb.nbformat}.{nb.nbformat_minor}"
    language = (
        nb.metadata.get("kernelspec", {}).get("language")
        or nb.metadata.get("language_info", {}).get("name")
        or "unknown"
    )
    parts = [f"{path}: {count} cells, nbformat {version}, language {language}"]
    images: list[tuple[str, bytes]] = []
    for index in range(start - 1, min(end, count)):
        cell = nb.cells[index]
        head = f"--- cell {index + 1} · id {cell_id(nb, index)} · {cell.cell_type}"
        if hide is not None and hide(cell):
            parts += [head, WITHHELD]
            continue
        if cell.cell_type == "code":
            head += f" · execution_count {cell.get('execution_count')}"
        parts += [head, _cut(_joined(cell.source), MAX_SOURCE_BYTES)]
        if cell.cell_type == "code" and cell.get("outputs"):
            if outputs:
                for n, out in enumerate(cell.outputs, 1):
                    parts.append(render_output(out, index + 1, n, images, mask))
            else:
                parts.append(f"[{len(cell.outputs)} outputs not shown]")
    return "\n".join(parts), images


def is_own_notebook(path: Path, env: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Whether ``path`` is the notebook this kernel belongs to, as Jupyter Server names
    it in the kernel's environment (an absolute path, or one relative to the server's
    root, which then ends the real path)."""
    named = env.get(SESSION_ENV, "")
    if not named:
        return False
    target = os.path.realpath(path)
    if os.path.isabs(named):
        return target == os.path.realpath(named)
    rel = os.path.normpath(named).lstrip("/")
    return target == rel or target.endswith("/" + rel)


def dumps(nb: Any) -> bytes:
    """The notebook as nbformat writes it, validated first (ValidationError if not)."""
    nbformat = nbformat_module()
    nbformat.validate(nb)
    text: str = nbformat.writes(nb, version=nbformat.NO_CONVERT)
    return text.encode("utf-8") + b"\n"


class NotebookFiles(ConfinedFiles):
    """ConfinedFiles that can also replace a file atomically through its folder's fd."""

    def replace(self, path: str, data: bytes) -> None:
        for _ in range(8):
            fd, real, name, _ = self._parent(path)
            try:
                try:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    info = None
                if info is not None and stat.S_ISLNK(info.st_mode):
                    path = self._follow(path, fd, real, name)
                    continue
                self._check(real / name)
                mode = stat.S_IMODE(info.st_mode) if info is not None else 0o644
                _replace_in(fd, name, data, mode)
                return
            finally:
                os.close(fd)
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)


def plain_replace(path: str, data: bytes) -> None:
    """The atomic replace without confinement (danger-full-access)."""
    real = os.path.realpath(path)
    folder, name = os.path.split(real)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        mode = stat.S_IMODE(os.stat(name, dir_fd=fd).st_mode)
        _replace_in(fd, name, data, mode)
    finally:
        os.close(fd)


def _replace_in(folder_fd: int, name: str, data: bytes, mode: int) -> None:
    temp = f".{name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o600, dir_fd=folder_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder_fd)
        raise
