"""Sandboxes: how a command is confined to the writable roots and cut from the network.

A :class:`SandboxSpec` turns an argv into a confined argv. ``NO_SANDBOX`` runs it as is.
:func:`platform_sandbox` answers which mechanism this machine offers for a turn, or
``None`` when none works (the orchestrator then fails closed and asks).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SandboxKind = Literal["none", "bwrap", "landlock", "seatbelt", "path_check"]
"""``path_check``: writes done in-process after checking each path (apply_patch)."""


@dataclass(frozen=True)
class SandboxSpec:
    """One way of running a command: unconfined, or confined by a mechanism."""

    kind: SandboxKind
    writable_roots: tuple[Path, ...] = ()
    read_only_subpaths: tuple[Path, ...] = ()
    network: bool = True
    hidden: tuple[Path, ...] = ()
    """Folders (or files, existing or not) whose contents commands must not read:
    Jupyter's runtime folder, the session signing key (see ``sandbox/jupyter.py`` and
    ``sandbox/user_files.py``; Landlock leaves a few readable: ``landlock.hideable``)."""
    unwritable: tuple[Path, ...] = ()
    """Writable roots this machine itself keeps read-only (a read-only checkout, a folder
    this user may not write, one that does not exist): they stay so, and a write there
    fails as it would with no sandbox, so a command that fails is answered as it ran,
    not as a sandbox denial (see ``roots.unwritable``)."""

    @property
    def confined(self) -> bool:
        return self.kind != "none"

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The argv to spawn so that ``argv`` runs under this sandbox."""
        if self.kind in ("none", "path_check"):
            return list(argv)
        wrapper = WRAPPERS.get(self.kind)
        if wrapper is None:
            raise RuntimeError(f"no {self.kind} sandbox is available in this process")
        return wrapper(self, list(argv))


NO_SANDBOX = SandboxSpec("none")

WRAPPERS: dict[str, Callable[[SandboxSpec, list[str]], list[str]]] = {}
"""Mechanisms register here how they confine an argv (see ``platform.py``)."""
