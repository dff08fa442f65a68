"""Files that would shadow a module Python imports, left where the next kernel looks first.

Jupyter starts a kernel as ``python -m ipykernel_launcher`` in the notebook's folder, and
``-m`` puts that folder first on ``sys.path``: an ``ipykernel_launcher.py`` there is what
runs, and the launcher imports ``pathlib`` before it takes the folder off the path. IPython
then puts the folder back, ahead of site-packages, and any Python started in the folder
(``python -c``, a script there) imports from it before anything else. So a ``pathlib.py``
or a ``numpy/__init__.py`` the model leaves in the working folder runs at the person's
next kernel start or import: unsandboxed, with the API key in reach. (Codex keeps
``.git`` read-only for the same reason: its hooks run later, unsandboxed.)

So writing such a file counts as a write outside the writable roots: apply_patch asks
a person, showing :func:`shadow_reason`, and refuses under ``never``. A command can still
create one under bubblewrap (Landlock cannot create top-level entries, but it can write
into an existing folder), so the turn's end says which ones a turn left
(:func:`planted_warning`).

The names that count (:func:`module_names`): the standard library's, the top-level names
of the modules this interpreter has loaded, except those loaded from the folder itself
(the person's own ``utils.py``, which the agent edits as a matter of course), and
``ipykernel_launcher``, ``sitecustomize`` and ``usercustomize``.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Collection, Iterable
from pathlib import Path

from agent_magics.text.visible import visible

EXTRA_NAMES = frozenset({"ipykernel_launcher", "sitecustomize", "usercustomize"})
"""Modules Python or Jupyter import by name at start-up, beside the standard library's."""
SUFFIXES = tuple(importlib.machinery.all_suffixes())
"""What a module's file name may end with: ``.py``, ``.pyc``, the extension suffixes."""
INITS = frozenset("__init__" + suffix for suffix in SUFFIXES)
NAMED = 3
"""Files (and modules) a refusal names; more are counted."""


def module_names(folder: Path | None = None) -> frozenset[str]:
    """The module names a file in ``folder`` must not take (see the module's docstring):
    a top-level module found in ``folder`` (a real path) is the person's own."""
    fixed = frozenset(sys.stdlib_module_names) | EXTRA_NAMES
    loaded = {name.partition(".")[0] for name in list(sys.modules)} - fixed
    if folder is not None:
        loaded = {name for name in loaded if not _found_in(sys.modules.get(name), folder)}
    return fixed | loaded


def _found_in(module: object, folder: Path) -> bool:
    """Whether ``module`` (a top-level one) was found in ``folder`` as a ``sys.path``
    entry: its file is ``folder/name.py`` or ``folder/name/__init__.py``, or for a
    namespace package one of its folders is ``folder/name``."""
    where = getattr(module, "__file__", None)
    if isinstance(where, str):
        places, depth = [where], 1
    else:
        places, depth = list(getattr(module, "__path__", None) or ()), 0
    for place in places:
        try:
            real = Path(os.path.realpath(place))
        except (OSError, ValueError):
            continue
        if real.parent == folder or (depth and real.name in INITS and real.parent.parent == folder):
            return True
    return False


def shadowed_module(path: Path, folder: Path, names: Collection[str]) -> str | None:
    """The module of ``names`` that a file at ``path`` would shadow when ``folder`` is
    first on ``sys.path`` (``None``: none). Pure: both paths are taken as they are.

    ``folder/json.py`` (or ``.pyc``, ``.so``...) shadows ``json``; so does
    ``folder/json/__init__.py``; ``folder/json/decoder.py`` alone does not (a folder
    without ``__init__`` is a namespace portion, which a real module found later wins
    over), nor does anything deeper.
    """
    if path.parent == folder:
        return next((m for m in _stems(path.name) if m in names), None)
    if path.parent.parent == folder and path.name in INITS and path.parent.name in names:
        return path.parent.name
    return None


def _stems(filename: str) -> list[str]:
    return [
        filename[: -len(s)] for s in SUFFIXES if filename.endswith(s) and len(filename) > len(s)
    ]


def kernel_folder() -> list[Path]:
    """The kernel's own current folder (none when it was removed): Python started
    there, a kernel too when Jupyter runs it from the notebook's folder, looks there
    first."""
    try:
        return [Path(os.getcwd())]
    except OSError:
        return []


def shadowing(paths: Iterable[Path], folders: Iterable[Path]) -> list[tuple[Path, str]]:
    """Each of ``paths`` that would shadow a module in one of ``folders``, with the module.

    A path is looked at twice: with its folder's links resolved and its own name kept
    (the name Python looks up), and fully resolved (a link to a shadowing file writes
    it)."""
    found: dict[Path, str] = {}
    places = list(dict.fromkeys(Path(os.path.realpath(f)) for f in folders))
    names = {folder: module_names(folder) for folder in places}
    for path in paths:
        try:
            seen = [Path(os.path.realpath(path.parent)) / path.name, Path(os.path.realpath(path))]
        except (OSError, ValueError):
            continue
        for candidate in seen:
            for folder in places:
                module = shadowed_module(candidate, folder, names[folder])
                if module is not None:
                    found.setdefault(path, module)
    return list(found.items())


def shadow_reason(found: list[tuple[Path, str]]) -> str:
    """One sentence for a person and the model: which files shadow which modules, and why
    that matters."""
    files = _listed([f"'{visible(shown_name(path))}'" for path, _ in found], "files")
    modules = _listed([f"'{module}'" for _, module in found], "")
    it = "them" if len(found) > 1 else "it"
    kind = "modules" if len(found) > 1 else "module"
    return (
        f"{files} would shadow Python's {modules} {kind}: the next kernel started in this "
        f"folder, and any Python started there, would run {it} outside the sandbox"
    )


def shown_name(path: Path) -> str:
    """A shadowing file as it sits in its folder: ``json.py``, ``json/__init__.py``."""
    return f"{path.parent.name}/{path.name}" if path.name in INITS else path.name


def planted_warning(shown: str, module: str, undoable: bool = True) -> str:
    """The transcript's line about a file a turn left that shadows ``module``
    (``undoable``: ``%agent undo`` takes it back)."""
    undo = "%agent undo removes it" if undoable else "remove it before starting one"
    return (
        f"'{visible(shown)}' in the working folder now shadows Python's '{module}' module: "
        "the next kernel started in this folder, and any Python started there, would run "
        f"it, outside the sandbox; {undo}."
    )


Stamp = tuple[int, int, int, int]  # inode, size, mtime_ns, mode


def planted_files(folder: Path) -> dict[Path, tuple[str, Stamp]]:
    """The files directly in ``folder`` (links included) that shadow a module, and the
    package ``__init__`` files of its folders named like one: each with the module and
    its ``lstat`` stamp, to tell at a turn's end which ones came or changed."""
    names = module_names(folder)
    found: dict[Path, tuple[str, Stamp]] = {}
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return found
    for entry in entries:
        module = next((m for m in _stems(entry.name) if m in names), None)
        if module is not None:
            candidates = [Path(entry.path)]
        elif entry.name in names:
            module, candidates = entry.name, [Path(entry.path) / i for i in sorted(INITS)]
        else:
            continue
        for path in candidates:
            try:
                info = os.lstat(path)
            except OSError:
                continue
            found[path] = (module, (info.st_ino, info.st_size, info.st_mtime_ns, info.st_mode))
    return found


def _listed(items: list[str], what: str) -> str:
    """``'a'``, ``'a' and 'b'``, ... and past :data:`NAMED` items ``'a', 'b', 'c' and 4
    more (files)``."""
    if len(items) > NAMED:
        return ", ".join(items[:NAMED]) + f" and {len(items) - NAMED} more {what}".rstrip()
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
