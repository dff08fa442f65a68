"""Writable roots of a turn, and the question "may this path be written?".

``workspace-write`` lets commands write in the working folder, ``/tmp`` and ``$TMPDIR``;
under each root, ``.git`` (a folder, or a file plus the git dir it names), ``.agents``,
``.codex`` and ``.agent_magics`` stay read-only. ``.git`` and ``.agent_magics`` of the
working folder are protected even before they exist: a command must not be able to
create a repository with hooks, or a project config that a later run trusts.
``read-only`` has no writable roots.

The places the kernel takes code from stay read-only too when they lie in a root
(:func:`kernel_code_paths`: a project's ``.venv`` that runs the kernel, the user
site-packages and ``~/.ipython`` when the working folder is the home): what is written
there runs unconfined in this process or the next kernel. One that does not exist yet
is protected from its first missing folder on, so it cannot be created. So are the
person's own files (:func:`user_paths`): ``~/.agent_magics`` (settings, the session
signing key) and the shell start-up files that exist (the shell snapshot runs them
unconfined); a missing start-up file is refused to patches by name only (see
:mod:`.user_files`). A turn may name files of its own to keep read-only
(:func:`kept_files`: the notebook the kernel runs, whose metadata holds the teacher's
policy), which its front end knows and this module does not.
"""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Sequence
from pathlib import Path

from agent_magics.apply_patch.files import ConfinedFiles
from agent_magics.protocol.approval import SandboxMode
from agent_magics.tools.sandbox.user_files import shell_start_files, user_dir

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


def unwritable(roots: Sequence[Path]) -> list[Path]:
    """Of ``roots``, those this process cannot write in, sandbox or not: on a read-only
    file system, not writable by this user, or missing."""
    return [root for root in roots if not os.access(root, os.W_OK)]


_OTHER_KERNELS: list[Path] = []


def protect_kernel(paths: Sequence[str | Path]) -> None:
    """Keep the code paths of a kernel of another environment read-only too, from now
    on: a chat's agent runs outside the notebook's kernel, which tells it where it takes
    code from (its prefixes, user site, IPython and Jupyter folders, agent_magics)."""
    for path in paths:
        found = real(Path(path))
        if found not in _OTHER_KERNELS:
            _OTHER_KERNELS.append(found)


def kernel_code_paths() -> list[Path]:
    """Where the running interpreter, IPython and Jupyter take code or settings from
    (real paths): ``sys.prefix``, ``sys.exec_prefix`` and the base ones, the user
    site-packages, the IPython folder (its startup scripts run in the next kernel),
    Jupyter's config folder and its kernel specs (the next kernel's command line).
    Computed from ``sys``, ``site`` and the environment, as the next kernel would; with
    those another kernel named (:func:`protect_kernel`)."""
    home = Path(os.path.expanduser("~"))
    env = os.environ.get
    data_home = env("XDG_DATA_HOME") or home / ".local" / "share"
    data = env("JUPYTER_DATA_DIR") or Path(data_home) / "jupyter"
    found: list[str | Path] = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    found += [
        site.getusersitepackages(),
        env("IPYTHONDIR") or home / ".ipython",
        env("JUPYTER_CONFIG_DIR") or home / ".jupyter",
        Path(data) / "kernels",
    ]
    own = (real(Path(p).expanduser()) for p in found if p)
    return list(dict.fromkeys([*own, *_OTHER_KERNELS]))


def user_paths() -> list[Path]:
    """The person's files that run or decide things unconfined (real paths): their
    ``~/.agent_magics`` folder, and the shell start-up files that exist (a missing one
    gets no mount point: see :func:`start_file_names`)."""
    found = [user_dir(), *(p for p in shell_start_files() if p.exists())]
    return list(dict.fromkeys(real(p) for p in found))


def start_file_names(root: Path) -> list[Path]:
    """The shell start-up files in ``root``, existing or not, by name (the folder's real
    path, the file's own name: a link there is refused as itself)."""
    named = [real(p.parent) / p.name for p in shell_start_files()]
    return [p for p in named if root in p.parents]


def kernel_guards(root: Path) -> list[Path]:
    """The kernel's code paths and the person's files (:func:`user_paths`) in ``root``
    (or ``root`` itself), each cut at its first missing folder: nothing can be created
    beneath it."""
    out: list[Path] = []
    for path in dict.fromkeys([*kernel_code_paths(), *user_paths()]):
        if path != root and root not in path.parents:
            continue
        guard = root
        for part in path.relative_to(root).parts:
            guard = guard / part
            if not os.path.lexists(guard):
                break
        out.append(guard)
    return out


def read_only_subpaths(root: Path) -> list[Path]:
    """The protected parts of ``root``: those of ``PROTECTED_NAMES`` that exist (with a
    ``.git`` file's git dir) and :func:`kernel_guards`."""
    out: list[Path] = kernel_guards(root)
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
    return list(dict.fromkeys(out))


def guarded_paths(root: Path) -> list[Path]:
    """The protected paths of a working folder: those of :func:`read_only_subpaths`, plus
    each of ``GUARDED_NAMES`` that does not exist yet."""
    found = read_only_subpaths(root)
    missing = [root / name for name in GUARDED_NAMES if not os.path.lexists(root / name)]
    return [*found, *missing]


def kept_files(paths: Sequence[Path], roots: Sequence[Path]) -> list[Path]:
    """Of ``paths`` (a turn's read-only files, see ``TurnContext.read_only_paths``), the
    real paths of those that exist inside a root: a missing one is not protected (a
    mount point in its place would be a folder where the editor saves a file)."""
    out: list[Path] = []
    for path in paths:
        try:
            target = real(path)
            if target.is_file() and any(r == target or r in target.parents for r in roots):
                out.append(target)
        except (OSError, ValueError):
            continue
    return list(dict.fromkeys(out))


def is_writable(path: Path, roots: list[Path], kept: Sequence[Path] = ()) -> bool:
    """Whether ``path`` (absolute) lies inside a root and outside its protected parts
    and the files ``kept`` (see :func:`kept_files`).

    A path that changes while it is resolved (a symlink removed mid-way) is not writable.
    """
    try:
        target = real(path)
        if any(target == p for p in kept_files(kept, roots)):
            return False
        for root in roots:
            if target == root or root in target.parents:
                protected = [*read_only_subpaths(root), *(root / n for n in GUARDED_NAMES)]
                protected += start_file_names(root)
                return not any(target == p or p in target.parents for p in protected)
    except (OSError, ValueError):
        return False
    return False


def write_denied(path: Path) -> str:
    """The line a write the confinement refuses reports, as Codex's confined apply_patch
    prints it (Rust's text for ``EPERM``)."""
    return f"Failed to write file {path}: Operation not permitted (os error 1)\n"


def confined_files(roots: list[Path], kept: Sequence[Path] = ()) -> ConfinedFiles:
    """File operations that stay in ``roots`` and out of their protected folders and the
    files ``kept`` (see :func:`kept_files`), even when a path is swapped for a symlink
    while the patch is written."""
    read_only: list[Path] = kept_files(kept, roots)
    for root in roots:
        read_only += [root / name for name in GUARDED_NAMES]  # as is_writable has them
        read_only += start_file_names(root)
        try:
            read_only += [real(path) for path in read_only_subpaths(root)]
        except (OSError, ValueError):
            read_only += [root / name for name in PROTECTED_NAMES]
    return ConfinedFiles(tuple(roots), tuple(read_only))
