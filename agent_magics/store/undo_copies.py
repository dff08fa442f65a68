"""The originals of a turn's files, copied to ``<undo folder>/turn-<N>/`` (mode 0700), so
a person can restore by hand after a crash. Undo itself never reads them (a copy on
disk could have been planted), and a file holding one of the session's secrets is not
copied at all.

The undo folder sits in the sessions folder, where a symlink can be planted in place of
``<id>.undo`` or ``turn-<N>``: every folder and file here is made and opened through its
parent's descriptor without following one (:mod:`.folder`), so a planted link makes the
copy fail instead of making or chmodding anything where it points.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_magics.store.diff import FileState
from agent_magics.store.folder import folder_chain, replace_file, write_new

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Original:
    """A file the turn changed as the manifest names it: its path, how it changed
    (``added``, ``modified``, ``deleted``) and its state at the turn's start (``None``:
    not kept)."""

    path: Path
    status: str
    before: FileState | None


@dataclass(frozen=True)
class UndoCopies:
    """Where the originals of turn ``turn`` go: ``folder`` is ``<sessions>/<id>.undo``
    (None: memory only)."""

    folder: Path | None
    turn: int
    redact: Callable[[str], str] = str

    def keep(self, state: FileState | None) -> None:
        """Copy one original (a file's content, named by its digest). Never raises."""
        if state is None or state.data is None:
            return
        text = state.data.decode("utf-8", errors="replace")
        if self.redact(text) != text:
            return  # holds a secret of the session: memory only
        self._write(f"{state.digest}.orig", state.data, new=True)

    def manifest(self, originals: Sequence[Original]) -> None:
        """Say which original belongs to which path (rewritten at the turn's end)."""
        if not originals:
            return
        entries = [
            {
                "path": str(o.path),
                "status": o.status,
                "original": None if o.before is None else o.before.digest,
                "mode": None if o.before is None else oct(o.before.mode),
            }
            for o in originals
        ]
        body = json.dumps({"turn": self.turn, "files": entries}, indent=1) + "\n"
        self._write(MANIFEST, body.encode(), new=False)

    def _write(self, name: str, data: bytes, *, new: bool) -> None:
        if self.folder is None:
            return
        try:
            with folder_chain(self.folder.parent, [self.folder.name, f"turn-{self.turn}"]) as fd:
                if new:
                    write_new(fd, name, data)
                else:
                    replace_file(fd, name, data)
        except (OSError, ValueError):
            return  # there already (the same content), or a folder on the way is unusable
