"""Whether a command that reads only could still run something the model wrote.

A command is known-safe by the name of its program, but the program a name runs, the
repository ``git`` opens and the files a login shell reads are looked up on disk. When
any of them lies where the model's commands may write (a writable root, outside its
protected parts), the model could have put code there, and the command must not run
unasked, least of all outside the sandbox. The shell's start-up files are the
exception: when they lie in a writable root, commands run in a shell that reads none of
them (:func:`shell_startup_is_trusted`), so they never decide whether a command asks.
The caller passes the command's working folder and the writable roots as plain values;
these helpers only look at the disk.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from agent_magics.tools.sandbox import python_env
from agent_magics.tools.sandbox.roots import is_writable, read_only_subpaths
from agent_magics.tools.sandbox.user_files import shell_start_files

# A folder git takes for a repository of its own (a bare one) when it holds these.
_GIT_DIR_MARKERS = ("HEAD", "objects", "refs")


def program_is_trusted(name: str, cwd: Path | None, roots: Sequence[Path]) -> bool:
    """Whether the program ``name`` names lies outside every writable root.

    A name with a slash is a path (relative to ``cwd``); a bare name is looked up on
    ``PATH`` as the command will be. A name that resolves nowhere is trusted: running
    it fails. Both the path as written and its real path must be outside the roots.
    """
    if not roots:  # nothing counts as model-written; a relative path needs a folder
        return cwd is not None or "/" not in name or name.startswith("/")
    if "/" in name:
        if cwd is None and not name.startswith("/"):
            return False
        path = Path(name) if name.startswith("/") else Path(cwd or "/") / name
    else:
        found = _on_path(name, cwd)
        if found is None:
            return True
        if not found.is_absolute():
            return False  # a relative PATH entry, and the folder is unknown (after `cd`)
        path = found
    return not _model_writable(path, roots)


def git_is_trusted(cwd: Path | None, roots: Sequence[Path]) -> bool:
    """Whether the repository git would open from ``cwd``, and the person's git config,
    lie outside every writable root (git runs hooks, ``core.fsmonitor`` and pagers
    named in them)."""
    if not roots:
        return True
    if cwd is None:
        return False
    home = _home()
    configs = [home / ".gitconfig", home / ".config" / "git" / "config"]
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        configs.append(Path(xdg) / "git" / "config")
    if any(_model_writable(p, roots) for p in configs):
        return False
    for folder in (cwd, *cwd.parents):
        dot_git = folder / ".git"
        if os.path.lexists(dot_git):
            return not _model_writable(dot_git, roots)
        if all(os.path.lexists(folder / m) for m in _GIT_DIR_MARKERS):
            return not _model_writable(folder / "HEAD", roots)
    return True


def shell_startup_is_trusted(roots: Sequence[Path]) -> bool:
    """Whether every start-up file a shell may read from the home (or ``ZDOTDIR``) lies
    outside every writable root, by its path as spelled and by its real path. One inside
    a root is not trusted even where the sandbox keeps it read-only: the repository may
    have shipped it (on Binder the repository is the home). Commands then run in a shell
    that reads none of them
    (:func:`agent_magics.tools.unified_exec.command_line.no_startup_argv`)."""
    if not roots:
        return True
    for path in shell_start_files():
        for spelled in (Path(os.path.normpath(path)), Path(os.path.realpath(path))):
            if any(spelled == root or root in spelled.parents for root in roots):
                return False
    return True


def _model_writable(path: Path, roots: Sequence[Path]) -> bool:
    """Whether the model may write ``path``: by its real path, or as spelled
    (``/tmp/link/ls`` is under ``/tmp`` even when ``link`` points elsewhere, since the
    model can re-point the link). Protected parts of a root are not writable."""
    if not roots:
        return False
    real_roots = list(roots)
    lexical = Path(os.path.normpath(path))
    if is_writable(path, real_roots):
        return True
    for root in real_roots:
        if lexical == root or root in lexical.parents:
            protected = read_only_subpaths(root)
            return not any(lexical == p or p in lexical.parents for p in protected)
    return False


def _on_path(name: str, cwd: Path | None) -> Path | None:
    """Where ``PATH`` finds ``name`` from ``cwd``; a relative path when a relative entry
    comes first and ``cwd`` is unknown. The agent's Python environment comes first, as
    on every command's ``PATH`` (:func:`python_env.pin`)."""
    entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
    for entry in [*python_env.bin_folders(), *entries]:
        folder = Path(entry or ".")
        if not folder.is_absolute():
            if cwd is None:
                return folder / name
            folder = cwd / folder
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def _home() -> Path:
    return Path(os.environ.get("HOME") or os.path.expanduser("~"))
