"""Writable roots of a turn, and the question "may this path be written?".

``workspace-write`` lets commands write in the working folder, ``/tmp`` and ``$TMPDIR``;
under each root, ``.git`` (a folder, or a file plus the git dir it names), ``.agents``,
``.codex`` and ``.agent_magics`` stay read-only. ``.git`` and ``.agent_magics`` of the
working folder are protected even before they exist: a command must not be able to
create a repository with hooks, or a project config that a later run trusts.
``read-only`` has no writable roots.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent_magics.apply_patch.files import ConfinedFiles
from agent_magics.tools.approval import SandboxMode

PROTECTED_NAMES = (".git", ".agents", ".codex", ".agent_magics")
GUARDED_NAMES = (".git", ".agent_magics")
"""Protected in the working folder also while missing (the sandbox keeps them uncreatable)."""


def real(path: Path) -> Path:
    """``path`` with symlinks resolved, also when its last parts do not exist yet."""
    return Path(os.path.realpath(path))


def writable_roots(cwd: Path, mode: SandboxMode, extra: tuple[Path, ...] = ()) -> list[Path]:
    if mode is not SandboxMode.WORKSPACE_WRITE:
        return []
    roots = [cwd, *extra]
    if Path("/tmp").is_dir():
        roots.append(Path("/tmp"))
    tmpdir = os.environ.get("TMPDIR")
    if tmpdir and Path(tmpdir).is_dir():
        roots.append(Path(tmpdir))
    unique: dict[Path, None] = {}
    for root in roots:
        unique[real(root)] = None
    return list(unique)


def read_only_subpaths(root: Path) -> list[Path]:
    out: list[Path] = []
    for name in PROTECTED_NAMES:
        path = root / name
        if path.is_dir():
            out.append(path)
        elif name == ".git" and path.is_file():
            out.append(path)
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                target = Path(text.removeprefix("gitdir:").strip())
                out.append(real(target if target.is_absolute() else root / target))
    return out


def guarded_paths(root: Path) -> list[Path]:
    """The protected paths of a working folder: those of :func:`read_only_subpaths`, plus
    each of ``GUARDED_NAMES`` that does not exist yet."""
    found = read_only_subpaths(root)
    missing = [root / name for name in GUARDED_NAMES if not os.path.lexists(root / name)]
    return [*found, *missing]


def is_writable(path: Path, roots: list[Path]) -> bool:
    """Whether ``path`` (absolute) lies inside a root and outside its protected parts.

    A path that changes while it is resolved (a symlink removed mid-way) is not writable.
    """
    try:
        target = real(path)
        for root in roots:
            if target == root or root in target.parents:
                protected = [*read_only_subpaths(root), *(root / n for n in GUARDED_NAMES)]
                return not any(target == p or p in target.parents for p in protected)
    except (OSError, ValueError):
        return False
    return False


def confined_files(roots: list[Path]) -> ConfinedFiles:
    """File operations that stay in ``roots`` and out of their protected folders, even
    when a path is swapped for a symlink while the patch is written."""
    read_only: list[Path] = []
    for root in roots:
        read_only += [root / name for name in GUARDED_NAMES]  # as is_writable has them
        try:
            read_only += [real(path) for path in read_only_subpaths(root)]
        except (OSError, ValueError):
            read_only += [root / name for name in PROTECTED_NAMES]
    return ConfinedFiles(tuple(roots), tuple(read_only))
